"""More than one door hearing every request's fate: the daemon's MQTT reporter, and the
HTTP server's request tracker (`GET /requests/{id}`).

A `Listener` has a no-op default for every event (mopidy's audio listener model), so a
listener names only the events it wants. `Reporters` is the pipeline's `Reporter`
(jobs.py): the primary reporter first, exactly as it was called alone (its exceptions
reach the engine, as before), then each listener through one safe `send`, whose failure
is logged and never reaches the engine or the other listeners.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from .jobs import Job, Reporter

_LOGGER = logging.getLogger(__name__)


class Listener:
    """A reporter that ignores every event it does not override."""

    def queued(self, job: Job, position: int) -> None:
        pass

    def started(self, job: Job) -> None:
        pass

    def finished(self, job: Job) -> None:
        pass

    def rejected(self, job: Job, reason: str) -> None:
        pass

    def expired(self, job: Job) -> None:
        pass

    def interrupted(self, job: Job, by: str) -> None:
        pass

    def duplicate(self, job: Job, reason: str) -> None:
        pass

    def deferred(self, job: Job) -> None:
        pass


class Reporters:
    """`primary`, then every listener, for each event."""

    def __init__(self, primary: Reporter, listeners: Sequence[Reporter]) -> None:
        self.primary = primary
        self.listeners = tuple(listeners)

    def queued(self, job: Job, position: int) -> None:
        self.primary.queued(job, position)
        self._send("queued", job, position)

    def started(self, job: Job) -> None:
        self.primary.started(job)
        self._send("started", job)

    def finished(self, job: Job) -> None:
        self.primary.finished(job)
        self._send("finished", job)

    def rejected(self, job: Job, reason: str) -> None:
        self.primary.rejected(job, reason)
        self._send("rejected", job, reason)

    def expired(self, job: Job) -> None:
        self.primary.expired(job)
        self._send("expired", job)

    def interrupted(self, job: Job, by: str) -> None:
        self.primary.interrupted(job, by)
        self._send("interrupted", job, by)

    def duplicate(self, job: Job, reason: str) -> None:
        self.primary.duplicate(job, reason)
        self._send("duplicate", job, reason)

    def deferred(self, job: Job) -> None:
        self.primary.deferred(job)
        self._send("deferred", job)

    def _send(self, event: str, job: Job, *args: object) -> None:
        for listener in self.listeners:
            try:
                getattr(listener, event)(job, *args)
            except Exception:
                _LOGGER.exception("A listener failed on %s of %s", event, job.request.id)
