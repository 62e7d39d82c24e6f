"""One thread, one tick: every periodic duty of the daemon, each when it is due.

uvicorn's `on_tick` is the model: no thread per duty, and one list in the daemon's
wiring (app.py) says what runs how often (the health checks and the watchdog ping,
telemetry). A duty that raises is logged and runs again at its next turn; a duty that
overruns delays the others, so duties are quick (they read state, they do not wait).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class Duty:
    name: str
    every: float  # seconds between two runs
    action: Callable[[], object]
    at_start: bool = False  # also once at once (the first watchdog ping comes early)


class Tick:
    def __init__(self, duties: Sequence[Duty], name: str = "tick") -> None:
        for duty in duties:
            if duty.every <= 0:
                raise ValueError(f"{duty.name}: interval must be positive, got {duty.every}")
        self.name = name
        self._duties = list(duties)
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
        now = time.monotonic()
        due = [now if duty.at_start else now + duty.every for duty in self._duties]
        while not self._stop.wait(max(0.0, min(due, default=now + 3600) - time.monotonic())):
            now = time.monotonic()
            for index, duty in enumerate(self._duties):
                if due[index] <= now:
                    self._step(duty)
                    # Late (a slow machine): the next run is a whole interval away, so a
                    # backlog of runs never fires at once.
                    due[index] = max(due[index] + duty.every, time.monotonic())

    def _step(self, duty: Duty) -> None:
        try:
            duty.action()
        except Exception:  # the loop is what keeps the daemon's duties alive: it must not die
            _LOGGER.exception("%s failed", duty.name)
