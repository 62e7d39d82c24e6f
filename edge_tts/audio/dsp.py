"""Signal processing between the decoder and the outputs; no state beyond one utterance.

In playing order: the first piece of an utterance loses its leading silence
(`trim_leading_silence`), pauses go through the pause gate (pause_gate.py), a voice at
another rate than the output is resampled (`Resampler`), float audio becomes int16 through
a soft limiter (`to_pcm16`); an output then applies volume and fades (`Shaper`,
`fade_out_gain`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import soxr

# Headroom below full scale so a peak never lands on the int16 rail; the limiter is linear
# up to the knee (VITS speech rarely goes above it at volume 1).
_PEAK = 0.98
_KNEE = 0.8

# VITS output starts with ~50 ms of near-silence: time the listener waits for nothing.
SILENCE_LEVEL = 0.005  # float amplitude, about -46 dBFS
KEEP_BEFORE_ONSET_S = 0.01
# The first piece must outlast the decoding of the next one, or the player's ring runs
# dry: a sentence that starts with a stop ("Turn left ...") has its onset late in the
# first window, and trimmed to the onset it was 41 ms long (an underrun in the daemon
# benchmark). The next window takes ~40 ms here; the engine sizes it for half the audio
# it made, so 100 ms kept is enough wherever the first window was.
MIN_FIRST_PIECE_S = 0.1


def trim_leading_silence(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    loud = np.flatnonzero(np.abs(audio) > SILENCE_LEVEL)
    if loud.size == 0:
        return audio
    start = max(0, int(loud[0]) - int(KEEP_BEFORE_ONSET_S * sample_rate))
    start = min(start, max(0, audio.size - int(MIN_FIRST_PIECE_S * sample_rate)))
    return audio[start:]


# What is kept of the quiet after speech that a break follows: the decay of its last sound.
KEEP_AFTER_END_S = 0.01


def trim_trailing_silence(pieces: Iterable[np.ndarray], sample_rate: int) -> Iterator[np.ndarray]:
    """The pieces without the quiet at their end (but KEEP_AFTER_END_S): quiet samples are
    held back until a louder one shows them to be a pause inside the speech."""
    held: list[np.ndarray] = []
    for piece in pieces:
        loud = np.flatnonzero(np.abs(piece) > SILENCE_LEVEL)
        if loud.size == 0:
            held.append(piece)
            continue
        yield from held
        held = []
        end = int(loud[-1]) + 1
        yield piece[:end]
        if end < piece.size:
            held.append(piece[end:])
    if held:
        yield np.concatenate(held)[: int(KEEP_AFTER_END_S * sample_rate)]


class Resampler:
    """One chunk's rate conversion, piece by piece, for a voice whose rate is not the
    output's. The filter's state is carried from piece to piece: converted one by one,
    the pieces join without a seam, exactly as the whole chunk converted at once.

    soxr's "HQ" filter: linear interpolation (what this replaced) aliased and clicked at
    every piece seam. It holds back ~30 ms at 24 -> 22.05 kHz until the next piece or
    `flush`; that delays no start, as the first piece still plays at once.
    """

    def __init__(self, rate: int, target: int) -> None:
        self._stream = (
            None
            if rate == target
            else soxr.ResampleStream(rate, target, 1, dtype="float32", quality="HQ")
        )

    def __call__(self, audio: np.ndarray) -> np.ndarray:
        if self._stream is None:
            return audio
        converted: np.ndarray = self._stream.resample_chunk(np.asarray(audio, np.float32))
        return converted

    def flush(self) -> np.ndarray:
        """What the filter still holds, at the chunk's end."""
        if self._stream is None:
            return np.zeros(0, np.float32)
        rest: np.ndarray = self._stream.resample_chunk(np.zeros(0, np.float32), last=True)
        return rest


def to_pcm16(audio: np.ndarray, volume: float = 1.0) -> np.ndarray:
    """float32 → int16; peaks above the knee are bent smoothly below full scale, never clipped.

    Memoryless on purpose: the pieces of one sentence arrive separately, and a gain chosen
    per piece would pump between them.
    """
    scaled = np.asarray(audio, dtype=np.float32) * np.float32(volume)
    magnitude = np.abs(scaled)
    over = magnitude > _KNEE
    if np.any(over):
        room = _PEAK - _KNEE
        bent = _KNEE + room * np.tanh((magnitude[over] - _KNEE) / room)
        scaled[over] = np.sign(scaled[over]) * bent
    pcm: np.ndarray = np.rint(scaled * 32767.0).astype(np.int16)
    return pcm


def as_mono_int16(pcm: np.ndarray) -> np.ndarray:
    if pcm.dtype != np.int16:
        raise TypeError(f"PCM must be int16, not {pcm.dtype}")
    if pcm.ndim == 2 and pcm.shape[1] == 1:
        return pcm[:, 0]
    if pcm.ndim != 1:
        raise ValueError(f"PCM must be mono (shape (n,) or (n, 1)), not {pcm.shape}")
    return pcm


def ms_to_frames(ms: float, rate: int) -> int:
    """How many frames `ms` milliseconds are at `rate`."""
    return max(0, round(ms * rate / 1000))


def fade_out_gain(frames: int) -> np.ndarray:
    """Linear ramp from just below 1 to just above 0 (neither end is a full step)."""
    return np.linspace(1.0, 0.0, frames + 2, dtype=np.float32)[1:-1]


def fade_in_gain(frames: int) -> np.ndarray:
    return fade_out_gain(frames)[::-1].copy()


class Shaper:
    """Volume and the fade-in of an utterance's first frames, across several writes."""

    def __init__(self, volume: float, fade_frames: int) -> None:
        self.volume = volume
        self._gain = fade_in_gain(fade_frames)
        self._done = 0

    def __call__(self, pcm: np.ndarray) -> np.ndarray:
        pcm = as_mono_int16(pcm)
        k = min(self._gain.size - self._done, pcm.size)
        if k == 0 and self.volume == 1.0:
            return pcm
        out = pcm.astype(np.float32) * np.float32(self.volume)
        out[:k] *= self._gain[self._done : self._done + k]
        self._done += k
        shaped: np.ndarray = np.clip(out, -32768, 32767).astype(np.int16)
        return shaped
