"""The cache's index in memory: each entry's size, least recently used first, and the
pinned set (the configured phrases) that eviction passes over. No files, no lock: the
store (store.py) holds its lock around every call."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable


class Recency:
    def __init__(self, max_bytes: int, max_entries: int) -> None:
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.bytes = 0
        self.pinned: frozenset[str] = frozenset()
        self._sizes: OrderedDict[str, int] = OrderedDict()  # digest → bytes, oldest first

    def __contains__(self, digest: str) -> bool:
        return digest in self._sizes

    def __len__(self) -> int:
        return len(self._sizes)

    def add(self, digest: str, size: int) -> None:
        """The newest entry (or one found at start, oldest first)."""
        self.pop(digest)
        self._sizes[digest] = size
        self.bytes += size

    def pop(self, digest: str) -> int | None:
        size = self._sizes.pop(digest, None)
        if size is not None:
            self.bytes -= size
        return size

    def touch(self, digest: str) -> None:
        if digest in self._sizes:
            self._sizes.move_to_end(digest)

    def pin(self, digests: Iterable[str]) -> None:
        self.pinned = frozenset(digests)

    def victims(self, size: int) -> list[str] | None:
        """The least recently used unpinned entries to remove so that `size` more bytes
        (and, with a size, one more entry) fit; None when they cannot. A phrase never
        pushes out another: the phrases beyond max_mb stay out, rather than each pass of
        the pre-renderer evicting the ones the last pass rendered."""
        over_bytes = self.bytes + size - self.max_bytes
        over_count = len(self._sizes) + (1 if size else 0) - self.max_entries
        victims: list[str] = []
        for digest, bytes_ in self._sizes.items():
            if over_bytes <= 0 and over_count <= 0:
                break
            if digest not in self.pinned:
                victims.append(digest)
                over_bytes -= bytes_
                over_count -= 1
        return None if over_bytes > 0 or over_count > 0 else victims

    def pinned_sizes(self) -> list[int]:
        return [size for digest, size in self._sizes.items() if digest in self.pinned]
