"""The sink of `edge-ttsd say --out FILE.wav`: one utterance into one named WAV file.

The file is written as the wav-dir sink writes each of its files (wavdir.py's `_WavFile`:
under a hidden name until complete, with the volume and fades a sound card would play),
so `say --out` hears what the daemon plays. Unlike the wav-dir sink the caller names the
file, and there is nothing to retry: an unwritable path is an error of this one request.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .dsp import Shaper, ms_to_frames
from .output import AudioUnavailableError, Utterance, check_rate
from .wavdir import _WavFile

if TYPE_CHECKING:
    from ..config import AudioSettings


class WavFileOutput:
    """Writes the utterance to `path`; the file appears only when it is complete."""

    def __init__(self, path: Path, settings: AudioSettings, sample_rate: int) -> None:
        self.path = path
        self.sample_rate = sample_rate
        self.volume = settings.volume
        self.fade_ms = settings.fade_ms
        self._lock = threading.Lock()  # interrupt() and close() come from other threads
        self._reason: str | None = "not started"
        self._current: _WavFile | None = None

    def start(self) -> None:
        if self._reason != "closed":
            self._reason = None  # nothing to open: the file is created by begin()

    def close(self) -> None:
        self._drop()
        self._reason = "closed"

    @property
    def healthy(self) -> bool:
        return self._reason is None

    @property
    def alive(self) -> bool:
        return True  # nothing runs in the background

    @property
    def status(self) -> str:
        return "ok" if self._reason is None else f"degraded: {self._reason}"

    @property
    def underruns(self) -> int:
        return 0

    def recover(self) -> None:
        """Nothing to retry: a path that cannot be written fails its one request."""

    def begin(self, utterance: Utterance) -> None:
        check_rate(utterance, self.sample_rate)
        if self._reason is not None:
            raise AudioUnavailableError(self._reason)
        fade = ms_to_frames(self.fade_ms, self.sample_rate)
        try:
            wav = _WavFile(utterance, self.path, self.sample_rate, Shaper(self.volume, fade), fade)
        except OSError as err:
            raise AudioUnavailableError(f"cannot write {self.path}: {err.strerror or err}") from err
        self._drop()
        with self._lock:
            self._current = wav

    def write(self, utterance: Utterance, pcm: np.ndarray, stop: threading.Event) -> bool:
        with self._lock:
            wav = self._current_for(utterance)
            if stop.is_set() or wav is None:
                return False
            try:
                return wav.write(pcm)
            except OSError as err:
                raise self._failed(err) from err

    def end(self, utterance: Utterance, stop: threading.Event, timeout: float) -> bool:
        with self._lock:
            wav = self._current_for(utterance)
            if wav is None or stop.is_set():
                self._drop_locked()
                return False
            try:
                wav.commit()
            except OSError as err:
                raise self._failed(err) from err
            self._current = None
        return True

    def interrupt(self, fade_ms: int | None = None) -> None:
        """Nothing is audible to fade: the partial file is dropped, write/end return False."""
        with self._lock:
            if self._current is not None:
                self._current.utterance.interrupted = True
            self._drop_locked()

    def _current_for(self, utterance: Utterance) -> _WavFile | None:
        current = self._current
        if current is not None and current.utterance is utterance:
            return current
        if utterance.interrupted:
            return None
        raise RuntimeError(f"write/end for {utterance.request_id!r} without begin()")

    def _failed(self, err: OSError) -> AudioUnavailableError:
        self._drop_locked()  # no partial file is left behind
        return AudioUnavailableError(f"cannot write {self.path}: {err.strerror or err}")

    def _drop(self) -> None:
        with self._lock:
            self._drop_locked()

    def _drop_locked(self) -> None:
        current, self._current = self._current, None
        if current is not None:
            current.discard()
