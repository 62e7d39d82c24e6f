"""What the Mandarin vocoder's windows cost: the daemon's windowing vs whole chunks vs a
proposal (larger windows after the first), side by side.

    python -m bench.zh_windows [--voice DIR] [--rounds 3] [--smallest 96] [--out FILE] [--json]

The vocoder (Multi-band MelGAN) needs its receptive field, 31 frames, of context on each
side of a window (edge_tts/voice/vocoder_probe.py's `probe_context`), so a window of n frames
costs about n + 62 frames of work. WindowedVocoder.stream sizes the windows after the first with
windowed.py's `next_window`, whose smallest window is the first one (16 frames): on a
slow or busy machine the windows stay near 16 frames and the vocoder does ~4x the work of
one whole-chunk run. The proposal, measured here without changing the runtime: after the
short first window, at least `--smallest` frames per window (the same policy otherwise).

Mels: the acoustic model (as imported) on bench/zh_quant.py's 15 evaluation sentences.
All three ways run in one process after `share_runtime()`, on bench/zh_quant.py's
sessions of the voice as imported (the daemon's session options), interleaved per
sentence with the order rotating; per round the ratio whole-chunk time / way's time (1 =
as fast as one whole-chunk run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.report_io import add_output_options, log, run_and_emit, table
from bench.zh_quant import BY_NAME, DEFAULT_VOICE_DIR, EVALUATION, open_pipeline, sentence_ids


def proposal(vocoder: Any, mel: Any, first: int, smallest: int, frame_s: float) -> list[int]:
    """WindowedVocoder.stream's loop with `smallest` frames at least after the first
    window; returns the window sizes (frames)."""
    from edge_tts.voice.windowed import even_step, next_window

    total, start, size = mel.shape[1], 0, first
    made_s = first_at = 0.0
    sizes = []
    while start < total:
        end = min(total, start + size) if start == 0 else start + even_step(total - start, size)
        began = time.monotonic()
        vocoder.window(mel, start, end)
        per_frame = (time.monotonic() - began) / (end - start)
        first_at = first_at or time.monotonic()
        made_s += (end - start) * frame_s
        size = next_window(made_s - (time.monotonic() - first_at), per_frame, smallest)
        sizes.append(end - start)
        start = end
    return sizes


def run(args: argparse.Namespace) -> dict[str, Any]:
    from edge_tts.voice import voice_dir
    from edge_tts.voice.model import share_runtime
    from edge_tts.voice.windowed import FIRST_WINDOW_FRAMES

    load_before = os.getloadavg()
    config = voice_dir.read_config(args.voice)
    share_runtime()
    stages = open_pipeline(BY_NAME["a-ref"], args.voice, args.voice)
    mels = [stages.mel(ids)[0] for ids in sentence_ids(args.voice, EVALUATION)]
    vocoder, context = stages.vocoder, stages.vocoder.context
    frame_s = config.hop_length / config.sample_rate
    first = FIRST_WINDOW_FRAMES

    def current(mel: Any) -> list[int]:
        return [p.size // config.hop_length for p in vocoder.stream(mel, first)]

    def proposed(mel: Any) -> list[int]:
        return proposal(vocoder, mel, first, args.smallest, frame_s)

    def whole(mel: Any) -> list[int]:
        return [vocoder.run(mel).size // config.hop_length]

    ways: list[tuple[str, Callable[[Any], list[int]]]] = [
        ("current", current),
        (f"smallest {args.smallest}", proposed),
        ("whole chunk", whole),
    ]
    ratios: dict[str, list[float]] = {name: [] for name, _ in ways}
    windows: dict[str, list[int]] = {name: [] for name, _ in ways}
    for round_ in range(args.rounds):
        spent = dict.fromkeys(ratios, 0.0)
        for index, mel in enumerate(mels):
            turn = (round_ + index) % len(ways)
            for name, way in ways[turn:] + ways[:turn]:
                t0 = time.perf_counter()
                sizes = way(mel)
                spent[name] += time.perf_counter() - t0
                windows[name].append(len(sizes))
        for name in ratios:
            ratios[name].append(spent["whole chunk"] / spent[name])
        log(f"round {round_ + 1}: {spent}")
    return {
        "benchmark": "zh_windows",
        "context_frames": context,
        "first_window_frames": first,
        "sentences": len(mels),
        "frames": [int(m.shape[1]) for m in mels],
        "rounds": args.rounds,
        "speed_vs_whole": {n: round(statistics.median(r), 3) for n, r in ratios.items()},
        "speed_vs_whole_rounds": {n: [round(x, 3) for x in r] for n, r in ratios.items()},
        "windows_per_sentence": {n: round(statistics.fmean(w), 1) for n, w in windows.items()},
        "example_windows": {
            "current": current(mels[3]),
            f"smallest {args.smallest}": proposed(mels[3]),
        },
        "loadavg_start": [round(x, 2) for x in load_before],
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
    }


def print_report(r: dict[str, Any]) -> None:
    print(
        f"Mandarin vocoder windows: {r['sentences']} sentences ({min(r['frames'])}-"
        f"{max(r['frames'])} frames), context {r['context_frames']} frames, first window "
        f"{r['first_window_frames']}; load average {r['loadavg_start']} -> {r['loadavg_end']}\n"
    )
    rows = [
        (name, f"{ratio:.3f}", r["speed_vs_whole_rounds"][name], r["windows_per_sentence"][name])
        for name, ratio in r["speed_vs_whole"].items()
    ]
    table(("way", "speed vs whole chunk", "rounds", "windows per sentence"), rows)
    examples = list(r["example_windows"].items())
    table(("way", f"windows of a {r['frames'][3]}-frame mel"), examples)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--voice", type=Path, default=DEFAULT_VOICE_DIR, help="Mandarin voice")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument(
        "--smallest", type=int, default=96, help="proposal: frames per window after the first"
    )
    add_output_options(parser)
    return run_and_emit(run, parser.parse_args(argv), print_report)


if __name__ == "__main__":
    sys.exit(main())
