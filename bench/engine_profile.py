"""Where our engine's time goes beyond the model, in one process.

    python -m bench.engine_profile --build int8 --rounds 2     # cProfile over the engine path
    python -m bench.engine_profile --build fp32 --parts         # + the same model run whole

The profile: cProfile with the process's CPU time as its clock (every thread, onnxruntime's
pool included) over bench.engine's `OurEngine` speaking the corpus `--rounds` times: the
share inside `InferenceSession.run`, the decoder windows' share, the rest (text front-end,
phonemizer, router, windowing, pause gate, int16) by function.

`--parts`: the engine path against the same model run once per chunk (ids from our
front-end, noise scales as the voice's) with our session options, with spinning on (as
piper-tts's session spins), once per sentence unsplit, with memory patterns on, and
piper-tts itself, its threads parking as ours (FP32 only); interleaved per sentence,
the order rotating; paired medians against piper-tts (or the spinning whole runs).
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
from typing import Any

from bench.engine import WARM_UP_TEXT, OurEngine, PiperEngine
from bench.report_io import add_output_options, machine_info, machine_line, run_and_emit, table
from tests.support.texts import evaluation_lines

RUN = "<built-in method onnxruntime.capi.onnxruntime_pybind11_state.run>"
Speak = Callable[[str], int]  # text -> samples made


def _engine(build: str) -> OurEngine:
    from edge_tts.voice import files

    model = files.default_int8_path() if build == "int8" else files.packaged_fp32().model
    engine = OurEngine(model, threads=2)
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


def run(args: argparse.Namespace) -> dict[str, Any]:
    lines = evaluation_lines()
    before = os.getloadavg()
    engine = _engine(args.build)
    result: dict[str, Any] = {"benchmark": "engine_profile", "build": args.build}
    result["profile"] = profile(engine, lines, args.rounds)
    if args.parts:
        result["parts"] = parts(engine, args.build, lines, args.rounds)
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", choices=("int8", "fp32"), default="int8")
    parser.add_argument("--rounds", type=int, default=2, help="passes over the corpus")
    parser.add_argument("--parts", action="store_true", help="also whole-graph runs, piper-tts")
    add_output_options(parser)
    return run_and_emit(run, parser.parse_args(argv), report)


if __name__ == "__main__":
    sys.exit(main())
