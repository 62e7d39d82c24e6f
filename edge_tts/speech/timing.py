"""A request's instants, stamped by the engine on the request itself, and the one
definition of its time to first audio and real-time factor for every door.

Time to first audio counts from `received_at`, the instant the engine has the request's
text, to `first_audio_at`, the instant its first audio reached its sink: the sound card
took the first sample (a request played here), or the door took the first piece for its
client's connection (a Wyoming or HTTP response). docs/synthesis.md says which instant
each door's `received_at` is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class Timing:
    """Monotonic seconds; each stamp is written once, by one thread at a time (the
    playback thread for a local request, the door's event loop for a response)."""

    received_at: float | None = None  # the engine has the request
    first_audio_at: float | None = None  # its first audio reached its sink
    finished_at: float | None = None  # its last audio reached its sink
    audio_seconds: float = 0.0  # the audio that reached its sink
    synth_seconds: float = 0.0  # the engine's time making it (its workers', summed)

    def received(self, at: float | None = None) -> None:
        if self.received_at is None:
            self.received_at = time.monotonic() if at is None else at

    def first_audio(self, at: float | None = None) -> None:
        if self.first_audio_at is None:
            self.first_audio_at = time.monotonic() if at is None else at

    def finished(self, at: float | None = None) -> None:
        self.finished_at = time.monotonic() if at is None else at

    @property
    def time_to_first_audio_s(self) -> float | None:
        """None while (or when) no audio has reached the sink."""
        if self.first_audio_at is None or self.received_at is None:
            return None
        return self.first_audio_at - self.received_at

    @property
    def time_to_first_audio_ms(self) -> float | None:
        ttfa = self.time_to_first_audio_s
        return None if ttfa is None else ttfa * 1000

    @property
    def real_time_factor(self) -> float | None:
        """The time making the audio per second of it; None without audio."""
        return self.synth_seconds / self.audio_seconds if self.audio_seconds else None
