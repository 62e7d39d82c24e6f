"""Quantized builds against FP32 in one interleaved run: speed, distance, pause floor.

    python -m bench.quant_builds --model static-fast=PATH --model pp-ups01=PATH [--rounds 3]

Whole-graph sessions (the daemon's session options), deterministic synthesis (noise
scales 0) of the packaged evaluation sentences. Every model speaks each sentence in
turn, the order rotating every sentence, so background load hits all alike; speed is
the median over rounds of FP32's time / the model's (min-max). Quality against FP32:
DTW log-mel distance mean / max and worst duration deviation (edge_tts.voicebuild.quality,
the gate `edge-ttsd quantize` and `tune` apply), plus the quietest frames (p5 of the
512-sample frame RMS in dBFS) without and through the daemon's pause gate.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.report_io import add_output_options, log, machine_info, machine_line, run_and_emit, table
from edge_tts.audio.pause_gate import PauseGate
from edge_tts.voice import files
from edge_tts.voicebuild import quality
from edge_tts.voicebuild.calibration import sentence_ids

FRAME = 512
RATE = 22050


def p5_dbfs(audio: list[np.ndarray]) -> float:
    levels = []
    for piece in audio:
        frames = piece[: piece.size // FRAME * FRAME].reshape(-1, FRAME).astype(np.float64)
        levels.append(10 * np.log10((frames**2).mean(axis=1) + 1e-20))
    return float(np.percentile(np.concatenate(levels), 5))


def run(args: argparse.Namespace) -> dict[str, Any]:
    voice = files.packaged_fp32()
    models = {"fp32": voice.model} | {
        name: Path(path) for name, path in (spec.split("=", 1) for spec in args.model)
    }
    sessions = {name: quality.load_session(path) for name, path in models.items()}
    ids = sentence_ids(voice, "evaluation_en.txt")
    ids = ids[: args.sentences] if args.sentences else ids
    names = list(sessions)
    for session in sessions.values():  # warm-up
        quality.synthesize(session, ids[0])
    load_before = os.getloadavg()
    times = {name: [0.0] * args.rounds for name in names}
    audio: dict[str, list[np.ndarray]] = {name: [] for name in names}
    turn = 0
    for rnd in range(args.rounds):
        for seq in ids:
            turn += 1
            for name in names[turn % len(names) :] + names[: turn % len(names)]:
                start = time.perf_counter()
                out = quality.synthesize(sessions[name], seq)
                times[name][rnd] += time.perf_counter() - start
                if rnd == 0:
                    audio[name].append(out)
        log(f"round {rnd + 1}/{args.rounds}")
    rows = {}
    for name in names:
        ratios = [f / t for f, t in zip(times["fp32"], times[name], strict=True)]
        comps = [
            quality.compare(ref, test, RATE)
            for ref, test in zip(audio["fp32"], audio[name], strict=True)
        ]
        dist = [c.spectral_distance for c in comps]
        gated = [PauseGate().process(piece) for piece in audio[name]]
        rows[name] = {
            "speed": round(statistics.median(ratios), 3),
            "speed_min_max": [round(min(ratios), 2), round(max(ratios), 2)],
            "distance_mean": round(statistics.mean(dist), 3),
            "distance_max": round(max(dist), 3),
            "duration_worst": round(max(abs(c.duration_ratio - 1) for c in comps), 3),
            "p5_dbfs": round(p5_dbfs(audio[name]), 1),
            "p5_dbfs_gated": round(p5_dbfs(gated), 1),
        }
    return {
        "benchmark": "quant_builds",
        "sentences": len(ids),
        "rounds": args.rounds,
        "models": {name: str(path) for name, path in models.items()},
        "rows": rows,
        "machine": machine_info(load_before),
    }


def print_report(r: dict[str, Any]) -> None:
    print(f"{r['sentences']} sentences x {r['rounds']} rounds; {machine_line(r['machine'])}")
    rows = [
        (name, f"{m['speed']:.3f} ({m['speed_min_max'][0]:.2f}-{m['speed_min_max'][1]:.2f})",
         m["distance_mean"], m["distance_max"], m["duration_worst"], m["p5_dbfs"],
         m["p5_dbfs_gated"])
        for name, m in r["rows"].items()
    ]  # fmt: skip
    table(
        ("model", "speed vs FP32 (min-max)", "dist mean", "dist max", "worst abs(d-1)",
         "p5 dBFS", "p5 dBFS gated"),
        rows,
    )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=0, help="first N (0: all)")
    add_output_options(parser)
    return run_and_emit(run, parser.parse_args(), print_report)


if __name__ == "__main__":
    sys.exit(main())
