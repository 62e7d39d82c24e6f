"""Intelligibility of INT8 voices: ASR word error rate, speed and spectral distance vs FP32.

    python -m bench.intelligibility [--model NAME=PATH ...] [--rounds 3] [--fp32-seeds 2]
        [--no-extra] [--out FILE] [--json]

Models: the packaged FP32 voice (the reference), our installed INT8 build of the default
voice (if it exists) and every ``--model NAME=PATH`` given.  Sentences: the packaged
evaluation corpus (the announcement corpus) plus EXTRA_TEXT (the quantization study's
held-out lines plus five more, none of them in a calibration set).  Every line goes
through the daemon's text front-end (``edge_tts.text.prepare``, which expands numbers,
abbreviations and times); each resulting sentence is one utterance, and its normalized
text is the reference transcript.

For every model and utterance:

* deterministic synthesis (scales 0, 1, 0), timed ``--rounds`` times round-robin over
  the models (the order rotates per utterance and per round, so background load hits all
  models alike); speed = FP32 seconds / model seconds per round, median over rounds;
* sampled synthesis with the voice's own scales (0.667, 1, 0.8 from its config).  Every
  model gets a fresh session after ``onnxruntime.set_seed(SEED)``, so all models draw the
  same noise (until a duration differs); FP32 is also rendered with ``--fp32-seeds``
  other seeds, whose spread is the WER noise floor of sampling alone;
* speech recognition with PocketSphinx (its bundled en-US acoustic model, language model
  and dictionary; nothing is downloaded) on the audio resampled to 16 kHz mono, then WER
  against the reference after normalization (lowercase, no punctuation, hyphens split,
  spelled-out letters joined: "U P S" -> "ups");
* log-mel DTW distance to FP32 (``edge_tts.voicebuild.quality.compare``) on the deterministic
  audio, as in docs/quantization.md.
"""

from __future__ import annotations

import argparse
import importlib
import re
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from bench.quant_schemes import EVALUATION_TEXT
from bench.report_io import add_output_options, log, run_and_emit, table
from edge_tts.text import prepare
from edge_tts.voice import files
from edge_tts.voice.model import load_config
from edge_tts.voice.phonemize import text_to_ids
from edge_tts.voicebuild import quality
from tests.support.texts import evaluation_lines


def _pocketsphinx() -> Any:
    """The ASR, imported on use: it is the `bench` extra (pip install -e '.[bench]')."""
    try:
        return importlib.import_module("pocketsphinx")
    except ImportError as err:
        raise SystemExit("needs pocketsphinx: pip install -e '.[bench]'") from err


ASR_RATE = 16_000
SEED = 20_240_601
DETERMINISTIC = (0.0, 1.0, 0.0)
# Own announcement-style lines; no sentence here is in edge_tts/voice/data/calibration_en.txt.
# The quantization study's held-out lines plus a few more; none is in a calibration set.
EXTRA_TEXT = (
    *EVALUATION_TEXT,
    "The doorbell rang twice while you were away.",
    "The car is parked on level three, near the elevator.",
    "Your prescription is ready for pickup at the pharmacy.",
    "The upstairs heater was switched off to save power.",
    "Severe weather alert: strong winds are expected after 8 PM.",
)
ALIASES = {"dr": "doctor", "mr": "mister", "st": "street", "ok": "okay"}


# --- text ----------------------------------------------------------------------------


def words(text: str) -> list[str]:
    """Lowercase words without punctuation; runs of single letters joined ("p s i" -> "psi")."""
    cleaned = re.sub(r"[^a-z0-9' ]+", " ", text.lower().replace("-", " ").replace("/", " "))
    tokens = [ALIASES.get(t, t) for t in (raw.strip("'") for raw in cleaned.split()) if t]
    joined: list[str] = []
    run: list[str] = []
    for token in [*tokens, ""]:
        if len(token) == 1:
            run.append(token)
            continue
        joined.extend(["".join(run)] if len(run) > 1 else run)
        run = []
        if token:
            joined.append(token)
    return joined


