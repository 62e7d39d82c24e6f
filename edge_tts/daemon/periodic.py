"""A named thread that runs one action every `interval` seconds until stopped."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

_LOGGER = logging.getLogger(__name__)


class Periodic:
    def __init__(
        self, name: str, interval: float, action: Callable[[], object], at_start: bool = False
    ) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be positive, got {interval}")
        self.name = name
        self._interval = interval
        self._action = action
        self._at_start = at_start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
            if self._thread.is_alive():
                _LOGGER.warning("%s thread did not stop within %.1f s", self.name, timeout)

    def _run(self) -> None:
        if self._at_start:
            self._step()
        while not self._stop.wait(self._interval):
            self._step()

    def _step(self) -> None:
        try:
            self._action()
        except Exception:  # the loop is what keeps the component alive: it must not die
            _LOGGER.exception("%s failed", self.name)
