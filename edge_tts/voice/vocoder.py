"""A convolutional vocoder run on windows of mel frames: first audio early, bounded memory.

Each window is vocoded with `context` extra frames on both sides, cut off again, so the
joined pieces equal vocoding the whole chunk at once (the context is the graph's
receptive field, measured at load: vocoder_probe.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import onnxruntime

from .windowed import MAX_WINDOW_FRAMES, in_windows


class WindowedVocoder:
    """Mel → audio in windows. Runs are serialized per voice, as the Piper decoder's are:
    two at once would double its memory and slow each other on two cores."""

    def __init__(
        self,
        session: onnxruntime.InferenceSession,
        mel_input: str,
        hop: int,
        sample_rate: int,
        context: int | None,
    ):
        self._session = session
        self._input = mel_input
        self._hop = hop
        self._frame_s = hop / sample_rate
        self.context = context  # None: the graph's output depends on the whole input
        self._lock = threading.Lock()

    def describe(self) -> str:
        if self.context is None:
            return "vocoder on whole chunks"
        return f"vocoder on windows, context {self.context} frames"

    def warm_up(self) -> None:
        channels = self._channels()
        frames = MAX_WINDOW_FRAMES + 2 * (self.context or 0)
        self.run(np.zeros((1, frames, channels), np.float32))

    def _channels(self) -> int:
        shape = self._session.get_inputs()[0].shape
        return int(shape[-1]) if isinstance(shape[-1], int) else 80

    def run(self, mel: np.ndarray) -> np.ndarray:
        return self._vocode(mel)[0]

    def window(self, mel: np.ndarray, start: int, end: int) -> np.ndarray:
        """Audio of frames [start, end) of `mel` ([1, frames, channels])."""
        return self._window(mel, start, end)[0]

    def stream(self, mel: np.ndarray, first_frames: int | None) -> Iterator[np.ndarray]:
        """Audio pieces in order, by windowed.py's policy (`in_windows`), as for Piper."""
        if self.context is None:
            yield self.run(mel)
            return
        yield from in_windows(
            mel.shape[1],
            first_frames,
            self.context,
            self._frame_s,
            lambda start, end: self._window(mel, start, end),
            # Every window carries the context on both sides: below that many frames it
            # would be mostly context. 16-frame windows did ~4x a whole run's work and on a
            # busy machine never grew (each took most of the audio it added); at least 2x
            # the context after the first: 2.5x faster there, ~1.05x idle
            # (bench/zh_windows.py), the first window (the TTFA) unchanged.
            smallest=2 * self.context,
        )

    def _window(self, mel: np.ndarray, start: int, end: int) -> tuple[np.ndarray, float]:
        """The window's audio, and the seconds its vocoding took per frame."""
        context = self.context or 0
        lo, hi = max(0, start - context), min(mel.shape[1], end + context)
        audio, seconds = self._vocode(mel[:, lo:hi, :])
        kept = audio[(start - lo) * self._hop : (end - lo) * self._hop].copy()
        return kept, seconds / (end - start)

    def _vocode(self, mel: np.ndarray) -> tuple[np.ndarray, float]:
        with self._lock:  # timed inside: waiting for the other worker is not its cost
            began = time.monotonic()
            audio = self._session.run(None, {self._input: np.ascontiguousarray(mel)})[0]
            seconds = time.monotonic() - began
        return np.asarray(audio, np.float32).reshape(-1), seconds