def edit_distance(ref: Sequence[str], hyp: Sequence[str]) -> int:
    """Word-level Levenshtein distance (substitutions + deletions + insertions)."""
    row = list(range(len(hyp) + 1))
    for i, ref_word in enumerate(ref, start=1):
        diagonal, row[0] = row[0], i
        for j, hyp_word in enumerate(hyp, start=1):
            diagonal, row[j] = (
                row[j],
                min(row[j] + 1, row[j - 1] + 1, diagonal + (ref_word != hyp_word)),
            )
    return row[-1]


@dataclass(frozen=True)
class Utterance:
    text: str  # the normalized sentence the voice speaks
    ids: tuple[tuple[int, ...], ...]  # one id sequence per espeak sentence

    @property
    def reference(self) -> list[str]:
        return words(self.text)


def corpus_lines(extra: bool) -> list[str]:
    lines = evaluation_lines() + list(EXTRA_TEXT if extra else ())
    return list(dict.fromkeys(lines))


def utterances(lines: Sequence[str]) -> list[Utterance]:
    config = load_config(files.packaged_fp32())
    result: list[Utterance] = []
    for line in lines:
        for sentence in prepare(
            line, language=config.espeak_voice, max_chunk_chars=10_000, first_chunk_chars=10_000
        ):
            ids = tuple(tuple(seq) for seq in text_to_ids(sentence, config))
            if ids:
                result.append(Utterance(sentence, ids))
    return result


# --- audio ---------------------------------------------------------------------------


def synthesize(
    session: ort.InferenceSession, utterance: Utterance, scales: Sequence[float]
) -> npt.NDArray[np.float32]:
    pieces = [quality.synthesize(session, ids, scales) for ids in utterance.ids]
    return np.concatenate(pieces) if len(pieces) > 1 else pieces[0]


