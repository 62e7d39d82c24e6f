"""The Mandarin voice next to the English voice, in one process, as the daemon runs them.

    python -m bench.mandarin [--rounds 5] [--voice DIR] [--quick] [--zh-first-chunk 16]
        [--e2e | --e2e-only] [--e2e-rounds 3] [--out results.json] [--json]

Issue 11 (the Mandarin voice). Both voices live in this process the way the daemon holds
them: `share_runtime()` first (one onnxruntime arena for every session),
each voice loaded and warmed up as edge_tts/daemon/app.py's `preload` does
(`warm_up(concurrent=synthesis.max_concurrent)`), every text planned as the router plans a
one-script text (`prepare` with the synthesis defaults: first chunk of at most
`first_chunk_chars`) and each chunk rendered by edge_tts/speech/synthesis.py's `render()` at the
output rate (22,050 Hz: the Mandarin voice's 24 kHz goes through the soxr resampler), the
first chunk with the short first decoder/vocoder window (FIRST_WINDOW_FRAMES).

Interleaved: every round speaks every text of both voices, alternating Mandarin and
English sentence by sentence; the order of the texts and which voice goes first rotate
every round, so background load on the shared cores hits both alike.

Measured per text: TTFA = `render()` of the first chunk called -> its first piece
(int16 at 22,050 Hz) ready, and from the text (`prepare` included); synthesis time of all
chunks; process CPU time (onnxruntime's pool included; its workers do not spin, as in the
daemon); audio seconds. RTF = synthesis time / audio time (sums per class). Then where the
Mandarin TTFA goes (pinyin, acoustic model, first vocoder window) in a short extra pass.

RSS (MB = 10^6 bytes, /proc/self/status): English alone in a separate subprocess (loaded,
warmed up, every English text spoken once: steady), and in this process step by step:
English loaded and warmed up (before anything Mandarin), pypinyin's dictionaries loaded,
the Mandarin sessions loaded, both warmed up, after the runs (steady).

`--zh-first-chunk N`: the Mandarin voice once more beside the two, on the long texts, with
its first chunk cut at N characters instead of the daemon's `first_chunk_chars` (what a
shorter first chunk for Mandarin would do to TTFA and RTF).

`--e2e` (`--e2e-only`: nothing else): one figure through the real daemon (Mosquitto +
`python -m edge_tts run`, wav-dir sink, config `voices: {default: {}, mandarin: {path:
DIR}}`, the phrase cache off): requests one at a time, Mandarin and English alternating
(a first round unmeasured), TTFA from the `finished` events' `time_to_first_audio_ms`
(message received -> first sample written), and the daemon's RSS; then a daemon with the
English voice alone for its RSS.

Targets on the development machine: Mandarin RTF <= 0.1, Mandarin TTFA p50 <= 100 ms for a
short and a long sentence (independent of length), steady RSS with both voices <= 280 MB.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from bench import workers
from bench.daemon_rig import Rig, Tracker, daemon_run, record_events
from bench.procmem import own_rss_mb
from bench.report_io import (
    add_output_options,
    fields,
    log,
    machine_info,
    machine_line,
    percentile,
    print_targets,
    run_and_emit,
    table,
    target,
)
from bench.zh_quant import BY_NAME, DEFAULT_VOICE_DIR, open_pipeline
from tests.support.broker import Recorder

OUTPUT_RATE = 22050  # the daemon's output rate: the English voice's

# Announcement-like texts (vehicle, home). Short: ~8 characters; long: 60-90 characters,
# with numbers, no Latin letters (the router would give those to the English voice).
ZH_SHORT = ("前方路口请左转。", "车门即将关闭，请注意安全。", "请系好安全带。", "客厅灯已关闭。")
ZH_LONG = (
    "各位乘客请注意，开往上海虹桥的列车将于15点30分在3号站台发车，"
    "请携带好您的行李，提前到站台候车，不要越过黄色安全线，谢谢合作。",
    "前方500米进入隧道，请打开车灯，保持车距，限速80公里每小时，"
    "隧道全长2.3公里，请勿变道，请勿停车，出隧道后请靠右行驶，注意行车安全。",
    "今天室外温度最高28度，最低19度，空气质量良好，下午3点以后可能有小雨，"
    "出门请记得带伞，客厅空调已设定为26度，卧室窗户还开着。",
    "您的车辆电量剩余15%，预计还可以行驶62公里，距离最近的充电站还有4.5公里，"
    "建议您在下一个路口右转前往充电，预计需要充电40分钟。",
)
# The same announcements in English (longer in characters: an alphabet, not a syllabary).
EN_SHORT = (
    "Turn left at the next junction.",
    "The doors are closing, please stand clear.",
    "Fasten your seat belt.",
    "Living room lights off.",
)
EN_LONG = (
    "Attention please: the train to Shanghai Hongqiao departs from platform 3 at 3:30 PM. "
    "Please take your luggage, wait on the platform, stay behind the yellow line, and "
    "thank you.",
    "Tunnel in 500 meters: turn on your headlights and keep your distance. The speed limit "
    "is 80 kilometers per hour and the tunnel is 2.3 kilometers long. Do not change lanes.",
    "Today the high is 28 degrees and the low 19, with good air quality. Light rain is "
    "likely after 3 PM, so take an umbrella. The living room is set to 26 degrees.",
    "Battery at 15 percent: about 62 kilometers of range left. The nearest charging station "
    "is 4.5 kilometers away; turn right at the next junction. Charging takes about 40 "
    "minutes.",
)
TEXTS: dict[tuple[str, str], tuple[str, ...]] = {
    ("zh", "short"): ZH_SHORT,
    ("zh", "long"): ZH_LONG,
    ("en", "short"): EN_SHORT,
    ("en", "long"): EN_LONG,
}
E2E_TIMEOUT_S = 900.0  # one request, on a machine at load 18: a long one took > 300 s
QUICK_TEXTS = 2  # --quick: the first two texts of each class, one round

# Targets (issue 11), for the Mandarin voice on this machine.
ZH_RTF_MAX = 0.1
ZH_TTFA_P50_MAX_MS = 100.0
BOTH_RSS_MAX_MB = 280.0


# --- the voices, as the daemon holds them --------------------------------------------------


@dataclass
class Speaker:
    """One voice with the settings and options the daemon would give it."""

    key: str
    voice: Any  # edge_tts.voice.base.SpeechVoice
    options: Any  # edge_tts.voice.base.SpeechOptions
    load_s: float = 0.0
    warm_s: float = 0.0
    first_chunk_chars: int | None = None  # None: the daemon's (synthesis.first_chunk_chars)


def synthesis_settings() -> Any:
    from edge_tts.config import SynthesisSettings

    return SynthesisSettings()  # the config's defaults: what the daemon runs without a config


def open_speaker(key: str, voice_dir: Path, steps: dict[str, float] | None = None) -> Speaker:
    """The English voice (our INT8 build, `files.default_voice()`) or the Mandarin one,
    built as edge_tts/voice/registry.py's `open_voice` does, loaded and warmed up as
    edge_tts/daemon/app.py's `preload` does. `steps`: RSS after each step, by name (the Mandarin
    voice's pinyin dictionaries first: its warm_up would load them anyway)."""
    from edge_tts.voice import files
    from edge_tts.voice.base import SpeechOptions
    from edge_tts.voice.model import Voice
    from edge_tts.voice.two_stage import TwoStageVoice

    settings = synthesis_settings()
    voice: Any
    if key == "zh":
        voice = TwoStageVoice(voice_dir, None, settings.threads, settings.max_phonemes)
    else:
        voice = Voice(files.default_voice(), None, settings.threads, settings.max_phonemes)
    steps = {} if steps is None else steps
    t0 = time.perf_counter()
    if key == "zh":
        from edge_tts.text.mandarin import pinyin

        pinyin.load()
        steps[f"{key}_pinyin_loaded"] = round(own_rss_mb(), 1)
    voice.load()
    load_s = time.perf_counter() - t0
    steps[f"{key}_loaded"] = round(own_rss_mb(), 1)
    t0 = time.perf_counter()
    voice.warm_up(concurrent=settings.max_concurrent)
    warm_s = time.perf_counter() - t0
    steps[f"{key}_warm"] = round(own_rss_mb(), 1)
    # As Voices.options_for with an empty voice entry and a request without speed/volume.
    options = SpeechOptions(speaker=None, length_scale=voice.length_scale, volume=1.0)
    return Speaker(key, voice, options, load_s, warm_s)


