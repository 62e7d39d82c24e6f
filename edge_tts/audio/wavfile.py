"""The sink of `edge-ttsd say --out FILE.wav`: one utterance into one named WAV file.

The file is written as the wav-dir sink writes each of its files (wav.py: under a hidden
name until complete, with the volume and fades a sound card would play), so `say --out`
hears what the daemon plays. Unlike the wav-dir sink the caller names the file, and there
is nothing to retry: an unwritable path is an error of this one request.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .output import AudioUnavailableError, Utterance
from .wav import WavOutput

if TYPE_CHECKING:
    from ..config import AudioSettings


class WavFileOutput(WavOutput):
    """Writes the utterance to `path`; the file appears only when it is complete."""

    def __init__(self, path: Path, settings: AudioSettings, sample_rate: int) -> None:
        super().__init__(settings, sample_rate)
        self.path = path

    def recover(self) -> None:
        """Nothing to retry: a path that cannot be written fails its one request."""

    def _retry(self) -> None:
        """Nothing to retry (see recover)."""

    def _path(self, utterance: Utterance) -> Path:
        return self.path

    def _failed(self, err: OSError) -> AudioUnavailableError:
        return AudioUnavailableError(f"cannot write {self.path}: {err.strerror or err}")