def resample(
    audio: npt.NDArray[np.float32], rate_in: int, rate_out: int
) -> npt.NDArray[np.float64]:
    """Band-limited resampling of the whole signal in the frequency domain."""
    signal = np.asarray(audio, dtype=np.float64)
    size = round(signal.size * rate_out / rate_in)
    spectrum = np.fft.rfft(signal)
    out = np.zeros(size // 2 + 1, dtype=np.complex128)
    keep = min(out.size, spectrum.size)
    out[:keep] = spectrum[:keep]
    resampled: npt.NDArray[np.float64] = np.fft.irfft(out, size) * (size / max(signal.size, 1))
    return resampled


class Recognizer:
    """PocketSphinx with its bundled en-US model (16 kHz, 16-bit mono)."""

    def __init__(self, sample_rate: int) -> None:
        self._rate = sample_rate
        self._decoder = _pocketsphinx().Decoder(samprate=ASR_RATE, loglevel="FATAL")

    def transcribe(self, audio: npt.NDArray[np.float32]) -> str:
        pcm = np.clip(resample(audio, self._rate, ASR_RATE), -1.0, 1.0)
        raw = (pcm * 32767.0).astype(np.int16).tobytes()
        self._decoder.start_utt()
        self._decoder.process_raw(raw, full_utt=True)
        self._decoder.end_utt()
        hyp = self._decoder.hyp()
        return str(hyp.hypstr) if hyp is not None else ""


# --- results -------------------------------------------------------------------------


@dataclass
class ModeResult:
    """ASR results of one model in one synthesis mode."""

    transcripts: list[str] = field(default_factory=list)
    errors: list[int] = field(default_factory=list)

    def add(self, reference: list[str], transcript: str) -> None:
        self.transcripts.append(transcript)
        self.errors.append(edit_distance(reference, words(transcript)))

    def wer(self, n_words: int) -> float:
        return sum(self.errors) / n_words


@dataclass
class ModelResult:
    name: str
    path: str
    megabytes: float
    seconds: list[list[float]] = field(default_factory=list)  # [round][utterance]
    deterministic: ModeResult = field(default_factory=ModeResult)
    sampled: ModeResult = field(default_factory=ModeResult)
    distances: list[float] = field(default_factory=list)
    duration_ratios: list[float] = field(default_factory=list)


def speed_ratios(ref: ModelResult, test: ModelResult) -> list[float]:
    return [sum(r) / sum(t) for r, t in zip(ref.seconds, test.seconds, strict=True)]


def paired(ref: ModeResult, test: ModeResult) -> tuple[int, int]:
    """Utterances where ``test`` has more / fewer word errors than ``ref``."""
    worse = sum(t > r for r, t in zip(ref.errors, test.errors, strict=True))
    better = sum(t < r for r, t in zip(ref.errors, test.errors, strict=True))
    return worse, better


# --- the run -------------------------------------------------------------------------


def _load(path: Path) -> ort.InferenceSession:
    return quality.load_session(path, threads=2)


def run_deterministic(
    models: list[ModelResult],
    sessions: list[ort.InferenceSession],
    items: list[Utterance],
    rounds: int,
) -> list[list[npt.NDArray[np.float32]]]:
    """Timed round-robin synthesis; returns the first round's audio, [model][utterance]."""
    audio: list[list[npt.NDArray[np.float32]]] = [[] for _ in models]
    for round_index in range(rounds):
        for model in models:
            model.seconds.append([0.0] * len(items))
        for index, item in enumerate(items):
            shift = (index + round_index) % len(models)
            for position in [*range(shift, len(models)), *range(shift)]:
                start = time.perf_counter()
                samples = synthesize(sessions[position], item, DETERMINISTIC)
                models[position].seconds[round_index][index] = time.perf_counter() - start
                if round_index == 0:
                    audio[position].append(samples)
        log(f"  timing round {round_index + 1}/{rounds} done")
    return audio


def score_deterministic(
    models: list[ModelResult],
    audio: list[list[npt.NDArray[np.float32]]],
    items: list[Utterance],
    asr: Recognizer,
    sample_rate: int,
) -> None:
    for model, renders in zip(models, audio, strict=True):
        for item, ref, test in zip(items, audio[0], renders, strict=True):
            model.deterministic.add(item.reference, asr.transcribe(test))
            comparison = quality.compare(ref, test, sample_rate)
            model.distances.append(comparison.spectral_distance)
            model.duration_ratios.append(comparison.duration_ratio)


def run_sampled(
    path: Path, items: list[Utterance], scales: Sequence[float], seed: int, asr: Recognizer
) -> ModeResult:
    ort.set_seed(seed)  # RandomNormalLike kernels take the global seed when the session loads
    session = _load(path)
    result = ModeResult()
    for item in items:
        result.add(item.reference, asr.transcribe(synthesize(session, item, scales)))
    return result


def parse_models(specs: Sequence[str]) -> list[tuple[str, Path]]:
    models = [("fp32", files.packaged_fp32().model)]
    installed = files.default_int8_path()
    if installed.is_file():
        models.append(("installed-int8", installed))
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep:
            name, path = Path(spec).stem, spec
        models.append((name, Path(path).expanduser()))
    return models


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--model", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--rounds", type=int, default=3, help="deterministic timing rounds")
    parser.add_argument("--fp32-seeds", type=int, default=2, help="extra FP32 sampled renders")
    parser.add_argument("--no-extra", action="store_true", help="only the packaged/shared corpus")
    parser.add_argument("--limit", type=int, default=0, help="first N utterances (smoke test)")
    add_output_options(parser)
    return parser.parse_args(argv)


@dataclass(frozen=True)
class Row:
    """One model's summary line."""

    model: str
    path: str
    mb: float
    speed: float  # FP32 seconds / model seconds, median over rounds (>1: faster)
    speed_rounds: list[float]
    wer_deterministic: float
    wer_sampled: float
    worse_better_deterministic: tuple[int, int]  # utterances vs FP32 in the same mode
    worse_better_sampled: tuple[int, int]
    distance_mean: float
    distance_max: float
    duration_worst: float


@dataclass(frozen=True)
class Report:
    utterances: int
    words: int
    sampled_scales: tuple[float, float, float]
    seed: int
    fp32_wer_sampled_other_seeds: list[float]
    rows: list[Row]