@dataclass
class Sample:
    voice: str
    length: str
    text: int  # index in its class
    round: int
    chars: int
    chunks: int
    first_chunk_chars: int
    plan_ms: float
    ttfa_ms: float  # render() of the first chunk -> its first piece
    ttfa_text_ms: float  # text in (prepare) -> first piece
    synth_s: float
    cpu_s: float
    audio_s: float


def speak(speaker: Speaker, text: str) -> dict[str, float]:
    """One text as the daemon's pipeline speaks it: planned, then every chunk rendered."""
    from edge_tts.speech.synthesis import render
    from edge_tts.text import prepare

    settings = synthesis_settings()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    chunks = prepare(
        text,
        language=speaker.voice.language,
        max_chunk_chars=settings.max_chunk_chars,
        first_chunk_chars=speaker.first_chunk_chars or settings.first_chunk_chars,
    )
    planned = time.perf_counter()
    ttfa = ttfa_text = None
    samples = 0
    for index, chunk in enumerate(chunks):
        started = time.perf_counter()
        for pcm in render(speaker.voice, chunk, speaker.options, index == 0, OUTPUT_RATE):
            if ttfa is None:
                now = time.perf_counter()
                ttfa, ttfa_text = now - started, now - t0
            samples += len(pcm)
    total = time.perf_counter() - t0
    assert ttfa is not None and ttfa_text is not None, f"no audio for {text!r}"
    return {
        "chunks": len(chunks),
        "first_chunk_chars": len(chunks[0]),
        "plan_ms": (planned - t0) * 1000,
        "ttfa_ms": ttfa * 1000,
        "ttfa_text_ms": ttfa_text * 1000,
        "synth_s": total,
        "cpu_s": time.process_time() - cpu0,
        "audio_s": samples / OUTPUT_RATE,
    }


