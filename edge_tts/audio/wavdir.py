"""The sink for boards without a speaker: one WAV file per request in a directory.

A file appears under its final name only when complete (written under a hidden name,
then renamed: wav.py), so a reader never sees half of one; an interrupted or failed
utterance leaves nothing. A directory that cannot be created degrades the output with
the reason; the next begin() or recover() tries it again. A file that could not be
written degrades it until a whole file is written: each request is still tried, but the
health tick's probe cannot clear it (a nearly full disk takes the probe, not a WAV).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .output import AudioUnavailableError, Utterance
from .wav import WavOutput

if TYPE_CHECKING:
    from ..config import AudioSettings

_LOGGER = logging.getLogger(__name__)

_PROBE_BYTES = 64 * 1024  # what a recovered WAV directory must take: a few blocks


class WavDirOutput(WavOutput):
    """Writes <directory>/<request id>.wav per utterance; a file appears only when complete."""

    def __init__(self, settings: AudioSettings, sample_rate: int) -> None:
        if settings.wav_dir is None:
            raise ValueError("the wav-dir sink needs a directory (wav_dir)")
        super().__init__(settings, sample_rate)
        self.directory = Path(settings.wav_dir)
        self._write_failure: str | None = None  # why the last real write failed, if so

    def start(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            self._degrade(f"cannot create {self.directory}: {err}")
            return
        self._reason = None

    @property
    def healthy(self) -> bool:
        return self._problem() is None and os.access(self.directory, os.W_OK | os.X_OK)

    @property
    def status(self) -> str:
        problem = self._problem()
        return "ok" if problem is None else f"degraded: {problem}"

    def end(self, utterance: Utterance, stop: threading.Event, timeout: float) -> bool:
        written = super().end(utterance, stop, timeout)
        if written and self._write_failure is not None:
            _LOGGER.info("WAV output recovered: a whole file was written to %s", self.directory)
            self._write_failure = None
        return written

    def recover(self) -> None:
        """While the directory could not be created, probe it (a full disk still lets an
        empty file be created, so the probe writes data), so the status clears without a
        request. A failed real write is not cleared here: only a written file clears it."""
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

    def _retry(self) -> None:
        if self._reason != "closed" and self._problem() is not None:
            self.start()  # the directory may be back, or writable again

    def _path(self, utterance: Utterance) -> Path:
        return self.directory / f"{safe_name(utterance.request_id)}.wav"

    def _failed(self, err: OSError) -> AudioUnavailableError:
        failure = f"cannot write into {self.directory}: {err.strerror or err}"
        if failure != self._write_failure:
            _LOGGER.warning("WAV output degraded: %s", failure)
        self._write_failure = failure
        return AudioUnavailableError(failure)

    def _problem(self) -> str | None:
        return self._reason or self._write_failure

    def _degrade(self, reason: str) -> str:
        if reason != self._reason:
            _LOGGER.warning("WAV output degraded: %s", reason)
        self._reason = reason
        return reason


def safe_name(request_id: str) -> str:
    """A file name from a request id: no path separators, no leading dot, bounded length."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", request_id).lstrip(".")[:120]
    return name or "utterance"
