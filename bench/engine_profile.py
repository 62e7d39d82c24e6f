"""Where our engine's time goes beyond the model, in one process.

    python -m bench.engine_profile --build int8 --rounds 2     # cProfile over the engine path
    python -m bench.engine_profile --build fp32 --parts         # + the same model run whole
    python -m bench.engine_profile --build int8 --graph         # + time by part of the voice
    python -m bench.engine_profile --build int8 --encoder-threads   # + its encoder, 1 vs 2 threads

The profile: cProfile with the process's CPU time as its clock (every thread, onnxruntime's
pool included) over bench.engine's `OurEngine` speaking the corpus `--rounds` times: the
share inside `InferenceSession.run`, the decoder windows' share, the rest (text front-end,
phonemizer, router, windowing, pause gate, int16) by function.

`--parts`: the engine path against the same model run once per chunk (ids from our
front-end, noise scales as the voice's) with our session options, with spinning on (as
piper-tts's session spins), once per sentence unsplit, with memory patterns on, and
piper-tts itself, its threads parking as ours (FP32 only); interleaved per sentence,
the order rotating; paired medians against piper-tts (or the spinning whole runs).

`--encoder-threads`: the encoder half as the engine loads it (rewritten, cut), on one
thread and on two, each chunk's sequences of the corpus, the two taking turns round by
round: per length of input (phoneme ids), the milliseconds per run on one thread and two
threads' wall and CPU time over one's (paired medians). The figure behind
`QUANTIZED_ENCODER_THREADS` (voice/model.py), for a board to check its own.

`--graph`: onnxruntime's own profiler over the voice's halves as the engine cuts them
(encoder half on the build's encoder threads, the decoder stages on 2), each chunk's
sequences of the corpus run whole: the kernel time by part of the voice (text encoder,
duration predictor, flow; HiFi-GAN's stages 0-2) and the nodes run per encoder run. The
profiler adds a little to every node, so the many small ones weigh a bit more than they do.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.engine import WARM_UP_TEXT, OurEngine, PiperEngine
from bench.report_io import add_output_options, machine_info, machine_line, run_and_emit, table
from tests.support.texts import evaluation_lines

if TYPE_CHECKING:
    from edge_tts.voice.decoder_cut import SplitModel
    from edge_tts.voice.model import Voice

RUN = "<built-in method onnxruntime.capi.onnxruntime_pybind11_state.run>"
Speak = Callable[[str], int]  # text -> samples made


def _model(build: str) -> Path:
    from edge_tts.voice import files

    return files.default_int8_path() if build == "int8" else files.packaged_fp32().model


def _engine(build: str) -> OurEngine:
    engine = OurEngine(_model(build), threads=2)
    engine.load()
    return engine


def _spoken(engine: OurEngine | PiperEngine) -> Speak:
    return lambda text: sum(len(pcm) for pcm in engine.chunks(text))


def _whole(
    engine: OurEngine, spinning: bool, per_sentence: bool = False, patterns: bool = False
) -> Speak:
    """One whole-graph run per chunk of the engine's own plan (`per_sentence`: per text,
    unsplit, as piper-tts runs a sentence; `patterns`: onnxruntime's memory patterns on)."""
    import numpy as np
    import onnxruntime

    from edge_tts.text import prepare
    from edge_tts.voice.model import session_options
    from edge_tts.voicebuild.calibration import inference_scales

    options = session_options(2)
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    options.enable_mem_pattern = patterns
    voice = engine._voice
    session = onnxruntime.InferenceSession(
        str(voice.files.model), options, providers=["CPUExecutionProvider"]
    )
    scales = np.asarray(inference_scales(voice.files), dtype=np.float32)

    def texts(text: str) -> list[str]:
        if per_sentence:
            return prepare(text, voice.language, max_chunk_chars=10_000, first_chunk_chars=10_000)
        return [chunk.text for chunk in engine.router.plan(text, voice, engine.options)]

    def speak(text: str) -> int:
        made = 0
        for chunk in texts(text):
            for ids in voice.ids(chunk):
                feeds = {
                    "input": np.asarray([ids], dtype=np.int64),
                    "input_lengths": np.asarray([len(ids)], dtype=np.int64),
                    "scales": scales,
                }
                made += int(session.run(None, feeds)[0].size)
        return made

    return speak


