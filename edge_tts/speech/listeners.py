"""Who hears what became of each request: listeners with a no-op default for every event
(mopidy's listener model), so a door's listener overrides only what it does differently;
and `Reporters`, the one fan-out the engine reports through.

The primary listener (the daemon's MQTT reporter, `edge-ttsd say`'s one-shot reporter)
hears each event first, exactly as if it were alone: its exceptions reach the engine,
which handles them where it reports. Every other listener (the HTTP request tracker)
hears it through one safe `send`, whose failure is logged and never reaches the engine
or the other listeners. Before any of them, `Reporters` records the event in the engine's
telemetry (its counter; a finished request's latency, by the door it came in by): the
requests' fates and figures are the engine's, the same whichever door a request came in
by and whichever listeners hear it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..core.telemetry import Telemetry
from .outcome import Event, Kind, real_time_factor, time_to_first_audio_ms

_LOGGER = logging.getLogger(__name__)

# The telemetry counter of each event (speech.FIGURES declares them); a started request
# is counted when it ends.
COUNTERS = {
    Kind.QUEUED: "received",
    Kind.FINISHED: "played",
    Kind.REJECTED: "rejected",
    Kind.EXPIRED: "expired",
    Kind.INTERRUPTED: "interrupted",
    Kind.DUPLICATE: "duplicates",
    Kind.DEFERRED: "deferred",  # not final: the daemon stops, the broker delivers it again
}


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
    """The engine's way out for events: recorded in `telemetry`, then `primary`, then every
    listener.

    A final event marks its job concluded and is recorded as it goes out (before any
    listener hears it), so that `job.concluded`, each counter and each latency figure have
    one writer whichever door reports, and an event is recorded once even when the primary
    listener raises; a finished request's figures are in before its event is published."""

    def __init__(
        self, primary: Listener, listeners: Sequence[Listener] = (), *, telemetry: Telemetry
    ) -> None:
        self.primary = primary
        self.listeners = tuple(listeners)
        self.telemetry = telemetry

    def report(self, event: Event) -> None:
        if event.final:
            event.job.concluded = True
        try:
            self._record(event)
        except Exception:  # a figure lost is logged; the event must still go out
            _LOGGER.exception("Recording %s of %s failed", event.kind.value, event.job.request.id)
        self.primary.on_event(event)
        for listener in self.listeners:
            self._send(listener, event)

    def _record(self, event: Event) -> None:
        counter = COUNTERS.get(event.kind)
        if counter is not None:
            self.telemetry.count(counter)
        if event.kind is Kind.FINISHED:
            job = event.job
            # Labelled by the request's door, which its package's FIGURES declares.
            self.telemetry.answered(
                job.request.origin.door, time_to_first_audio_ms(job), real_time_factor(job)
            )
            self.telemetry.observe("synthesis_ms", job.synth_seconds * 1000)

    @staticmethod
    def _send(listener: Listener, event: Event) -> None:
        try:
            listener.on_event(event)
        except Exception:
            _LOGGER.exception(
                "A listener failed on %s of %s", event.kind.value, event.job.request.id
            )
