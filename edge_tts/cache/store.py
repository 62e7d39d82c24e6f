"""Cache entries on disk, an index of them in memory, least recently used out first.

Files are `<directory>/<key digest>.pcm` (entry.py). An entry is written under a hidden
temporary name and renamed into place, so a reader sees no file or the whole file; it is
not fsynced, because its checksum already catches what a power cut could leave (a torn
or empty file is discarded on read, never played). Only the index lives in memory (name,
size, recency; bounded by MAX_ENTRIES), never audio; recency survives a restart as the
files' mtimes, touched on each hit.

The pinned entries (the configured phrases, `pin`) are never evicted to make room: a
phrase that does not fit beside them is not stored; unpinning (the phrase list changed)
lets them age out like the others. A directory that cannot be written
(read-only, full) sets `problem`; the daemon keeps speaking without storing and reports
it. Only a stored entry clears a failed write (a nearly full disk takes the health tick's
small probe, not an entry); `recover()` probes only a directory that could not be opened.

Something other than a file under an entry's name (a directory made by hand) is set
aside: renamed to a hidden `.<name>.<random>.set-aside` beside it, with a warning, so
nothing in it is lost and the entry can be stored again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from ..state.read import read_bounded
from .entry import CorruptEntry, Entry, decode, encode
from .key import ChunkKey
from .recency import Recency

_LOGGER = logging.getLogger(__name__)

MAX_ENTRIES = 5000  # bounds the index (~100 bytes each) whatever max_mb allows
# Bounds one entry (what a read allocates) whatever max_mb allows: 64 MiB is over 6
# minutes of 44.1 kHz float32, far beyond a chunk; a longer one is spoken, not stored.
MAX_ENTRY_BYTES = 64 * 2**20
_NAME = re.compile(r"^[0-9a-f]{40}\.pcm$")
_PROBE_BYTES = 64 * 1024  # what a recovered directory must take: about one short entry


class CacheStore:
    def __init__(
        self,
        directory: Path,
        max_bytes: int,
        max_entries: int = MAX_ENTRIES,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        """`on_change` is called when a pinned entry is lost or writing works again: what
        the pre-renderer waits for to render a phrase again."""
        self.directory = directory
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.max_entry_bytes = min(max_bytes, MAX_ENTRY_BYTES)  # put stores none larger
        self.on_change = on_change or (lambda: None)
        self.problem: str | None = None  # why nothing can be stored now, if so
        self.discarded = 0  # corrupt or truncated entries found and removed
        self._lock = threading.Lock()
        self._index = Recency(max_bytes, max_entries)
        self._scanned = False

    # --- start --------------------------------------------------------------------------

    def open(self) -> None:
        """Index what a previous run left; a directory that cannot be made degrades."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            found, too_large = _scan(self.directory, self.max_entry_bytes)
            self.discarded += too_large
        except OSError as err:
            self._fail("open", err)
            return
        with self._lock:
            for digest, size in found:
                self._index.add(digest, size)
            self._scanned = True
            self._evict(0)  # max_mb may have shrunk since
        _LOGGER.info(
            "Phrase cache %s: %d entries, %.1f MiB",
            self.directory,
            len(found),
            self._index.bytes / 2**20,
        )

    # --- reading ------------------------------------------------------------------------

    def contains(self, key: ChunkKey) -> bool:
        with self._lock:
            return key.digest in self._index

    def get(self, key: ChunkKey) -> Entry | None:
        """The intact entry for `key`, or None; a corrupt one is removed on the way."""
        with self._lock:
            if key.digest not in self._index:
                return None
        path = self._path(key.digest)
        try:
            entry = decode(read_bounded(path, self.max_entry_bytes), key)
        except FileNotFoundError:  # removed behind our back
            self._drop(key.digest)
            return None
        except IsADirectoryError:  # made by hand: put() may store the entry again
            self._drop(key.digest)
            with contextlib.suppress(OSError):  # put() reports it if it is in the way
                _set_aside(path)
            return None
        except OSError as err:
            _LOGGER.warning("Cannot read cache entry %s: %s", path, err.strerror or err)
            return None
        except (CorruptEntry, ValueError) as err:  # read_bounded's Unusable too
            _LOGGER.warning("Discarding cache entry %s for %r: %s", path.name, key.text[:60], err)
            self.discarded += 1
            self.discard(key.digest)
            return None
        with self._lock:
            self._index.touch(key.digest)
        with contextlib.suppress(OSError):
            os.utime(path)  # recency for the next start's order
        return entry

    # --- writing ------------------------------------------------------------------------

    def put(self, key: ChunkKey, audio: np.ndarray) -> bool:
        """Store `audio` under `key`: True when stored (or there already), False when it
        did not fit or could not be written (`problem` says why, for the latter)."""
        if not self._scanned:
            return False  # the directory could not be opened; recover() retries it
        with self._lock:
            if key.digest in self._index:
                return True  # first one wins: both are renderings of the same key
        data = encode(key, audio)
        if len(data) > self.max_entry_bytes:
            return False
        temp = self.directory / f".{key.digest}.{secrets.token_hex(4)}.tmp"
        try:
            temp.write_bytes(data)
            with self._lock:
                stored = self._admit(key.digest, len(data), temp)
        except OSError as err:
            with contextlib.suppress(OSError):
                temp.unlink(missing_ok=True)
            self._fail("write into", err)
            return False
        if not stored:
            with contextlib.suppress(OSError):
                temp.unlink(missing_ok=True)
        self._ok()
        return stored

    def _admit(self, digest: str, size: int, temp: Path) -> bool:
        """Make room and rename the written file into place (under the lock)."""
        if not self._evict(size):
            return False
        path = self._path(digest)
        try:
            os.replace(temp, path)
        except IsADirectoryError:
            _set_aside(path)
            os.replace(temp, path)
        self._index.add(digest, size)
        return True

    def _evict(self, size: int) -> bool:
        """Make room for `size` more bytes (`Recency.victims`); False, removing nothing,
        when they cannot fit."""
        victims = self._index.victims(size)
        if victims is None:
            return False
        for digest in victims:
            self._remove(digest)
        return True

    def discard(self, digest: str) -> None:
        """Remove an entry (corrupt, or superseded by a better build's)."""
        with self._lock:
            was_pinned = digest in self._index.pinned and digest in self._index
            self._remove(digest)
        if was_pinned:
            self.on_change()

    def _drop(self, digest: str) -> None:
        with self._lock:
            self._index.pop(digest)

    def _remove(self, digest: str) -> None:
        self._index.pop(digest)
        with contextlib.suppress(OSError):
            self._path(digest).unlink(missing_ok=True)

    def pin(self, digests: Iterable[str]) -> None:
        """These entries (present or to come) are the phrases: kept before anything else.
        Replaces the previous set, so phrases taken out of the config age out again."""
        with self._lock:
            self._index.pin(digests)

    # --- health -------------------------------------------------------------------------

    def recover(self) -> None:
        """Called periodically: while the directory could not be opened, probe it (a full
        disk still takes an empty file, so the probe writes data) and open it when that
        works. A failed write is not cleared here: only a stored entry clears it."""
        if self.problem is None or self._scanned:
            return
        probe = self.directory / f".probe.{secrets.token_hex(4)}.tmp"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            probe.write_bytes(bytes(_PROBE_BYTES))
        except OSError:
            return
        finally:
            with contextlib.suppress(OSError):
                probe.unlink(missing_ok=True)
        self.open()
        if self._scanned:
            self._ok()

    def _fail(self, action: str, err: OSError) -> None:
        problem = f"cannot {action} {self.directory}: {err.strerror or err}"
        if problem != self.problem:
            _LOGGER.error("Phrase cache: %s; speaking without storing", problem)
        self.problem = problem

    def _ok(self) -> None:
        if self.problem is None:
            return
        _LOGGER.info("Phrase cache %s can be written again", self.directory)
        self.problem = None
        self.on_change()

    def stats(self) -> dict[str, int]:
        with self._lock:
            pinned = self._index.pinned_sizes()
            return {
                "entries": len(self._index),
                "bytes": self._index.bytes,
                "max_bytes": self.max_bytes,
                "phrase_entries": len(pinned),
                "phrase_bytes": sum(pinned),
                "discarded": self.discarded,
            }

    def _path(self, digest: str) -> Path:
        return self.directory / f"{digest}.pcm"


