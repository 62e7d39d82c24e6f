"""Where the Mandarin voice's memory goes, and what the acoustic model's bound and warm-up
concurrency do to it: one fresh process per variant.

    python bench/zh_rss.py [--voice DIR] [--variants 300x2,300x1,150x2,100x2]
        [--with-english] [--out results.json] [--json]

Each variant (`max_phonemes` x warm-up concurrency) runs in its own process, as the daemon
would: `share_runtime(2)`, (`--with-english`: the English voice loaded and warmed up
first), pypinyin's dictionaries, the Mandarin voice loaded, `warm_up(concurrent=N)`, the
long and short texts of bench/mandarin.py spoken once through `render()`, then glibc's
heap trimmed (`release_free_memory`, as the pipeline does after a long request). RSS
(MB = 10^6 bytes, /proc/self/statm) after each step.

The daemon today: max_phonemes 300 (synthesis.max_phonemes, shared by every voice) and
warm-up concurrency synthesis.max_concurrent = 2.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from mandarin import DEFAULT_VOICE_DIR, ZH_LONG, ZH_SHORT, rss_mb  # noqa: E402
from report_io import add_output_options, emit  # noqa: E402 - bench/ is the script's own directory

DEFAULT_VARIANTS = ("300x2", "300x1", "150x2", "100x2")


def worker(voice_dir: Path, max_phonemes: int, concurrent: int, english: bool) -> int:
    from edge_tts.speech.synthesis import render
    from edge_tts.text import prepare
    from edge_tts.text.mandarin import pinyin
    from edge_tts.voice import files
    from edge_tts.voice.base import SpeechOptions
    from edge_tts.voice.model import Voice, release_free_memory, share_runtime
    from edge_tts.voice.two_stage import TwoStageVoice

    steps: dict[str, float] = {"start": round(rss_mb(), 1)}
    share_runtime(2)
    if english:
        en = Voice(files.default_voice(), None, 2, 300)
        en.load()
        en.warm_up(concurrent=2)
        steps["english_warm"] = round(rss_mb(), 1)
    pinyin.load()
    steps["pinyin"] = round(rss_mb(), 1)
    zh = TwoStageVoice(voice_dir, None, 2, max_phonemes)
    zh.load()
    steps["zh_loaded"] = round(rss_mb(), 1)
    zh.warm_up(concurrent=concurrent)
    steps["zh_warm"] = round(rss_mb(), 1)
    options = SpeechOptions(length_scale=1.0)
    for text in ZH_LONG + ZH_SHORT:
        chunks = prepare(text, language="zh", max_chunk_chars=200, first_chunk_chars=40)
        for index, chunk in enumerate(chunks):
            for _ in render(zh, chunk, options, index == 0, 22050):
                pass
    steps["after_texts"] = round(rss_mb(), 1)
    release_free_memory()
    steps["after_trim"] = round(rss_mb(), 1)
    print(json.dumps(steps))
    return 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    load_before = os.getloadavg()
    rows: dict[str, Any] = {}
    for variant in args.variants:
        max_phonemes, concurrent = (int(x) for x in variant.split("x"))
        argv = [sys.executable, str(Path(__file__).resolve()), "--worker", variant]
        argv += ["--voice", str(args.voice)]
        if args.with_english:
            argv.append("--with-english")
        done = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=REPO)
        rows[variant] = {
            "max_phonemes": max_phonemes,
            "concurrent": concurrent,
            **json.loads(done.stdout.strip().splitlines()[-1]),
        }
        print(f"{variant}: {rows[variant]}", file=sys.stderr, flush=True)
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
    print(f"RSS (MB) step by step, one process per variant; English first: {r['with_english']}")
    print(f"{'variant':<8} " + " ".join(f"{s:>12}" for s in steps))
    for name, row in r["variants"].items():
        print(f"{name:<8} " + " ".join(f"{row[s]:>12.1f}" for s in steps))


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
    emit(run(args), args.out, args.json, print_report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
