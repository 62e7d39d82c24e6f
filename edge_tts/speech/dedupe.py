"""Which requests were already played, remembered across restarts.

A request is acknowledged only after it was played; if the daemon dies between playing
and acknowledging, the broker redelivers it, and this store keeps it from playing twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from pathlib import Path

from ..state import read as state_file
from ..state.atomic import write_text_atomically

_LOGGER = logging.getLogger(__name__)

# A sender's id has no length limit; a longer key is kept as its digest, which bounds the
# file (and what a start reads of it) by the capacity.
MAX_KEY_CHARS = 128
FILE_NAME = "played.json"  # in the state directory
CAPACITY = 1000  # requests remembered
_MAX_KEY_JSON_BYTES = 12 * MAX_KEY_CHARS + 4  # each character a \u surrogate pair, quotes, ", "


def stored_key(key: str) -> str:
    if len(key) <= MAX_KEY_CHARS:
        return key
    return "sha256:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _max_file_bytes(capacity: int) -> int:
    return 2 + capacity * _MAX_KEY_JSON_BYTES


def problem(path: Path) -> str | None:
    """Why the history at `path` cannot be used; None when it can (or there is none)."""
    return state_file.problem(path, _max_file_bytes(CAPACITY), _keys)


def _keys(value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise state_file.Unusable("not a list of strings")
    return [stored_key(k) for k in value]


class PlayedStore:
    def __init__(self, path: Path | None, capacity: int = CAPACITY):
        self._path = path
        self._capacity = capacity
        self._lock = threading.Lock()
        self._save_lock = threading.Lock()  # one writer of the temporary file at a time
        self._keys: OrderedDict[str, None] = OrderedDict()
        self.problem: str | None = None  # why the history cannot be saved now, if so
        self._load()

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return stored_key(key) in self._keys

    def __len__(self) -> int:
        with self._lock:
            return len(self._keys)

    def add(self, key: str) -> None:
        key = stored_key(key)
        with self._lock:
            self._keys[key] = None
            self._keys.move_to_end(key)
            while len(self._keys) > self._capacity:
                self._keys.popitem(last=False)
            snapshot = list(self._keys)
        self._save(snapshot)

    def discard(self, key: str) -> None:
        """Forget `key`; saved at once when it was there (a rare event, see the caller)."""
        key = stored_key(key)
        with self._lock:
            if key not in self._keys:
                return
            del self._keys[key]
            snapshot = list(self._keys)
        self._save(snapshot)

    def _load(self) -> None:
        if self._path is None:
            return
        keys = state_file.load_json(
            self._path,
            _max_file_bytes(self._capacity),
            _keys,
            "starting with no played-request history",
        )
        self._keys = OrderedDict((k, None) for k in (keys or [])[-self._capacity :])

    def recover(self) -> None:
        """Retry a failed save (the disk may be fixed): the status clears by itself."""
        if self.problem is None or self._path is None:
            return
        with self._save_lock:
            with self._lock:
                snapshot = list(self._keys)
            self._write(self._path, snapshot)

    def _save(self, keys: list[str]) -> None:
        if self._path is None:
            return
        with self._save_lock:
            self._write(self._path, keys)

    def _write(self, path: Path, keys: list[str]) -> None:
        try:
            write_text_atomically(path, json.dumps(keys))
        except OSError as err:
            problem = f"cannot save played-request history to {path}: {err.strerror or err}"
            if problem != self.problem:
                _LOGGER.error("%s; a redelivery after a crash could play twice", problem)
            self.problem = problem
            return
        if self.problem is not None:
            _LOGGER.info("Played-request history is saved again to %s", path)
        self.problem = None