def build_report(
    models: list[ModelResult],
    n_words: int,
    scales: tuple[float, float, float],
    floor: list[float],
) -> Report:
    fp32 = models[0]
    rows = [
        Row(
            model=model.name,
            path=model.path,
            mb=round(model.megabytes, 1),
            speed=statistics.median(speed_ratios(fp32, model)),
            speed_rounds=speed_ratios(fp32, model),
            wer_deterministic=model.deterministic.wer(n_words),
            wer_sampled=model.sampled.wer(n_words),
            worse_better_deterministic=paired(fp32.deterministic, model.deterministic),
            worse_better_sampled=paired(fp32.sampled, model.sampled),
            distance_mean=statistics.fmean(model.distances),
            distance_max=max(model.distances),
            duration_worst=max(abs(ratio - 1.0) for ratio in model.duration_ratios),
        )
        for model in models
    ]
    return Report(len(models[0].distances), n_words, scales, SEED, floor, rows)


def print_report(r: dict[str, Any]) -> None:
    floor = ", ".join(f"{wer:.3f}" for wer in r["fp32_wer_sampled_other_seeds"])
    print(
        f"{r['utterances']} utterances, {r['words']} reference words; sampled scales "
        f"{r['sampled_scales']}, seed {r['seed']}; FP32 sampled WER with other seeds: "
        f"{floor or '-'}\n"
    )
    rows = [
        (row["model"], f"{row['mb']:.1f}", f"{row['speed']:.3f}",
         f"{min(row['speed_rounds']):.2f}-{max(row['speed_rounds']):.2f}",
         f"{row['wer_deterministic']:.3f}", f"{row['wer_sampled']:.3f}",
         "{}/{}".format(*row["worse_better_deterministic"]),
         "{}/{}".format(*row["worse_better_sampled"]), f"{row['distance_mean']:.3f}",
         f"{row['distance_max']:.3f}", f"{row['duration_worst']:.3f}")
        for row in r["rows"]
    ]  # fmt: skip
    table(
        ("model", "MB", "speed", "min-max", "WER det", "WER smp", "det -/+", "smp -/+", "dist",
         "max", "abs(d-1)"),
        rows,
    )  # fmt: skip
    print(
        "speed: FP32 time / model time, deterministic synthesis, same run (median of "
        "rounds); -/+: utterances with more / fewer word errors than FP32 in that mode; "
        "dist: log-mel DTW distance to FP32 (deterministic), abs(d-1): worst duration change"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    config = load_config(files.packaged_fp32())
    scales = (float(config.noise_scale), float(config.length_scale), float(config.noise_w_scale))
    items = utterances(corpus_lines(extra=not args.no_extra))
    if args.limit:
        items = items[: args.limit]
    n_words = sum(len(item.reference) for item in items)
    specs = parse_models(args.model)
    models = [ModelResult(name, str(path), path.stat().st_size / 1e6) for name, path in specs]
    log(f"{len(items)} utterances, {n_words} reference words, {len(models)} models")
    started = time.perf_counter()
    asr = Recognizer(config.sample_rate)
    sessions = [_load(path) for _, path in specs]
    audio = run_deterministic(models, sessions, items, args.rounds)
    del sessions
    score_deterministic(models, audio, items, asr, config.sample_rate)
    del audio
    log(f"  deterministic scored ({time.perf_counter() - started:.0f} s)")
    for model, (_, path) in zip(models, specs, strict=True):
        model.sampled = run_sampled(path, items, scales, SEED, asr)
    floor = [
        run_sampled(specs[0][1], items, scales, SEED + offset, asr).wer(n_words)
        for offset in range(1, args.fp32_seeds + 1)
    ]
    log(f"  done in {time.perf_counter() - started:.0f} s")
    return {
        "benchmark": "intelligibility",
        **asdict(build_report(models, n_words, scales, floor)),
        "utterance_texts": [item.text for item in items],
        "details": {model.name: asdict(model) for model in models},
    }


def main(argv: Sequence[str] | None = None) -> int:
    return run_and_emit(run, _arguments(argv), print_report)


if __name__ == "__main__":
    raise SystemExit(main())
