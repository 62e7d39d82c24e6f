"""A downward expander for pauses: near-silent frames are turned further down.

The INT8 voice's quantized activations add a constant noise floor (about -76 dBFS frame
RMS in pauses, where FP32 is at -94: docs/quantization.md). Under speech it is masked,
but in a pause on a loud amplifier in a quiet room it is a faint hiss. Frames quieter
than OPEN_DBFS (speech is louder in ~80 % of frames) are attenuated by SLOPE dB per dB
below it, at most RANGE_DB, which takes that floor below the int16 LSB and leaves speech
untouched.
"""

from __future__ import annotations

import numpy as np

FRAME = 256  # samples: one latent frame of the usual Piper voices (11.6 ms at 22.05 kHz)
OPEN_DBFS = -60.0  # frames at or above this RMS pass unchanged
SLOPE = 2.0  # extra dB of attenuation per dB below OPEN_DBFS (a 1:3 expander)
RANGE_DB = 24.0  # never more attenuation than this


class PauseGate:
    """Stateful across the pieces of one utterance, so the gain never jumps at a seam.

    Each frame's gain comes from its own level and its neighbours' (the gate opens one
    frame before a word starts and closes one frame after it ends, so onsets and decays
    are never cut); between frame ends the gain ramps linearly.
    """

    def __init__(self) -> None:
        self._gain: float | None = None  # at the end of the last piece

    def process(self, audio: np.ndarray) -> np.ndarray:
        if audio.size == 0:
            return audio
        target = _frame_gains(audio)
        if target.min() >= 1.0 and (self._gain is None or self._gain >= 1.0):
            self._gain = 1.0
            return audio  # speech: nothing to do (the common case)
        ends = np.minimum(np.arange(1, target.size + 1) * FRAME, audio.size)
        # Opening at once at a seam is safe (what came before was near-silent) and keeps a
        # word that starts a piece whole; closing ramps down.
        start = target[0] if self._gain is None else max(self._gain, float(target[0]))
        gains = np.interp(
            np.arange(1, audio.size + 1), np.concatenate(([0], ends)), np.append(start, target)
        )
        self._gain = float(target[-1])
        gated: np.ndarray = (audio * gains).astype(np.float32)
        return gated


def _frame_gains(audio: np.ndarray) -> np.ndarray:
    """Per frame (the last may be short): the expander's gain, widened by one frame."""
    frames = -(-audio.size // FRAME)
    padded = np.zeros(frames * FRAME, np.float32)
    padded[: audio.size] = audio
    squares = (padded.reshape(frames, FRAME).astype(np.float64)) ** 2
    lengths = np.full(frames, FRAME)
    lengths[-1] = audio.size - (frames - 1) * FRAME
    level = 10 * np.log10(squares.sum(axis=1) / lengths + 1e-20)
    gain_db = np.clip((level - OPEN_DBFS) * SLOPE, -RANGE_DB, 0.0)
    widened = gain_db.copy()
    widened[1:] = np.maximum(widened[1:], gain_db[:-1])
    widened[:-1] = np.maximum(widened[:-1], gain_db[1:])
    gains: np.ndarray = 10 ** (widened / 20)
    return gains