def schedule(
    rounds: int, per_class: int, extra: Sequence[str] = ()
) -> Iterator[tuple[int, str, str, int]]:
    """(round, voice, length, text index): Mandarin and English alternate item by item;
    the order rotates each round and which voice goes first rotates too. `extra`: more
    speakers (another first chunk for the Mandarin voice) beside them, long texts only."""
    pairs = [
        (length, index) for index in range(per_class) for length in ("short", "long")
    ]  # short 0, long 0, short 1, ...
    for round_ in range(rounds):
        shift = round_ % len(pairs)
        for length, index in pairs[shift:] + pairs[:shift]:
            voices = ("zh", "en", *extra) if length == "long" else ("zh", "en")
            turn = round_ % len(voices)
            for voice in voices[turn:] + voices[:turn]:
                yield round_, voice, length, index


def breakdown(
    speaker: Speaker, voice_dir: Path, texts: Sequence[str], reps: int
) -> list[dict[str, Any]]:
    """Where the Mandarin TTFA goes, per first chunk: pinyin + ids, the acoustic model on
    the whole chunk, the first vocoder window (FIRST_WINDOW_FRAMES + context). The two
    stages are the voice's files in sessions of their own (bench.zh_quant's, with the
    daemon's session options), so each is timed apart."""
    from edge_tts.text import prepare
    from edge_tts.voice.windowed import FIRST_WINDOW_FRAMES

    settings = synthesis_settings()
    voice = speaker.voice
    stages = open_pipeline(BY_NAME["a-ref"], voice_dir, voice_dir)
    rows = []
    for text in texts:
        chunk = prepare(
            text,
            language=voice.language,
            max_chunk_chars=settings.max_chunk_chars,
            first_chunk_chars=settings.first_chunk_chars,
        )[0]
        ids_ms, acoustic_ms, window_ms = [], [], []
        frames = symbols = 0
        for _ in range(reps):
            t0 = time.perf_counter()
            ids = voice.ids(chunk)[0]
            t1 = time.perf_counter()
            mel = stages.acoustic.run([stages.mel_output], stages.feeds(ids))[0]
            t2 = time.perf_counter()
            stages.vocoder.window(mel, 0, min(FIRST_WINDOW_FRAMES, mel.shape[1]))
            t3 = time.perf_counter()
            ids_ms.append((t1 - t0) * 1000)
            acoustic_ms.append((t2 - t1) * 1000)
            window_ms.append((t3 - t2) * 1000)
            frames, symbols = int(mel.shape[1]), len(ids)
        rows.append(
            {
                "first_chunk_chars": len(chunk),
                "symbols": symbols,
                "mel_frames": frames,
                "ids_ms": round(statistics.median(ids_ms), 1),
                "acoustic_ms": round(statistics.median(acoustic_ms), 1),
                "first_window_ms": round(statistics.median(window_ms), 1),
            }
        )
    return rows