def profile(engine: OurEngine, lines: Sequence[str], rounds: int) -> dict[str, Any]:
    speak = _spoken(engine)
    speak(WARM_UP_TEXT)
    profiler = cProfile.Profile(time.process_time)
    samples = 0
    profiler.enable()
    for _ in range(rounds):
        samples += sum(speak(text) for text in lines)
    profiler.disable()
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = stats.stats  # type: ignore[attr-defined]
    run = sum(v[2] for k, v in rows.items() if k[2] == RUN)
    decode = sum(v[3] for k, v in rows.items() if k[2] == "_decode")
    rest = sorted(((v[2], f"{k[0].split('/')[-1]}:{k[2]}") for k, v in rows.items() if k[2] != RUN))
    return {
        "cpu_s": round(total, 2),
        "audio_s": round(samples / engine.sample_rate, 1),
        "in_session_run": round(run / total, 3),
        "decoder_windows": round(decode / total, 3),
        "outside_run_s": round(total - run, 3),
        "top_outside_run": [(name, round(s, 3)) for s, name in rest[-8:][::-1]],
    }


def parts(engine: OurEngine, build: str, lines: Sequence[str], rounds: int) -> dict[str, Any]:
    speakers = {
        "ours": _spoken(engine),
        "whole": _whole(engine, spinning=False),
        "whole, spinning": _whole(engine, spinning=True),
        "whole per sentence": _whole(engine, spinning=False, per_sentence=True),
        "whole, memory patterns": _whole(engine, spinning=False, patterns=True),
    }
    if build == "fp32":
        from edge_tts.voice import files

        piper = PiperEngine(files.packaged_fp32().model, threads=2, spinning=False)
        piper.load()
        speakers["piper-tts parked"] = _spoken(piper)
    for speak in speakers.values():
        speak(WARM_UP_TEXT)
    samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in speakers}
    names, turn = list(speakers), 0
    for _ in range(rounds):
        for text in lines:
            for name in names[turn % len(names) :] + names[: turn % len(names)]:
                time.sleep(0.05)  # a spinning pool parks before the next one runs
                cpu, wall = time.process_time(), time.perf_counter()
                made = speakers[name](text)
                samples[name].append((time.perf_counter() - wall, time.process_time() - cpu, made))
            turn += 1
    base = names[-1]
    rate = engine.sample_rate
    return {name: _ratios(samples[name], samples[base], base, rate) for name in names}


def _ratios(
    mine: list[tuple[float, float, int]],
    base: list[tuple[float, float, int]],
    name: str,
    rate: int,
) -> dict[str, Any]:
    wall = statistics.median((a[0] / a[2]) / (b[0] / b[2]) for a, b in zip(mine, base, strict=True))
    cpu = statistics.median((a[1] / a[2]) / (b[1] / b[2]) for a, b in zip(mine, base, strict=True))
    audio = sum(a[2] for a in mine)
    return {
        "rtf": round(sum(a[0] for a in mine) / audio * rate, 4),
        "cpu_per_audio": round(sum(a[1] for a in mine) / audio * rate, 4),
        f"wall_over_{name}": round(wall, 3),
        f"cpu_over_{name}": round(cpu, 3),
    }


# HiFi-GAN's parts by stage: 0 runs at up to 8x the frame rate, 1 at 64x, 2 at 256x (audio).
_HIFIGAN_STAGES = {
    "stage 0": ("conv_pre", "ups.0", "resblocks.0", "resblocks.1", "resblocks.2"),
    "stage 1": ("ups.1", "resblocks.3", "resblocks.4", "resblocks.5"),
    "stage 2": ("ups.2", "resblocks.6", "resblocks.7", "resblocks.8", "conv_post"),
}


