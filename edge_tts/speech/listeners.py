"""Who hears what became of each request: listeners with a no-op default for every event
(mopidy's listener model), so a door's listener overrides only what it does differently;
and `Reporters`, the one fan-out the engine reports through.

The primary listener (the daemon's MQTT reporter, `edge-ttsd say`'s one-shot reporter)
hears each event first, exactly as if it were alone: its exceptions reach the engine,
which handles them where it reports. Every other listener (the HTTP request tracker)
hears it through one safe `send`, whose failure is logged and never reaches the engine
or the other listeners.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from .outcome import Event

_LOGGER = logging.getLogger(__name__)


class Listener:
    """Hears every event; ignores those it does not override.

    `on_event` is the one entry: by default it calls the kind's own method (`on_queued`
    for a queued event, ...). A listener that treats every kind alike overrides
    `on_event`; one that cares about a few kinds overrides their methods."""

    def on_event(self, event: Event) -> None:
        getattr(self, f"on_{event.kind.value}")(event)

    def on_queued(self, event: Event) -> None:
        pass

    def on_started(self, event: Event) -> None:
        pass

    def on_finished(self, event: Event) -> None:
        pass

    def on_rejected(self, event: Event) -> None:
        pass

    def on_expired(self, event: Event) -> None:
        pass

    def on_interrupted(self, event: Event) -> None:
        pass

    def on_duplicate(self, event: Event) -> None:
        pass

    def on_deferred(self, event: Event) -> None:
        pass


class Reporters:
    """The engine's way out for events: `primary`, then every listener.

    A final event marks its job concluded as it goes out (before any listener hears it),
    so that `job.concluded` has one writer whichever door reports."""

    def __init__(self, primary: Listener, listeners: Sequence[Listener] = ()) -> None:
        self.primary = primary
        self.listeners = tuple(listeners)

    def report(self, event: Event) -> None:
        if event.final:
            event.job.concluded = True
        self.primary.on_event(event)
        for listener in self.listeners:
            self._send(listener, event)

    @staticmethod
    def _send(listener: Listener, event: Event) -> None:
        try:
            listener.on_event(event)
        except Exception:
            _LOGGER.exception(
                "A listener failed on %s of %s", event.kind.value, event.job.request.id
            )
