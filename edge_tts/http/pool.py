"""The audio of /invoke, kept until /download takes it: bounded in entries, bytes and age.

A request reserves its place and the bytes it is expected to take before its synthesis
starts (`reserve`), and grows the reservation as its audio comes (`grow`), so the sum of
what is stored and what is being made never passes `max_bytes`: a full pool answers at
once rather than after the work, and audio that can never fit is refused as soon as the
stream proves it (TooLarge), not after it is all made. The audio then goes in (`put`)
under an id nobody can guess, and comes out once (`take`). An entry not taken within
`ttl` is freed. Full means full: the pool never grows past its bounds; PoolFull says
when there will be room (`retry_after`).
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    data: bytes
    expires_at: float


@dataclass
class Reservation:
    """A place in the pool and the bytes it holds for audio being made."""

    size: int
    open: bool = True


class PoolFull(Exception):
    """No room now: `retry_after` seconds until there should be."""

    def __init__(self, reason: str, retry_after: int) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class TooLarge(Exception):
    """Audio of `size` bytes can never fit a pool of `limit` bytes."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size} bytes of audio; the pool holds at most {limit}")
        self.size = size
        self.limit = limit


class AudioPool:
    def __init__(
        self,
        max_entries: int,
        max_bytes: int,
        ttl: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, Entry] = OrderedDict()  # oldest first
        self._bytes = 0  # stored
        self._reservations: list[Reservation] = []

    def reserve(self, size: int) -> Reservation:
        """A place for one entry and `size` bytes (the expected audio, at most the
        pool); PoolFull when there is no room for them now."""
        size = min(size, self.max_bytes)
        with self._lock:
            self._expire()
            if len(self._entries) + len(self._reservations) >= self.max_entries:
                raise PoolFull(f"{self.max_entries} entries wait for download", self._wait(0))
            self._check_room(size)
            reservation = Reservation(size)
            self._reservations.append(reservation)
            return reservation

    def grow(self, reservation: Reservation, size: int) -> None:
        """The audio being made has reached `size` bytes: TooLarge beyond the pool,
        PoolFull when the rest of the pool is taken (the place is kept either way)."""
        if size > self.max_bytes:
            raise TooLarge(size, self.max_bytes)
        with self._lock:
            if size <= reservation.size:
                return
            self._expire()
            self._check_room(size - reservation.size)
            reservation.size = size

    def release(self, reservation: Reservation) -> None:
        """A reserved place that will not be used (the synthesis failed or was refused)."""
        with self._lock:
            self._drop(reservation)

    def put(self, reservation: Reservation, data: bytes) -> str:
        """Fill a reserved place; its id. TooLarge or PoolFull when the bytes do not fit
        (the place is released either way)."""
        try:
            self.grow(reservation, len(data))
        except (TooLarge, PoolFull):
            self.release(reservation)
            raise
        with self._lock:
            self._drop(reservation)
            audio_id = secrets.token_urlsafe(16)
            self._entries[audio_id] = Entry(data, self._clock() + self.ttl)
            self._bytes += len(data)
            return audio_id

    def take(self, audio_id: str) -> bytes | None:
        """The entry's audio, once; None when it is unknown, taken or expired."""
        with self._lock:
            self._expire()
            entry = self._entries.pop(audio_id, None)
            if entry is None:
                return None
            self._bytes -= len(entry.data)
            return entry.data

    def gauges(self) -> dict[str, int]:
        with self._lock:
            self._expire()
            reserved = sum(r.size for r in self._reservations)
            return {"entries": len(self._entries), "bytes": self._bytes, "reserved": reserved}

    def _check_room(self, more: int) -> None:
        if self._taken() + more > self.max_bytes:
            reason = f"{self._taken()} of its {self.max_bytes} bytes are taken"
            raise PoolFull(reason, self._wait(more))

    def _taken(self) -> int:
        return self._bytes + sum(r.size for r in self._reservations)

    def _drop(self, reservation: Reservation) -> None:
        if reservation.open:
            reservation.open = False
            self._reservations.remove(reservation)

    def _expire(self) -> None:
        now = self._clock()
        while self._entries:
            audio_id, entry = next(iter(self._entries.items()))
            if entry.expires_at > now:
                break
            del self._entries[audio_id]
            self._bytes -= len(entry.data)

    def _wait(self, more: int) -> int:
        """Whole seconds (at least 1) until the oldest entries' expiry makes room for one
        more entry of `more` bytes. When stored entries alone cannot make it (audio being
        made holds the rest), `ttl`: the longest that audio can wait once stored."""
        now = self._clock()
        entries = len(self._entries) + len(self._reservations)
        taken = self._taken()
        for entry in self._entries.values():
            entries -= 1
            taken -= len(entry.data)
            if entries < self.max_entries and taken + more <= self.max_bytes:
                return max(1, math.ceil(entry.expires_at - now))
        return max(1, math.ceil(self.ttl))