def _part(half: str, node: str) -> str:
    """The part of the voice a profiled node belongs to, by its name (`/dp/flows.3/...`);
    nodes onnxruntime inserted (layout Transposes, its own Q/DQ) count as their half's."""
    path = node.split("/")
    if len(path) < 3:
        return f"{half}: inserted by onnxruntime"
    if path[1] != "dec":
        return f"{half}: {path[1]}"
    stage = next((k for k, v in _HIFIGAN_STAGES.items() if path[2] in v), "other")
    return f"decoder: HiFi-GAN {stage}"


def _voice_halves(build: str) -> tuple[Voice, SplitModel]:
    """The build's voice (unloaded: its front-end and feeds) and its halves as the engine
    loads them: rewritten (model_check), then cut."""
    import onnx

    from edge_tts.voice import files
    from edge_tts.voice.decoder_cut import split_at_decoder
    from edge_tts.voice.kernels import nchwc_convolutions
    from edge_tts.voice.model import Voice
    from edge_tts.voice.model_check import compact_decoder, compact_encoder

    model = _model(build)
    graph = onnx.load(str(model))
    compact_encoder(graph)
    compact_decoder(graph, nchwc_convolutions())
    halves = split_at_decoder(graph)
    assert halves is not None, "a graph the engine cannot cut"
    return Voice(files.from_model_path(model)), halves


def graph_parts(build: str, lines: Sequence[str]) -> dict[str, Any]:
    import json
    import tempfile
    from collections import Counter

    import onnxruntime

    from edge_tts.voice.model import encoder_threads, session_options
    from edge_tts.voice.windowed import speaker_feeds

    voice, halves = _voice_halves(build)
    times: Counter[str] = Counter()
    runs = 0
    with tempfile.TemporaryDirectory() as tmp:

        def session(data: bytes, threads: int, name: str) -> onnxruntime.InferenceSession:
            options = session_options(threads)
            options.enable_profiling = True
            options.profile_file_prefix = f"{tmp}/{name}"
            return onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])

        encoder = session(halves.encoder, encoder_threads(voice.build.scheme, 2), "encoder")
        stages = [session(stage, 2, f"decoder{i}") for i, stage in enumerate(halves.decoder)]
        extra = speaker_feeds(halves.decoder_inputs)
        for text in [WARM_UP_TEXT, *lines]:
            for ids in voice.ids(text):
                data = encoder.run(None, voice._feeds(ids, None))[0]
                runs += 1
                for name, stage in zip(halves.stage_inputs, stages, strict=True):
                    feeds = {name: data, **(extra if stage is stages[0] else {})}
                    data = stage.run(None, feeds)[0]
        nodes = 0
        for half, sess in [("encoder", encoder), *(("decoder", stage) for stage in stages)]:
            for event in json.loads(Path(sess.end_profiling()).read_text()):
                if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
                    times[_part(half, event["name"])] += event["dur"]
                    nodes += half == "encoder"
    total = sum(times.values())
    return {
        "encoder_nodes_per_run": round(nodes / runs),
        "share": {part: round(t / total, 3) for part, t in times.most_common()},
    }


_ID_BUCKETS = (40, 80, 140)  # phoneme ids per run: the limits of the length groups


