"""Where the Mandarin voice's memory goes, and what the acoustic model's bound and warm-up
concurrency do to it: one fresh process per variant.

    python -m bench.zh_rss [--voice DIR] [--variants 300x2,300x1,150x2,100x2]
        [--with-english] [--out results.json] [--json]

Each variant (`max_phonemes` x warm-up concurrency) runs in its own process, as the daemon
would: `share_runtime()`, (`--with-english`: the English voice loaded and warmed up
first), pypinyin's dictionaries, the Mandarin voice loaded, `warm_up(concurrent=N)`, the
long and short texts of bench/mandarin.py spoken once through `render()`, then glibc's
heap trimmed (`release_free_memory`, as the pipeline does after a long request). RSS
(MB = 10^6 bytes, /proc/self/status) after each step.

The daemon today: max_phonemes 300 (synthesis.max_phonemes, shared by every voice) and
warm-up concurrency synthesis.max_concurrent = 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import workers
from bench.mandarin import ZH_LONG, ZH_SHORT
from bench.procmem import own_rss_mb
from bench.report_io import add_output_options, log, run_and_emit, table
from bench.zh_quant import DEFAULT_VOICE_DIR

DEFAULT_VARIANTS = ("300x2", "300x1", "150x2", "100x2")


def worker(voice_dir: Path, max_phonemes: int, concurrent: int, english: bool) -> int:
    from edge_tts.speech.synthesis import render
    from edge_tts.text import prepare
    from edge_tts.text.mandarin import pinyin
    from edge_tts.voice import files
    from edge_tts.voice.base import SpeechOptions
    from edge_tts.voice.model import Voice, release_free_memory, share_runtime
    from edge_tts.voice.two_stage import TwoStageVoice

    steps: dict[str, float] = {"start": round(own_rss_mb(), 1)}
    share_runtime()
    if english:
        en = Voice(files.default_voice(), None, 2, 300)
        en.load()
        en.warm_up(concurrent=2)
        steps["english_warm"] = round(own_rss_mb(), 1)
    pinyin.load()
    steps["pinyin"] = round(own_rss_mb(), 1)
    zh = TwoStageVoice(voice_dir, None, 2, max_phonemes)
    zh.load()
    steps["zh_loaded"] = round(own_rss_mb(), 1)
    zh.warm_up(concurrent=concurrent)
    steps["zh_warm"] = round(own_rss_mb(), 1)
    options = SpeechOptions(length_scale=1.0)
    for text in ZH_LONG + ZH_SHORT:
        chunks = prepare(text, language="zh", max_chunk_chars=200, first_chunk_chars=40)
        for index, chunk in enumerate(chunks):
            for _ in render(zh, chunk, options, index == 0, 22050):
                pass
    steps["after_texts"] = round(own_rss_mb(), 1)
    release_free_memory()
    steps["after_trim"] = round(own_rss_mb(), 1)
    workers.reply(**steps)
    return 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    load_before = os.getloadavg()
    rows: dict[str, Any] = {}
    for variant in args.variants:
        max_phonemes, concurrent = (int(x) for x in variant.split("x"))
        english = ["--with-english"] * args.with_english
        steps = workers.run(
            "bench.zh_rss", "--worker", variant, "--voice", str(args.voice), *english
        )
        rows[variant] = {"max_phonemes": max_phonemes, "concurrent": concurrent, **steps}
        log(f"{variant}: {rows[variant]}")
    return {
        "benchmark": "zh_rss",
        "with_english": args.with_english,
        "variants": rows,
        "loadavg_start": [round(x, 2) for x in load_before],
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
    }


def print_report(r: dict[str, Any]) -> None:
    first = next(iter(r["variants"].values()))
    steps = [k for k in first if k not in ("max_phonemes", "concurrent")]
    rows = [(name, *(row[s] for s in steps)) for name, row in r["variants"].items()]
    title = f"RSS (MB) step by step, one process per variant; English first: {r['with_english']}"
    table(("variant", *steps), rows, title)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--voice", type=Path, default=DEFAULT_VOICE_DIR, help="Mandarin voice")
    parser.add_argument(
        "--variants",
        type=lambda s: [x for x in s.split(",") if x],
        default=list(DEFAULT_VARIANTS),
        help="MAX_PHONEMESxCONCURRENT, comma-separated (default: 300x2,300x1,150x2,100x2)",
    )
    parser.add_argument("--with-english", action="store_true", help="English voice first")
    add_output_options(parser)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        max_phonemes, concurrent = (int(x) for x in args.worker.split("x"))
        return worker(args.voice, max_phonemes, concurrent, args.with_english)
    return run_and_emit(run, args, print_report)


if __name__ == "__main__":
    sys.exit(main())
