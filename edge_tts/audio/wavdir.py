"""The sink for boards without a speaker: one WAV file per request in a directory.

A file appears under its final name only when complete (written under a hidden name,
then renamed), so a reader never sees half of one; an interrupted or failed utterance
leaves nothing. A directory that cannot be created or written degrades the output with
the reason; the next begin() or recover() tries it again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import threading
import time
import wave
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .dsp import Shaper, fade_out_gain, ms_to_frames
from .output import AudioUnavailableError, Utterance, check_rate

if TYPE_CHECKING:
    from ..config import AudioSettings

_LOGGER = logging.getLogger(__name__)

_PROBE_BYTES = 64 * 1024  # what a recovered WAV directory must take: a few blocks


class WavDirOutput:
    """Writes <directory>/<request id>.wav per utterance; a file appears only when complete."""

    def __init__(self, settings: AudioSettings, sample_rate: int) -> None:
        if settings.wav_dir is None:
            raise ValueError("the wav-dir sink needs a directory (wav_dir)")
        self.directory = Path(settings.wav_dir)
        self.sample_rate = sample_rate
        self.volume = settings.volume
        self.fade_ms = settings.fade_ms
        self._lock = threading.Lock()
        self._reason: str | None = "not started"
        self._current: _WavFile | None = None

    def start(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            reason = f"cannot create {self.directory}: {err}"
            if reason != self._reason:
                _LOGGER.warning("WAV output degraded: %s", reason)
            self._reason = reason
            return
        self._reason = None

    def close(self) -> None:
        with self._lock:
            current, self._current = self._current, None
        if current is not None:
            current.discard()
        self._reason = "closed"

    @property
    def healthy(self) -> bool:
        return self._reason is None and os.access(self.directory, os.W_OK | os.X_OK)

    @property
    def alive(self) -> bool:
        return True  # nothing runs in the background: begin() retries the directory itself

    @property
    def status(self) -> str:
        return "ok" if self._reason is None else f"degraded: {self._reason}"

    @property
    def underruns(self) -> int:
        return 0

    def begin(self, utterance: Utterance) -> None:
        check_rate(utterance, self.sample_rate)
        if self._reason is not None and self._reason != "closed":
            self.start()  # the directory may be writable again
        if self._reason is not None:
            raise AudioUnavailableError(self._reason)
        shaper = Shaper(self.volume, ms_to_frames(self.fade_ms, self.sample_rate))
        fade_out = ms_to_frames(self.fade_ms, self.sample_rate)
        final = self.directory / f"{safe_name(utterance.request_id)}.wav"
        try:
            wav = _WavFile(utterance, final, self.sample_rate, shaper, fade_out)
        except OSError as err:
            self._reason = f"cannot write into {self.directory}: {err}"
            raise AudioUnavailableError(self._reason) from err
        with self._lock:
            previous, self._current = self._current, wav
        if previous is not None:
            previous.discard()

    def write(self, utterance: Utterance, pcm: np.ndarray, stop: threading.Event) -> bool:
        with self._lock:
            wav = self._current_for(utterance)
            if stop.is_set() or wav is None:
                return False
            try:
                return wav.write(pcm)
            except OSError as err:
                self._current = None
                raise self._write_failed(wav, err) from err

    def end(self, utterance: Utterance, stop: threading.Event, timeout: float) -> bool:
        with self._lock:
            wav = self._current_for(utterance)
            self._current = None
        if wav is None:
            return False
        if stop.is_set():
            wav.discard()
            return False
        try:
            wav.commit()
        except OSError as err:
            raise self._write_failed(wav, err) from err
        self._reason = None  # a whole file was written: the directory works again
        return True

    def recover(self) -> None:
        """While degraded, probe the directory (a full disk still lets an empty file be
        created, so the probe writes data), so the status clears without a request."""
        if self._reason is None or self._reason == "closed":
            return
        probe = self.directory / f".probe.{secrets.token_hex(4)}"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with probe.open("wb") as file:
                file.write(bytes(_PROBE_BYTES))
                file.flush()
                os.fsync(file.fileno())
        except OSError:
            return
        finally:
            with contextlib.suppress(OSError):
                probe.unlink(missing_ok=True)
        _LOGGER.info("WAV output recovered: %s is writable again", self.directory)
        self._reason = None

    def _write_failed(self, wav: _WavFile, err: OSError) -> AudioUnavailableError:
        wav.discard()  # no partial file is left behind
        reason = f"cannot write into {self.directory}: {err.strerror or err}"
        if reason != self._reason:
            _LOGGER.warning("WAV output degraded: %s", reason)
        self._reason = reason
        return AudioUnavailableError(reason)

    def interrupt(self, fade_ms: int | None = None) -> None:
        """Nothing is audible to fade: the partial file is dropped, write/end return False."""
        with self._lock:
            current, self._current = self._current, None
        if current is not None:
            current.utterance.interrupted = True
            current.discard()

    def _current_for(self, utterance: Utterance) -> _WavFile | None:
        current = self._current
        if current is not None and current.utterance is utterance:
            return current
        if utterance.interrupted:
            return None
        raise RuntimeError(f"write/end for {utterance.request_id!r} without begin()")


class _WavFile:
    """One utterance's WAV under a hidden temporary name until commit() renames it."""

    def __init__(
        self, utterance: Utterance, final: Path, rate: int, shaper: Shaper, fade_out: int
    ) -> None:
        self.utterance = utterance
        self.final = final
        self.temp = final.with_name(f".{final.stem}.{secrets.token_hex(4)}.part")
        self._shaper = shaper
        self._fade_out = fade_out
        self._tail = np.zeros(0, dtype=np.int16)  # held back until end() to fade it out
        fd = os.open(self.temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        self._file = os.fdopen(fd, "wb")
        self._wav = wave.open(self._file, "wb")  # noqa: SIM115 - closed in commit/discard
        self._wav.setnchannels(1)
        self._wav.setsampwidth(2)
        self._wav.setframerate(rate)

    def write(self, pcm: np.ndarray) -> bool:
        data = np.concatenate((self._tail, self._shaper(pcm)))
        cut = max(0, data.size - self._fade_out)
        self._tail = data[cut:]
        if cut:
            self._wav.writeframes(data[:cut].astype("<i2").tobytes())
            if self.utterance.first_sample_at is None:
                self.utterance.first_sample_at = time.monotonic()
        return True

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


def safe_name(request_id: str) -> str:
    """A file name from a request id: no path separators, no leading dot, bounded length."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", request_id).lstrip(".")[:120]
    return name or "utterance"
