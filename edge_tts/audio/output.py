"""What the pipeline plays into: the `AudioOutput` contract (audio/sinks.py picks a sink).

Two sinks implement it: `AlsaOutput` (audio/alsa.py: one PortAudio stream for the
daemon's life) and `WavDirOutput` (audio/wavdir.py: a WAV file per request, for boards
without a speaker). tests/test_output_contract.py holds both, and the tests' fake, to the
promises written here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    pass


class AudioUnavailableError(RuntimeError):
    """The output cannot take a request now; the message says why."""


@dataclass(eq=False)
class Utterance:
    """One request's audio passing through the output."""

    request_id: str
    sample_rate: int
    first_sample_at: float | None = None  # monotonic time its first frame went to ALSA
    finished_at: float | None = None
    interrupted: bool = False


class AudioOutput(Protocol):
    """Plays one utterance at a time: begin(), write() its pieces, end().

    The output applies the volume and fades in an utterance's first and out its last
    `fade_ms`. `status` is "ok" or "degraded: <reason>"; while degraded, begin() raises
    `AudioUnavailableError` with that reason, and the output retries by itself or when
    recover() is called (the daemon's health tick calls it).
    """

    def start(self) -> None:
        """Open the device; a missing one degrades the output, it does not raise."""

    def close(self) -> None:
        """Release the device; idempotent. Afterwards the status is "degraded: closed"."""

    @property
    def healthy(self) -> bool:
        """It can play now."""

    @property
    def alive(self) -> bool:
        """What keeps it (re)opening the device runs: a missing card is degraded, not dead."""

    @property
    def status(self) -> str:
        """`ok`, or `degraded: <reason>`."""

    @property
    def underruns(self) -> int:
        """How often a playing utterance ran out of audio (idle silence is not one)."""

    def begin(self, utterance: Utterance) -> None:
        """Take a new utterance. ValueError unless it is at the output's rate;
        AudioUnavailableError (with the reason) when the output cannot play it."""

    def write(self, utterance: Utterance, pcm: np.ndarray, stop: threading.Event) -> bool:
        """Queue int16 mono PCM; blocks while the device is behind. True when all of it was
        taken; False, promptly, once `stop` is set or the utterance was interrupted.
        AudioUnavailableError when the output fails on the way (the utterance is lost)."""

    def end(self, utterance: Utterance, stop: threading.Event, timeout: float) -> bool:
        """Fade out its last frames and wait until the last one is played: True then, with
        `finished_at` set; False on stop, interrupt, a lost device or after `timeout`."""

    def interrupt(self, fade_ms: int | None = None) -> None:
        """Fade out what plays within `fade_ms` (default: the output's) and drop the rest:
        those utterances are marked interrupted, their write() and end() return False."""

    def recover(self) -> None:
        """Called periodically: a degraded output may retry its device here."""

    def set_volume(self, volume: float) -> None:
        """Change the gain now, for the utterance being written and every later one; audio
        already buffered ahead of the device (at most `ring_buffer_seconds`) keeps its own."""


def check_rate(utterance: Utterance, rate: int) -> None:
    if utterance.sample_rate != rate:
        raise ValueError(
            f"utterance {utterance.request_id!r} is at {utterance.sample_rate} Hz, the output "
            f"at {rate} Hz: resample before playing"
        )
