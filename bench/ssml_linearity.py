"""The text front-end's time against the length of an SSML text: parsing, the lexicon, and
planning chunks (normalizing, routing, splitting; the phonemes of each reading checked)
on nested markup from 400 to 32,000 characters, without synthesis. Issue 24's target: it
stays linear in the length. Measured as the exponent k of time ~ length^k fitted (least
squares on logs) from 2,000 characters up: 1 is linear, 2 quadratic; PASS at k <= 1.2.

    .venv/bin/python python -m bench.ssml_linearity [--rounds 9] [--voice DIR] [--json]

The texts repeat one paragraph of nested markup (p > s > prosody > lang / say-as /
phoneme / sub / break, five levels) until the length is reached, closing every element;
the planner has the default voice and, when --voice names the imported Mandarin voice
(default /var/cache/edge-tts-ci/voices/zh-baker, if there), that one too, and a lexicon
of 2,000 entries, a tenth of them matching. Times are the fastest of --rounds (the least
disturbed by other work on a shared machine), after a garbage collection.
"""

from __future__ import annotations

import argparse
import gc
import math
import time
from pathlib import Path
from typing import Any

from bench.report_io import add_output_options, emit
from edge_tts.config import SynthesisSettings, settings_from_mapping
from edge_tts.speech.routing import Router
from edge_tts.text.lexicon import Entry, Lexicon
from edge_tts.text.ssml import parse
from edge_tts.voice.registry import Voices

SIZES = (400, 1000, 2000, 4000, 8000, 16000, 32000)
REFERENCE = 2000  # the fit starts here: below, fixed costs still show
TARGET_EXPONENT = 1.2
MANDARIN = Path("/var/cache/edge-tts-ci/voices/zh-baker")
PARAGRAPH = (
    "<p><s>Gate <say-as interpret-as='characters'>B{n}</say-as> is <prosody rate='slow'>"
    "<prosody volume='loud'>closing</prosody></prosody> at <say-as interpret-as='time'>"
    "14:{m:02d}</say-as>.</s><s>Passengers for <lang xml:lang='zh-CN'>重庆第{n}航站楼</lang> "
    "and Mr. <phoneme alphabet='ipa' ph='ŋwˈɪn'>Nguyen</phoneme>, please hurry"
    "<break time='300ms'/> to the <sub alias='World Wide Web'>WWW</sub> desk word{n}.</s></p>"
)


def document(chars: int) -> str:
    """Paragraphs of nested markup, about `chars` long in all."""
    parts, n = ["<speak>"], 0
    while sum(map(len, parts)) + len("</speak>") < chars:
        parts.append(PARAGRAPH.format(n=n, m=n % 60))
        n += 1
    return "".join(parts) + "</speak>"


def lexicon() -> Lexicon:
    """2,000 entries, a tenth of which the texts contain (word0, word10, ...)."""
    return Lexicon(
        Entry(f"word{n}", alias=f"the word {n}") if n % 10 == 0 else Entry(f"zq{n}x", alias="x")
        for n in range(2000)
    )


def router(voice_dir: Path | None) -> tuple[Router, Voices]:
    voices_config: dict[str, Any] = {"default": {}}
    if voice_dir is not None:
        voices_config["mandarin"] = {"path": str(voice_dir)}
    settings = settings_from_mapping({"device_id": "bench", "voices": voices_config})
    voices = Voices(settings)
    return Router(SynthesisSettings(), voices, lexicon()), voices


def timed(run: Any, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        gc.collect()
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return min(samples)


def exponent(rows: list[dict[str, Any]]) -> float:
    """k of time ~ chars^k, least squares on the logs of the rows from REFERENCE up."""
    points = [(math.log(r["chars"]), math.log(r["parse_ms"] + r["plan_ms"])) for r in rows]
    points = [p for p, r in zip(points, rows, strict=True) if r["chars"] >= REFERENCE]
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    covariance = sum((x - mean_x) * (y - mean_y) for x, y in points)
    return covariance / sum((x - mean_x) ** 2 for x, _ in points)


def measure(rounds: int, voice_dir: Path | None) -> dict[str, Any]:
    planner, voices = router(voice_dir)
    voice = voices.default
    options = voices.options_for(voice)
    planner.plan(parse(document(REFERENCE), max_chars=10**6), voice, options)  # warm: pypinyin
    rows = []
    for size in SIZES:
        text = document(size)
        parsed = parse(text, max_chars=10**6)
        parse_s = timed(lambda text=text: parse(text, max_chars=10**6), rounds)
        plan_s = timed(lambda parsed=parsed: planner.plan(parsed, voice, options), rounds)
        chunks = len(planner.plan(parsed, voice, options))
        total = parse_s + plan_s
        rows.append(
            {
                "chars": len(text),
                "parse_ms": parse_s * 1000,
                "plan_ms": plan_s * 1000,
                "chunks": chunks,
                "us_per_char": total / len(text) * 1e6,
            }
        )
    k = exponent(rows)
    return {
        "voices": sorted(voices.all()),
        "lexicon_entries": 2000,
        "rounds": rounds,
        "rows": rows,
        "exponent": k,
        "target": f"<= {TARGET_EXPONENT}",
        "verdict": "PASS" if k <= TARGET_EXPONENT else "MISS",
    }


def print_table(result: dict[str, Any]) -> None:
    print(
        f"voices {', '.join(result['voices'])}; lexicon {result['lexicon_entries']} entries; "
        f"fastest of {result['rounds']}"
    )
    print(f"{'chars':>7} {'parse ms':>9} {'plan ms':>9} {'chunks':>7} {'us/char':>8}")
    for row in result["rows"]:
        print(
            f"{row['chars']:>7} {row['parse_ms']:>9.2f} {row['plan_ms']:>9.2f} "
            f"{row['chunks']:>7} {row['us_per_char']:>8.2f}"
        )
    print(
        f"time ~ chars^k from {REFERENCE:,} characters up: k = {result['exponent']:.2f} "
        f"(1 linear, 2 quadratic; target {result['target']}): {result['verdict']}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--voice", type=Path, default=MANDARIN if MANDARIN.is_dir() else None)
    add_output_options(parser)
    args = parser.parse_args()
    emit(measure(args.rounds, args.voice), args.out, args.json, print_table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