def summarize(samples: Sequence[Sample]) -> dict[str, Any]:
    synth = sum(s.synth_s for s in samples)
    audio = sum(s.audio_s for s in samples)
    ttfa = [s.ttfa_ms for s in samples]
    ttfa_text = [s.ttfa_text_ms for s in samples]
    return {
        "n": len(samples),
        "chars_mean": round(statistics.fmean(s.chars for s in samples), 1),
        "first_chunk_chars_mean": round(statistics.fmean(s.first_chunk_chars for s in samples), 1),
        "audio_s_mean": round(audio / len(samples), 2),
        "ttfa_p50_ms": round(percentile(ttfa, 50), 1),
        "ttfa_p95_ms": round(percentile(ttfa, 95), 1),
        "ttfa_text_p50_ms": round(percentile(ttfa_text, 50), 1),
        "rtf": round(synth / audio, 4),
        "cpu_s_per_audio_s": round(sum(s.cpu_s for s in samples) / audio, 4),
    }


def in_process(args: argparse.Namespace) -> dict[str, Any]:
    from edge_tts.voice.model import share_runtime

    per_class = QUICK_TEXTS if args.quick else len(ZH_SHORT)
    rounds = 1 if args.quick else args.rounds
    rss: dict[str, float] = {"start": round(own_rss_mb(), 1)}
    share_runtime()  # as the daemon, before any session
    log("loading and warming up the English voice")
    speakers = {"en": open_speaker("en", args.voice, rss)}
    rss["english_warm"] = round(own_rss_mb(), 1)
    log("loading and warming up the Mandarin voice")
    speakers["zh"] = open_speaker("zh", args.voice, rss)
    rss["both_warm"] = round(own_rss_mb(), 1)
    extra = []
    if args.zh_first_chunk:  # the same voice, its first chunk cut shorter
        key = f"zh-fc{args.zh_first_chunk}"
        speakers[key] = replace(speakers["zh"], key=key, first_chunk_chars=args.zh_first_chunk)
        extra.append(key)
    log("one untimed pass over every text")
    for (key, _length), texts in TEXTS.items():
        for text in texts[:per_class]:
            speak(speakers[key], text)
    for key in extra:
        speak(speakers[key], ZH_LONG[0])
    rss["after_untimed_pass"] = round(own_rss_mb(), 1)
    samples: list[Sample] = []
    order = list(schedule(rounds, per_class, extra))
    for done, (round_, key, length, index) in enumerate(order, start=1):
        text = TEXTS[(key[:2], length)][index]
        measured = speak(speakers[key], text)
        samples.append(
            Sample(
                voice=key,
                length=length,
                text=index,
                round=round_,
                chars=len(text),
                chunks=int(measured["chunks"]),
                first_chunk_chars=int(measured["first_chunk_chars"]),
                plan_ms=round(measured["plan_ms"], 2),
                ttfa_ms=round(measured["ttfa_ms"], 2),
                ttfa_text_ms=round(measured["ttfa_text_ms"], 2),
                synth_s=round(measured["synth_s"], 4),
                cpu_s=round(measured["cpu_s"], 4),
                audio_s=round(measured["audio_s"], 4),
            )
        )
        if done % 8 == 0 or done == len(order):
            log(f"  {done}/{len(order)} texts, load average {os.getloadavg()[0]:.1f}")
    rss["steady_after_runs"] = round(own_rss_mb(), 1)
    log("where the Mandarin TTFA goes")
    reps = 1 if args.quick else 3
    zh_first = [ZH_SHORT[0], ZH_SHORT[1], ZH_LONG[0], ZH_LONG[1]]
    result: dict[str, Any] = {
        "rounds": rounds,
        "texts_per_class": per_class,
        "classes": {},
        "rss_mb": rss,
        "voices": {
            key: {
                "name": s.voice.name,
                "sample_rate": s.voice.sample_rate,
                "load_s": round(s.load_s, 2),
                "warm_up_s": round(s.warm_s, 2),
            }
            for key, s in speakers.items()
        },
        "zh_ttfa_breakdown": breakdown(speakers["zh"], args.voice, zh_first, reps),
    }
    for key in ("zh", "en"):
        for length in ("short", "long"):
            chosen = [s for s in samples if s.voice == key and s.length == length]
            result["classes"][f"{key}-{length}"] = summarize(chosen)
        both = [s for s in samples if s.voice == key]
        result["classes"][f"{key}-all"] = summarize(both)
    for key in extra:
        result["classes"][f"{key}-long"] = summarize([s for s in samples if s.voice == key])
    result["samples"] = [asdict(s) for s in samples]
    return result


