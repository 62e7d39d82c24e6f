"""Parts started in dependency order and stopped in reverse, from one list.

A part that fails to start stops the ones already started (in reverse) before the error
goes on; the failed part itself is not stopped, so its start() leaves nothing behind when
it raises. Stopping goes through every started part even when one of them fails.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_LOGGER = logging.getLogger(__name__)


def nothing() -> None:
    """For a part with nothing to do on one side (a voice is loaded, never unloaded)."""


@dataclass(frozen=True)
class Part:
    name: str
    start: Callable[[], None]
    stop: Callable[[], None]


class Parts:
    def __init__(self, parts: Sequence[Part]) -> None:
        self.parts = tuple(parts)
        self._started: list[Part] = []

    @property
    def started(self) -> tuple[str, ...]:
        return tuple(part.name for part in self._started)

    def start(self) -> None:
        for part in self.parts:
            try:
                part.start()
            except BaseException:
                _LOGGER.debug("Starting %s failed; stopping what started", part.name)
                self.stop()
                raise
            self._started.append(part)

    def stop(self) -> None:
        """Stop the started parts, last first; idempotent."""
        while self._started:
            part = self._started.pop()
            try:
                part.stop()
            except Exception:  # the parts before it must still be stopped
                _LOGGER.exception("Stopping %s failed", part.name)
