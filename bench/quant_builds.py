"""Quantized builds against FP32 in one interleaved run: speed, distance, pause floor.

    python bench/polyphase.py --model static-fast=PATH --model pp-ups01=PATH [--rounds 3]

Whole-graph sessions (the daemon's session options), deterministic synthesis (noise
scales 0) of the packaged evaluation sentences. Every model speaks each sentence in
turn, the order rotating every sentence, so background load hits all alike; speed is
the median over rounds of FP32's time / the model's (min-max). Quality against FP32:
DTW log-mel distance mean / max and worst duration deviation (edge_tts.voice.quality,
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

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from edge_tts.audio.pause_gate import PauseGate  # noqa: E402
from edge_tts.voice import files, quality  # noqa: E402
from edge_tts.voice.calibration import sentence_ids  # noqa: E402

FRAME = 512


def p5_dbfs(audio: list[np.ndarray]) -> float:
    levels = []
    for piece in audio:
        frames = piece[: piece.size // FRAME * FRAME].reshape(-1, FRAME).astype(np.float64)
        levels.append(10 * np.log10((frames**2).mean(axis=1) + 1e-20))
    return float(np.percentile(np.concatenate(levels), 5))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=0, help="first N (0: all)")
    args = parser.parse_args()
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
    print(f"load before: {os.getloadavg()}", flush=True)
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
    print(f"load after: {os.getloadavg()}")
    rate = 22050
    print(
        "model | speed vs FP32 (min-max) | dist mean | dist max | worst abs(d-1) "
        "| p5 dBFS | p5 dBFS gated"
    )
    for name in names:
        ratios = [f / t for f, t in zip(times["fp32"], times[name], strict=True)]
        comps = [
            quality.compare(ref, test, rate)
            for ref, test in zip(audio["fp32"], audio[name], strict=True)
        ]
        dist = [c.spectral_distance for c in comps]
        dev = max(abs(c.duration_ratio - 1) for c in comps)
        gated = [PauseGate().process(piece) for piece in audio[name]]
        print(
            f"{name} | {statistics.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f}) "
            f"| {statistics.mean(dist):.3f} | {max(dist):.3f} | {dev:.3f} "
            f"| {p5_dbfs(audio[name]):.1f} | {p5_dbfs(gated):.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