# --- English alone, in a subprocess -----------------------------------------------------------


def english_alone_worker(args: argparse.Namespace) -> int:
    """Print one JSON line: RSS with the English voice alone (daemon-like process)."""
    from edge_tts.voice.model import share_runtime

    start = own_rss_mb()
    share_runtime()
    speaker = open_speaker("en", args.voice)
    warm = own_rss_mb()
    per_class = QUICK_TEXTS if args.quick else len(EN_SHORT)
    for text in EN_SHORT[:per_class] + EN_LONG[:per_class]:
        speak(speaker, text)
    steady = own_rss_mb()
    workers.reply(start=round(start, 1), warm=round(warm, 1), steady=round(steady, 1))
    return 0


def english_alone(args: argparse.Namespace) -> dict[str, Any]:
    return workers.run("bench.mandarin", "--english-alone-worker", *(["--quick"] * args.quick))


# --- through the real daemon (--e2e) ----------------------------------------------------------


def daemon(device: str, settings: dict[str, Any]) -> AbstractContextManager[tuple[Rig, Recorder]]:
    """Mosquitto, a recorder of the daemon's events, the daemon (wav-dir sink, preload) with
    `settings` merged into its config; all stopped on leaving (daemon_rig.daemon_run)."""
    return daemon_run(device, (), False, record_events, settings)


def ask(tracker: Tracker, rid: str, text: str) -> dict[str, Any]:
    """One request, alone: its final event."""
    request = tracker.send(len(tracker.order), text, rid)
    if not tracker.until(lambda: request.event is not None, E2E_TIMEOUT_S, rid):
        raise AssertionError(f"no final event for {rid} in {E2E_TIMEOUT_S:.0f} s")
    assert request.event is not None
    return request.event


