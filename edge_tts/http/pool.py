"""The audio of /invoke, kept until /download takes it: bounded in entries, bytes and age.

A request takes a place before its synthesis starts (`reserve`), so a full pool answers
at once rather than after the work; the audio then goes in (`put`) under an id nobody
can guess, and comes out once (`take`). An entry not taken within `ttl` is freed. Full
means full: the pool never grows past its bounds, the caller answers 503 with
Retry-After (`retry_after`: when the oldest entry expires).
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


class PoolFull(Exception):
    """No room: `retry_after` seconds until some should be free."""

    def __init__(self, reason: str, retry_after: int) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


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
        self._bytes = 0
        self._reserved = 0  # places taken by syntheses still running

    def reserve(self) -> None:
        """A place for one entry; PoolFull when there is none."""
        with self._lock:
            self._expire()
            if len(self._entries) + self._reserved >= self.max_entries:
                raise PoolFull(f"{self.max_entries} entries wait for download", self._wait())
            if self._bytes >= self.max_bytes:
                raise PoolFull(f"{self.max_bytes} bytes wait for download", self._wait())
            self._reserved += 1

    def release(self) -> None:
        """A reserved place that will not be used (the synthesis failed)."""
        with self._lock:
            self._reserved -= 1

    def put(self, data: bytes) -> str:
        """Fill a reserved place; its id. PoolFull when the bytes would not fit (the place
        is released either way)."""
        with self._lock:
            self._reserved -= 1
            self._expire()
            if self._bytes + len(data) > self.max_bytes:
                raise PoolFull(
                    f"{len(data)} more bytes would exceed the pool's {self.max_bytes}",
                    self._wait(),
                )
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
            return {"entries": len(self._entries), "bytes": self._bytes}

    def _expire(self) -> None:
        now = self._clock()
        while self._entries:
            audio_id, entry = next(iter(self._entries.items()))
            if entry.expires_at > now:
                break
            del self._entries[audio_id]
            self._bytes -= len(entry.data)

    def _wait(self) -> int:
        """Whole seconds until the oldest entry expires (at least 1)."""
        if not self._entries:
            return 1
        oldest = next(iter(self._entries.values()))
        return max(1, math.ceil(oldest.expires_at - self._clock()))
