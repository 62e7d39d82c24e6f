"""Objective comparison of synthesized audio (numpy only).

Used to judge a quantized voice against its FP32 original:

* :func:`log_mel` - log-magnitude mel spectrogram (HiFi-GAN style: 1024-point FFT,
  hop 256, 80 mel bands up to 8 kHz, natural log of the magnitude clamped at 1e-5).
* :func:`dtw_distance` - mean per-frame distance along the dynamic-time-warping path
  between two spectrograms. The frame distance is the RMS difference of the log-mel
  vectors (nats), so 0.0 means identical and ~1.0 means "each band is off by a factor
  e on average".  Silence is clamped at the 1e-5 floor on both sides, so it compares
  equal instead of adding noise.
* :func:`compare` - spectral distance plus the duration ratio (test / ref samples).
* :func:`quality_report` - runs a reference and a test model side by side on phoneme
  id sequences with the noise scales at 0 (deterministic synthesis) and measures the
  speed ratio interleaved, so that background load hits both models alike.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

FloatArray = npt.NDArray[np.float64]

N_FFT = 1024
HOP = 256
N_MELS = 80
F_MAX = 8000.0
LOG_FLOOR = 1e-4
DETERMINISTIC_SCALES = (0.0, 1.0, 0.0)  # noise_scale, length_scale, noise_w

# The gate a quantized build must pass to stand in for its FP32 original (the quantizer
# prints it, `edge-ttsd tune` applies it on the device). Over the evaluation sentences
# (docs/quantization.md) our default build is at 0.36 mean / 0.47 max where int8
# dot-product kernels run (AVX512-VNNI) and 0.52 / 0.58 where they do not (AVX2);
# naive whole-graph INT8 is at 0.84 / 1.17, and FP32 rendered with its own sampling noise
# is 0.33 / 0.38 from deterministic FP32. A 10 % duration change is heard as another pace.
GATE_MAX_DISTANCE = 0.5
GATE_MAX_DURATION_DEVIATION = 0.1


def gate_verdict(max_distance: float, worst_duration_deviation: float) -> bool:
    return (
        max_distance < GATE_MAX_DISTANCE and worst_duration_deviation < GATE_MAX_DURATION_DEVIATION
    )


def _hz_to_mel(hz: FloatArray) -> FloatArray:
    return 2595.0 * np.log10(1.0 + hz / 700.0)


def _mel_to_hz(mel: FloatArray) -> FloatArray:
    return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)


def mel_filterbank(sample_rate: int, n_fft: int = N_FFT, n_mels: int = N_MELS) -> FloatArray:
    """Triangular HTK-mel filters, shape ``[n_mels, n_fft // 2 + 1]``, area-normalised."""
    f_max = min(F_MAX, sample_rate / 2.0)
    mels = np.linspace(_hz_to_mel(np.array(0.0)), _hz_to_mel(np.array(f_max)), n_mels + 2)
    edges = _mel_to_hz(mels)
    freqs = np.linspace(0.0, sample_rate / 2.0, n_fft // 2 + 1)
    lower, center, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rising = (freqs[None, :] - lower) / (center - lower)
    falling = (upper - freqs[None, :]) / (upper - center)
    weights = np.maximum(0.0, np.minimum(rising, falling))
    return weights * (2.0 / (upper - lower))


def log_mel(audio: npt.NDArray[np.floating], sample_rate: int) -> FloatArray:
    """Log-magnitude mel spectrogram, shape ``[frames, N_MELS]`` (one row per 256 samples)."""
    signal = np.asarray(audio, dtype=np.float64).reshape(-1)
    pad = N_FFT // 2
    signal = np.pad(signal, (pad, pad), mode="reflect" if signal.size > pad else "constant")
    n_frames = 1 + (signal.size - N_FFT) // HOP
    index = np.arange(N_FFT)[None, :] + HOP * np.arange(n_frames)[:, None]
    frames = signal[index] * np.hanning(N_FFT + 1)[:-1]
    magnitude = np.abs(np.fft.rfft(frames, axis=1))
    mel: FloatArray = magnitude @ mel_filterbank(sample_rate).T
    return np.log(np.maximum(mel, LOG_FLOOR))


def _frame_distances(a: FloatArray, b: FloatArray) -> FloatArray:
    """RMS difference between every frame of ``a`` and every frame of ``b``."""
    sq: FloatArray = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * (a @ b.T)
    distances: FloatArray = np.sqrt(np.maximum(sq, 0.0) / a.shape[1])
    return distances


def dtw_distance(a: npt.NDArray[np.floating], b: npt.NDArray[np.floating]) -> float:
    """Mean frame distance along the minimum-cost DTW path between ``a`` and ``b``.

    ``a`` and ``b`` are ``[frames, features]``. The recurrence is evaluated one
    anti-diagonal at a time, so the Python loop runs ``len(a) + len(b)`` times
    (about 2 ms per 100 frames); the path length is tracked alongside the cost.
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(f"need two [frames, features] arrays, got {x.shape} and {y.shape}")
    if x.shape[0] == 0 or y.shape[0] == 0:
        raise ValueError("cannot align an empty sequence")
    cost = _frame_distances(x, y)
    n, m = cost.shape
    acc = np.full((n + 1, m + 1), np.inf)
    steps = np.zeros((n + 1, m + 1))
    acc[0, 0] = 0.0
    for diagonal in range(2, n + m + 1):
        i = np.arange(max(1, diagonal - m), min(n, diagonal - 1) + 1)
        j = diagonal - i
        options = np.stack([acc[i - 1, j - 1], acc[i - 1, j], acc[i, j - 1]])
        lengths = np.stack([steps[i - 1, j - 1], steps[i - 1, j], steps[i, j - 1]])
        best = np.argmin(options, axis=0)
        picked = np.arange(i.size)
        acc[i, j] = options[best, picked] + cost[i - 1, j - 1]
        steps[i, j] = lengths[best, picked] + 1.0
    return float(acc[n, m] / steps[n, m])


@dataclass(frozen=True)
class Comparison:
    """How far ``test`` audio is from ``ref`` audio."""

    spectral_distance: float  # mean RMS log-mel difference along the DTW path (nats)
    duration_ratio: float  # len(test) / len(ref)


def compare(
    ref: npt.NDArray[np.floating], test: npt.NDArray[np.floating], sample_rate: int
) -> Comparison:
    """Spectral distance (DTW over log-mel) and duration ratio of ``test`` against ``ref``."""
    ref_flat, test_flat = np.asarray(ref).reshape(-1), np.asarray(test).reshape(-1)
    distance = dtw_distance(log_mel(ref_flat, sample_rate), log_mel(test_flat, sample_rate))
    return Comparison(distance, test_flat.size / max(ref_flat.size, 1))


# --- running two models side by side -------------------------------------------------


def session_options(threads: int = 2) -> ort.SessionOptions:
    """The session settings the daemon uses (and every measurement here)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return options


def load_session(model: bytes | Path, threads: int = 2) -> ort.InferenceSession:
    source = model if isinstance(model, bytes) else str(model)
    return ort.InferenceSession(
        source, sess_options=session_options(threads), providers=["CPUExecutionProvider"]
    )


def synthesize(
    session: ort.InferenceSession,
    ids: Sequence[int],
    scales: Sequence[float] = DETERMINISTIC_SCALES,
) -> npt.NDArray[np.float32]:
    """One VITS forward pass; returns the flat float32 waveform."""
    feeds = {
        "input": np.asarray([ids], dtype=np.int64),
        "input_lengths": np.asarray([len(ids)], dtype=np.int64),
        "scales": np.asarray(scales, dtype=np.float32),
    }
    audio = session.run(None, feeds)[0]
    return np.asarray(audio, dtype=np.float32).reshape(-1)


@dataclass(frozen=True)
class QualityReport:
    """Per-sentence comparisons of a test model against a reference model."""

    comparisons: tuple[Comparison, ...]
    phoneme_counts: tuple[int, ...]
    speed_ratios: tuple[float, ...]  # per round: ref seconds / test seconds (>1: test faster)
    ref_rtf: float  # median real-time factor of the reference over the rounds
    test_rtf: float

    @property
    def speed_ratio(self) -> float:
        return statistics.median(self.speed_ratios)

    @property
    def mean_distance(self) -> float:
        return statistics.fmean(c.spectral_distance for c in self.comparisons)

    @property
    def max_distance(self) -> float:
        return max(c.spectral_distance for c in self.comparisons)

    @property
    def mean_duration_ratio(self) -> float:
        return statistics.fmean(c.duration_ratio for c in self.comparisons)

    @property
    def worst_duration_deviation(self) -> float:
        return max(abs(c.duration_ratio - 1.0) for c in self.comparisons)

    def format(self) -> str:
        lines = [f"{'#':>3} {'phonemes':>8} {'spectral':>9} {'duration':>9}"]
        for number, (count, comp) in enumerate(
            zip(self.phoneme_counts, self.comparisons, strict=True), start=1
        ):
            lines.append(
                f"{number:>3} {count:>8} {comp.spectral_distance:>9.4f} {comp.duration_ratio:>9.4f}"
            )
        lines.append(
            f"mean spectral {self.mean_distance:.4f} (max {self.max_distance:.4f}), "
            f"mean duration ratio {self.mean_duration_ratio:.4f} "
            f"(worst |r-1| {self.worst_duration_deviation:.4f})"
        )
        passed = gate_verdict(self.max_distance, self.worst_duration_deviation)
        lines.append(
            f"quality gate: {'pass' if passed else 'FAIL'} (max spectral < {GATE_MAX_DISTANCE}, "
            f"worst |r-1| < {GATE_MAX_DURATION_DEVIATION})"
        )
        rounds = ", ".join(f"{r:.3f}" for r in self.speed_ratios)
        lines.append(
            f"speed ratio ref/test {self.speed_ratio:.3f} (rounds: {rounds}); "
            f"RTF ref {self.ref_rtf:.4f}, test {self.test_rtf:.4f}"
        )
        return "\n".join(lines)


def _timed(session: ort.InferenceSession, ids: Sequence[int]) -> tuple[float, int]:
    start = time.perf_counter()
    audio = synthesize(session, ids)
    return time.perf_counter() - start, audio.size


def interleaved_timing(
    ref: ort.InferenceSession,
    test: ort.InferenceSession,
    id_sequences: Sequence[Sequence[int]],
    rounds: int,
) -> tuple[list[float], list[float], list[float], int]:
    """Time ref and test on each sentence in turn; returns per-round ratios, RTFs, samples."""
    ratios: list[float] = []
    ref_rtfs: list[float] = []
    test_rtfs: list[float] = []
    samples = 0
    for _ in range(rounds):
        ref_total = test_total = 0.0
        samples = test_samples = 0
        for index, ids in enumerate(id_sequences):
            # Alternate which model goes first: the second run of a pair tends to be
            # a little faster (warm caches), about 2 % here.
            ref_first = (index + len(ratios)) % 2 == 0
            if ref_first:
                ref_seconds, count = _timed(ref, ids)
            test_seconds, test_count = _timed(test, ids)
            if not ref_first:
                ref_seconds, count = _timed(ref, ids)
            ref_total, samples = ref_total + ref_seconds, samples + count
            test_total, test_samples = test_total + test_seconds, test_samples + test_count
        ratios.append(ref_total / test_total)
        ref_rtfs.append(ref_total / max(samples, 1))
        test_rtfs.append(test_total / max(test_samples, 1))
    return ratios, ref_rtfs, test_rtfs, samples


def quality_report(
    ref_model: bytes | Path,
    test_model: bytes | Path,
    id_sequences: Sequence[Sequence[int]],
    threads: int = 2,
    sample_rate: int = 22050,
    rounds: int = 3,
) -> QualityReport:
    """Compare ``test_model`` with ``ref_model`` on deterministic synthesis (scales 0, 1, 0).

    The first pass (which also warms both sessions up) produces the audio that is
    compared; then ``rounds`` interleaved timing passes give one ref/test time ratio each.
    """
    ref, test = load_session(ref_model, threads), load_session(test_model, threads)
    comparisons = tuple(
        compare(synthesize(ref, ids), synthesize(test, ids), sample_rate) for ids in id_sequences
    )
    ratios, ref_rtfs, test_rtfs, _ = interleaved_timing(ref, test, id_sequences, rounds)
    return QualityReport(
        comparisons=comparisons,
        phoneme_counts=tuple(len(ids) for ids in id_sequences),
        speed_ratios=tuple(ratios),
        ref_rtf=statistics.median(ref_rtfs) * sample_rate,
        test_rtf=statistics.median(test_rtfs) * sample_rate,
    )