def e2e(args: argparse.Namespace) -> dict[str, Any]:
    rounds = 1 if args.quick else args.e2e_rounds
    voices = {"default": {}, "mandarin": {"path": str(args.voice)}}
    # The phrase cache off: every round speaks the same texts, and a cached chunk is
    # played from disk (TTFA ~6 ms, no synthesis), which is not what this measures.
    no_cache = {"cache": {"enabled": False}}
    events: list[dict[str, Any]] = []
    result: dict[str, Any] = {"config": {"voices": voices, **no_cache}, "rounds": rounds}
    log("e2e: daemon with both voices (wav-dir sink)")
    with daemon("zhe2e", {"voices": voices, **no_cache}) as (rig, recorder):
        result["rss_ready_mb"] = round(rig.sample()["rss_mb"], 1)
        tracker = Tracker(rig, recorder)
        for number, (round_, key, length, index) in enumerate(schedule(rounds + 1, 2)):
            event = ask(tracker, f"zh-e2e-{number}", TEXTS[(key, length)][index])
            if round_ > 0:  # round 0: warm-up
                events.append({"voice": key, "length": length, **event})
        result["rss_after_mb"] = round(rig.sample()["rss_mb"], 1)
        rig.same_pid_at_end = rig.same_process()
    result["classes"] = {}
    for key in ("zh", "en"):
        for length in ("short", "long"):
            chosen = [e for e in events if e["voice"] == key and e["length"] == length]
            finished = [e for e in chosen if e.get("event") == "finished"]
            ttfa = [float(e["time_to_first_audio_ms"]) for e in finished]
            result["classes"][f"{key}-{length}"] = {
                "n": len(chosen),
                "finished": len(finished),
                "voices": sorted({v for e in finished for v in e.get("voices", [])}),
                "ttfa_p50_ms": round(percentile(ttfa, 50), 1) if ttfa else None,
                "ttfa_p95_ms": round(percentile(ttfa, 95), 1) if ttfa else None,
                "rtf": round(
                    sum(e["synthesis_ms"] for e in finished)
                    / max(1, sum(e["audio_ms"] for e in finished)),
                    4,
                ),
            }
    log("e2e: daemon with the English voice alone (RSS)")
    with daemon("ene2e", no_cache) as (rig, recorder):
        alone: dict[str, Any] = {"rss_ready_mb": round(rig.sample()["rss_mb"], 1)}
        tracker = Tracker(rig, recorder)
        for number, text in enumerate(EN_SHORT[:2] + EN_LONG[:2]):
            ask(tracker, f"en-e2e-{number}", text)
        alone["rss_after_mb"] = round(rig.sample()["rss_mb"], 1)
    result["english_alone"] = alone
    return result


# --- report -------------------------------------------------------------------------------


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    classes = result["in_process"]["classes"]
    rss = result["in_process"]["rss_mb"]["steady_after_runs"]
    rtf = classes["zh-all"]["rtf"]
    short, long_ = classes["zh-short"]["ttfa_p50_ms"], classes["zh-long"]["ttfa_p50_ms"]
    return [
        target(f"Mandarin RTF <= {ZH_RTF_MAX}", f"{rtf:.3f}", rtf <= ZH_RTF_MAX),
        target(
            f"Mandarin TTFA p50 <= {ZH_TTFA_P50_MAX_MS:.0f} ms, short",
            f"{short:.0f} ms",
            short <= ZH_TTFA_P50_MAX_MS,
        ),
        target(
            f"Mandarin TTFA p50 <= {ZH_TTFA_P50_MAX_MS:.0f} ms, long",
            f"{long_:.0f} ms",
            long_ <= ZH_TTFA_P50_MAX_MS,
        ),
        target(
            f"steady RSS, both voices <= {BOTH_RSS_MAX_MB:.0f} MB",
            f"{rss:.0f} MB",
            rss <= BOTH_RSS_MAX_MB,
        ),
        target(
            "Mandarin TTFA independent of length (long/short p50 <= 1.25)",
            f"{long_ / short:.2f}x",
            long_ / short <= 1.25,
        ),
    ]


def print_report(result: dict[str, Any]) -> None:
    print(machine_line(result["machine"]))
    if "in_process" in result:
        print_engine(result)
    if "e2e" in result:
        print_e2e(result["e2e"])
    print_targets(result["targets"])


