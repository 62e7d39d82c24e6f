"""Which requests were already played, remembered across restarts.

A request is acknowledged only after it was played; if the daemon dies between playing
and acknowledging, the broker redelivers it, and this store keeps it from playing twice.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from pathlib import Path

from .atomic import write_text_atomically

_LOGGER = logging.getLogger(__name__)


class PlayedStore:
    def __init__(self, path: Path | None, capacity: int = 1000):
        self._path = path
        self._capacity = capacity
        self._lock = threading.Lock()
        self._save_lock = threading.Lock()  # one writer of the temporary file at a time
        self._keys: OrderedDict[str, None] = OrderedDict()
        self.problem: str | None = None  # why the history cannot be saved now, if so
        self._load()

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._keys

    def __len__(self) -> int:
        with self._lock:
            return len(self._keys)

    def add(self, key: str) -> None:
        with self._lock:
            self._keys[key] = None
            self._keys.move_to_end(key)
            while len(self._keys) > self._capacity:
                self._keys.popitem(last=False)
            snapshot = list(self._keys)
        self._save(snapshot)

    def _load(self) -> None:
        if self._path is None or not self._path.exists():
            return
        try:
            keys = json.loads(self._path.read_text("utf-8"))
            self._keys = OrderedDict((str(k), None) for k in keys[-self._capacity :])
        except (OSError, ValueError, TypeError) as err:
            _LOGGER.warning(
                "Ignoring unreadable %s (%s): starting with no history", self._path, err
            )

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