def _scan(directory: Path, max_bytes: int) -> tuple[list[tuple[str, int]], int]:
    """The entries a previous run left, oldest first, and how many were too large to be
    one: those are removed, as is a crash's temporary file; a directory under an entry's
    name is set aside."""
    entries, discarded = [], 0
    for item in os.scandir(directory):
        if item.name.startswith(".") and item.name.endswith(".tmp"):
            with contextlib.suppress(OSError):  # left by a crash mid-write
                os.unlink(item.path)
        elif _NAME.match(item.name) and item.is_dir():
            with contextlib.suppress(OSError):  # put() reports it if it is in the way
                _set_aside(Path(item.path))
        elif _NAME.match(item.name):
            stat = item.stat()
            if stat.st_size > max_bytes:  # no entry stored is that large
                _LOGGER.warning("Discarding cache entry %s: %d bytes", item.name, stat.st_size)
                discarded += 1
                with contextlib.suppress(OSError):
                    os.unlink(item.path)
                continue
            entries.append((stat.st_mtime, item.name[:-4], stat.st_size))
    entries.sort()
    return [(digest, size) for _, digest, size in entries], discarded


def _set_aside(path: Path) -> None:
    aside = path.with_name(f".{path.name}.{secrets.token_hex(4)}.set-aside")
    try:
        os.rename(path, aside)
    except OSError as err:
        _LOGGER.warning("Phrase cache: cannot move %s (not a cache entry) aside: %s", path, err)
        raise
    _LOGGER.warning("Phrase cache: %s is not a cache entry; moved it to %s", path, aside.name)