def print_engine(result: dict[str, Any]) -> None:
    run = result["in_process"]
    print(
        f"Mandarin vs English, in one process (share_runtime()), {run['rounds']} rounds x "
        f"{run['texts_per_class']} texts per class, interleaved\n"
    )
    voices = run["voices"].items()
    table(
        ("voice", "name", "Hz", "load s", "warm-up s"),
        [(k, v["name"], v["sample_rate"], v["load_s"], v["warm_up_s"]) for k, v in voices],
    )
    columns = {
        "n": "n",
        "chars_mean": "chars",
        "first_chunk_chars_mean": "1st chunk",
        "audio_s_mean": "audio s",
        "ttfa_p50_ms": "TTFA p50 ms",
        "ttfa_p95_ms": "p95",
        "ttfa_text_p50_ms": "from text",
        "rtf": "RTF",
        "cpu_s_per_audio_s": "CPU s/s",
    }
    classes = run["classes"]
    rows = [(name, *(c[k] for k in columns)) for name, c in classes.items()]
    table(("class", *columns.values()), rows)

    def zh_over_en(length: str, key: str) -> float:
        return float(classes[f"zh-{length}"][key] / classes[f"en-{length}"][key])

    fields(
        "zh / en",
        {
            "RTF": zh_over_en("all", "rtf"),
            "CPU per audio second": zh_over_en("all", "cpu_s_per_audio_s"),
            "TTFA p50, short": zh_over_en("short", "ttfa_p50_ms"),
            "TTFA p50, long": zh_over_en("long", "ttfa_p50_ms"),
        },
    )
    columns = {
        "first_chunk_chars": "first chunk chars",
        "symbols": "symbols",
        "mel_frames": "mel frames",
        "ids_ms": "pinyin + ids ms",
        "acoustic_ms": "acoustic ms",
        "first_window_ms": "first vocoder window ms",
    }
    table(
        tuple(columns.values()),
        [[row[k] for k in columns] for row in run["zh_ttfa_breakdown"]],
        "Where the Mandarin TTFA goes (medians):",
    )
    rss = run["rss_mb"]
    alone = result["english_alone_rss_mb"]
    fields(
        "RSS (MB)",
        {
            "English alone (subprocess): warm, steady": f"{alone['warm']}, {alone['steady']}",
            **{f"this process: {step}": mb for step, mb in rss.items()},
            "steady over English alone": f"{rss['steady_after_runs'] - alone['steady']:+.0f}",
        },
    )


def print_e2e(e: dict[str, Any]) -> None:
    keys = ("n", "finished", "voices", "ttfa_p50_ms", "ttfa_p95_ms", "rtf")
    table(
        ("class", "n", "finished", "voices", "TTFA p50 ms", "p95", "RTF"),
        [(name, *(c[k] for k in keys)) for name, c in e["classes"].items()],
        f"end to end (the daemon, wav-dir sink, {e['rounds']} rounds, one request at a time):",
    )
    fields(
        "daemon RSS (MB)",
        {
            "both voices: ready, after": f"{e['rss_ready_mb']}, {e['rss_after_mb']}",
            "English alone: ready, after": (
                f"{e['english_alone']['rss_ready_mb']}, {e['english_alone']['rss_after_mb']}"
            ),
        },
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument(
        "--voice",
        type=Path,
        default=DEFAULT_VOICE_DIR,
        help=f"Mandarin voice directory (default {DEFAULT_VOICE_DIR})",
    )
    parser.add_argument("--quick", action="store_true", help="2 texts per class, 1 round")
    parser.add_argument("--e2e", action="store_true", help="also through the real daemon")
    parser.add_argument(
        "--zh-first-chunk",
        type=int,
        metavar="CHARS",
        help="also the Mandarin voice with this first_chunk_chars (long texts), beside it",
    )
    parser.add_argument(
        "--e2e-only", action="store_true", help="only the daemon end to end (no engine runs)"
    )
    parser.add_argument("--e2e-rounds", type=int, default=3, help="--e2e rounds (default 3)")
    add_output_options(parser)
    parser.add_argument("--english-alone-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.english_alone_worker:
        return english_alone_worker(args)
    if args.rounds < 1 or args.e2e_rounds < 1:
        parser.error("--rounds and --e2e-rounds must be positive")
    return run_and_emit(run, args, print_report)


def run(args: argparse.Namespace) -> dict[str, Any]:
    load_before = os.getloadavg()
    result: dict[str, Any] = {"benchmark": "mandarin", "voice_dir": str(args.voice)}
    if not args.e2e_only:
        log("English voice alone, in a subprocess (RSS)")
        result["english_alone_rss_mb"] = english_alone(args)
        result["in_process"] = in_process(args)
    if args.e2e or args.e2e_only:
        result["e2e"] = e2e(args)
    result["machine"] = machine_info(load_before)
    result["targets"] = targets(result) if "in_process" in result else []
    return result


if __name__ == "__main__":
    sys.exit(main())
