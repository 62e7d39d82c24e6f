"""What both WAV sinks share: `WavWriter`, one utterance's file written under a hidden
name until it is complete, and `WavOutput`, the AudioOutput logic around it (one
utterance at a time, shaped with the volume and fades a sound card would play, after
`audio.lead_in_ms` of silence; an interrupted, stopped or failed utterance leaves no file).

Two sinks build on it and say where each file goes and what a failure means:
`WavDirOutput` (wavdir.py: one file per request, degrades and recovers with its
directory) and `WavFileOutput` (wavfile.py: `edge-ttsd say --out`, one named file).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import time
import wave
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .dsp import Shaper, fade_out_gain, ms_to_frames
from .output import AudioUnavailableError, Utterance, check_rate

if TYPE_CHECKING:
    from ..config import AudioSettings


class WavWriter:
    """One utterance's WAV under a hidden temporary name until commit() renames it."""

    def __init__(
        self,
        utterance: Utterance,
        final: Path,
        rate: int,
        shaper: Shaper,
        fade_out: int,
        lead_in: int = 0,
    ) -> None:
        self.utterance = utterance
        self.final = final
        self.temp = final.with_name(f".{final.stem}.{secrets.token_hex(4)}.part")
        self.shaper = shaper
        self._fade_out = fade_out
        self._tail = np.zeros(0, dtype=np.int16)  # held back until end() to fade it out
        fd = os.open(self.temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        self._file = os.fdopen(fd, "wb")
        self._wav = wave.open(self._file, "wb")  # noqa: SIM115 - closed in commit/discard
        self._wav.setnchannels(1)
        self._wav.setsampwidth(2)
        self._wav.setframerate(rate)
        # Whoever plays the file opens a device for it, and one that wakes late clips the
        # first word: silence first (frames, not speech, so first_sample_at is not set).
        self._wav.writeframes(bytes(2 * lead_in))

    def write(self, pcm: np.ndarray) -> None:
        data = np.concatenate((self._tail, self.shaper(pcm)))
        cut = max(0, data.size - self._fade_out)
        self._tail = data[cut:]
        if cut:
            self._wav.writeframes(data[:cut].astype("<i2").tobytes())
            if self.utterance.first_sample_at is None:
                self.utterance.first_sample_at = time.monotonic()

    def commit(self) -> None:
        tail = (self._tail * fade_out_gain(self._tail.size)).astype("<i2")
        self._wav.writeframes(tail.tobytes())
        if self.utterance.first_sample_at is None:
            self.utterance.first_sample_at = time.monotonic()
        self._wav.close()
        self._file.close()  # flushes: a full disk shows here at the latest
        os.replace(self.temp, self.final)  # a reader sees no file or the whole file
        self.utterance.finished_at = time.monotonic()

    def discard(self) -> None:
        # Closing rewrites the header and flushes, which fails again on a full disk.
        with contextlib.suppress(OSError):
            self._wav.close()
        with contextlib.suppress(OSError):
            self._file.close()
        with contextlib.suppress(OSError):
            self.temp.unlink(missing_ok=True)


class WavOutput(ABC):
    """An AudioOutput that writes each utterance into a WAV file through a `WavWriter`.

    A sink says where an utterance's file goes (`_path`), what a file that cannot be
    written means (`_failed`), and what it retries (`_retry` before each begin(), and
    `recover`); `_reason` is None while it can write, else why not."""

    def __init__(self, settings: AudioSettings, sample_rate: int) -> None:
        self.sample_rate = sample_rate
        self.volume = settings.volume
        self.fade_ms = settings.fade_ms
        self.lead_in = ms_to_frames(settings.lead_in_ms, sample_rate)
        self._lock = threading.Lock()  # interrupt() and close() come from other threads
        self._reason: str | None = "not started"
        self._current: WavWriter | None = None

    @abstractmethod
    def _path(self, utterance: Utterance) -> Path:
        """Where the utterance's file goes."""

    @abstractmethod
    def _failed(self, err: OSError) -> AudioUnavailableError:
        """What a file that cannot be created or written raises (nothing of it is left)."""

    @abstractmethod
    def _retry(self) -> None:
        """Called by begin() first: a sink that can become writable again tries it here."""

    @abstractmethod
    def recover(self) -> None: ...

    def start(self) -> None:
        if self._reason != "closed":
            self._reason = None  # nothing to open: the file is created by begin()

    def close(self) -> None:
        self._swap(None)
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

    def begin(self, utterance: Utterance) -> None:
        check_rate(utterance, self.sample_rate)
        self._retry()
        if self._reason is not None:
            raise AudioUnavailableError(self._reason)
        fade = ms_to_frames(self.fade_ms, self.sample_rate)
        shaper = Shaper(self.volume, fade)
        try:
            path = self._path(utterance)
            wav = WavWriter(utterance, path, self.sample_rate, shaper, fade, self.lead_in)
        except OSError as err:
            raise self._failed(err) from err
        self._swap(wav)

    def write(self, utterance: Utterance, pcm: np.ndarray, stop: threading.Event) -> bool:
        with self._lock:
            wav = self._current_for(utterance)
            if stop.is_set() or wav is None:
                return False
            try:
                wav.write(pcm)
            except OSError as err:
                self._current = None
                wav.discard()  # no partial file is left behind
                raise self._failed(err) from err
            return True

    def end(self, utterance: Utterance, stop: threading.Event, timeout: float) -> bool:
        with self._lock:
            wav = self._current_for(utterance)
            if wav is not None:
                self._current = None
        if wav is None:
            return False
        if stop.is_set():
            wav.discard()
            return False
        try:
            wav.commit()
        except OSError as err:
            wav.discard()
            raise self._failed(err) from err
        return True

    def interrupt(self, fade_ms: int | None = None) -> None:
        """Nothing is audible to fade: the partial file is dropped, write/end return False."""
        with self._lock:
            current, self._current = self._current, None
        if current is not None:
            current.utterance.interrupted = True
            current.discard()

    def set_volume(self, volume: float) -> None:
        with self._lock:
            self.volume = volume
            if self._current is not None:
                self._current.shaper.volume = volume

    def _swap(self, wav: WavWriter | None) -> None:
        """Make `wav` the current file; an unfinished one before it is discarded."""
        with self._lock:
            previous, self._current = self._current, wav
        if previous is not None:
            previous.discard()

    def _current_for(self, utterance: Utterance) -> WavWriter | None:
        current = self._current
        if current is not None and current.utterance is utterance:
            return current
        if utterance.interrupted:
            return None
        raise RuntimeError(f"write/end for {utterance.request_id!r} without begin()")