def encoder_thread_ratios(build: str, lines: Sequence[str], rounds: int) -> dict[str, Any]:
    """The encoder half on one thread and on two, by input length (see the module doc)."""
    from edge_tts.voice.model import new_session

    voice, halves = _voice_halves(build)
    sessions = {threads: new_session(halves.encoder, threads) for threads in (1, 2)}
    feeds = [voice._feeds(ids, None) for text in lines for ids in voice.ids(text)]
    times: dict[tuple[int, int], list[tuple[float, float]]] = {}
    turns = max(2, rounds * 2)
    for turn in range(turns):
        for threads in (1, 2) if turn % 2 else (2, 1):
            for index, feed in enumerate(feeds):
                cpu, wall = time.process_time(), time.perf_counter()
                sessions[threads].run(None, feed)
                spent = (time.perf_counter() - wall, time.process_time() - cpu)
                times.setdefault((threads, index), []).append(spent)
    labels = [*(f"< {b}" for b in _ID_BUCKETS), f">= {_ID_BUCKETS[-1]}"]
    groups: dict[str, list[int]] = {label: [] for label in labels}
    for index, feed in enumerate(feeds):
        ids = int(feed["input"].shape[1])
        groups[next((f"< {b}" for b in _ID_BUCKETS if ids < b), labels[-1])].append(index)
    groups["all"] = list(range(len(feeds)))
    return {name: _thread_ratios(times, ix, turns) for name, ix in groups.items() if ix}


def _thread_ratios(
    times: dict[tuple[int, int], list[tuple[float, float]]], indices: list[int], turns: int
) -> dict[str, Any]:
    def summed(threads: int, turn: int, what: int) -> float:
        return sum(times[(threads, i)][turn][what] for i in indices)

    one_ms = statistics.median(summed(1, t, 0) for t in range(turns)) / len(indices) * 1000
    return {
        "runs": len(indices),
        "one_thread_ms": round(one_ms, 2),
        "wall_two_over_one": round(
            statistics.median(summed(2, t, 0) / summed(1, t, 0) for t in range(turns)), 3
        ),
        "cpu_two_over_one": round(
            statistics.median(summed(2, t, 1) / summed(1, t, 1) for t in range(turns)), 3
        ),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    lines = evaluation_lines()
    before = os.getloadavg()
    engine = _engine(args.build)
    result: dict[str, Any] = {"benchmark": "engine_profile", "build": args.build}
    result["profile"] = profile(engine, lines, args.rounds)
    if args.parts:
        result["parts"] = parts(engine, args.build, lines, args.rounds)
    if args.graph:
        result["graph"] = graph_parts(args.build, lines)
    if args.encoder_threads:
        result["encoder_threads"] = encoder_thread_ratios(args.build, lines, args.rounds)
    result["machine"] = machine_info(before)
    return result


def report(result: dict[str, Any]) -> None:
    print(f"{result['build']}: {machine_line(result['machine'])}")
    p = result["profile"]
    print(
        f"{p['cpu_s']} CPU s for {p['audio_s']} audio s; inside InferenceSession.run "
        f"{p['in_session_run']:.1%} (decoder windows {p['decoder_windows']:.1%}); "
        f"outside it {p['outside_run_s']} s"
    )
    table(("outside run: function", "CPU s"), p["top_outside_run"])
    if "parts" in result:
        rows = [(name, *values.values()) for name, values in result["parts"].items()]
        keys = list(next(iter(result["parts"].values())))
        table(("variant", *keys), rows)
    if "graph" in result:
        graph = result["graph"]
        print(f"onnxruntime's profile: {graph['encoder_nodes_per_run']} nodes per encoder run")
        table(("part of the voice", "share of kernel time"), list(graph["share"].items()))
    if "encoder_threads" in result:
        rows = [(ids, *values.values()) for ids, values in result["encoder_threads"].items()]
        keys = list(next(iter(result["encoder_threads"].values())))
        table(("encoder half: ids per run", *keys), rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", choices=("int8", "fp32"), default="int8")
    parser.add_argument("--rounds", type=int, default=2, help="passes over the corpus")
    parser.add_argument("--parts", action="store_true", help="also whole-graph runs, piper-tts")
    parser.add_argument("--graph", action="store_true", help="also time by part of the voice")
    parser.add_argument(
        "--encoder-threads", action="store_true", help="also the encoder half on 1 vs 2 threads"
    )
    add_output_options(parser)
    return run_and_emit(run, parser.parse_args(argv), report)


if __name__ == "__main__":
    sys.exit(main())
