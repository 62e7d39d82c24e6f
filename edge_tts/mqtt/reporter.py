"""The daemon's reporter: what became of a request, published as the events, MQTT 5
responses and Hermes replies that `messages` defines, each final one after the ack."""

from __future__ import annotations

import logging

from ..core.telemetry import Telemetry
from ..messages.events import event as event_payload
from ..messages.events import hermes_error, hermes_finished
from ..messages.parse import payload_id
from ..messages.topics import Topics
from ..speech.dedupe import PlayedStore
from ..speech.jobs import Job
from ..speech.listeners import Listener
from ..speech.outcome import EXPIRED_REASON, Event, Kind
from .envelope import MqttOrigin, valid_response_topic
from .link import Inbound, MqttLink

_LOGGER = logging.getLogger(__name__)


class MqttReporter(Listener):
    """A request's fate → events (own topic, response topic), Hermes replies, and the ack:
    the daemon's primary listener (speech/listeners.py), for every request played here."""

    def __init__(self, link: MqttLink, topics: Topics, telemetry: Telemetry):
        self.link = link
        self.topics = topics
        self.telemetry = telemetry
        # Keys of the requests this run has given a final event (in memory: after a
        # restart the played-request history answers for the earlier run).
        self._answered = PlayedStore(None)

    def answered_before(self, job: Job) -> bool:
        """A broker redelivery of a request this run has answered already (its ack was
        lost with the connection): acknowledged again, and no second final event."""
        request = job.request
        if not (request.redelivered and request.key in self._answered):
            return False
        _LOGGER.info(
            "Request %s came again from the broker; it was answered already: acknowledged",
            request.id,
        )
        for delivery in job.deliveries:
            delivery.ack()
        return True

    def on_event(self, event: Event) -> None:
        # Counted and measured by the engine as it reports (speech/listeners.py), not
        # here: the fates and latency are the engine's figures, whichever door a request
        # came in by.
        super().on_event(event)  # what a kind adds: a log line
        self._emit(event)
        if event.final:
            self._hermes_done(event)

    def on_rejected(self, event: Event) -> None:
        _LOGGER.warning("Rejected %s: %s", event.job.request.id, event.reason)

    def on_duplicate(self, event: Event) -> None:
        """The same request again (same id and text, or the redelivery of one an earlier
        run played but was killed before acknowledging): not played twice, but answered,
        so a sender always learns what became of a message."""
        _LOGGER.info(
            "Request %s is a duplicate (%s); not played again", event.job.request.id, event.reason
        )

    def _emit(self, event: Event) -> None:
        job = event.job
        if event.final:
            # Acknowledged first: a sender that sees the final event knows the broker will
            # not deliver the request again (both go out in order on one connection).
            self._answered.add(job.request.key)
            for delivery in job.deliveries:
                delivery.ack()
        self.link.publish(self.topics.events, event.payload)
        origin = job.request.origin
        if event.final and isinstance(origin, MqttOrigin) and origin.response_topic:
            self.link.publish(
                origin.response_topic, event.payload, correlation_data=origin.correlation_data
            )

    def _hermes_done(self, event: Event) -> None:
        request = event.job.request
        hermes = request.origin.hermes if isinstance(request.origin, MqttOrigin) else None
        if hermes is None:
            return
        # The final events a Hermes dialogue manager hears as an error too.
        error = {Kind.REJECTED: event.reason, Kind.EXPIRED: EXPIRED_REASON}.get(event.kind)
        if error is not None:
            self.link.publish(
                self.topics.hermes_error,
                hermes_error(hermes.site_id, hermes.session_id, error, request.text[:100]),
            )
        # Always answer: a Hermes dialogue manager waits for sayFinished to go on.
        self.link.publish(
            self.topics.hermes_finished,
            hermes_finished(request.id, hermes.site_id, hermes.session_id),
        )

    def bad_payload(
        self, inbound: Inbound, reason: str, hermes: tuple[str, str | None] | None
    ) -> None:
        self.telemetry.count("rejected")
        _LOGGER.warning("Rejected a message on %s: %s", inbound.envelope.topic, reason)
        env = inbound.envelope
        sender_id = payload_id(env.payload)
        self.link.publish(
            self.topics.events,
            event_payload("rejected", None, id=sender_id, reason=reason, topic=env.topic),
        )
        response_topic = valid_response_topic(env)
        if response_topic:
            self.link.publish(
                response_topic,
                event_payload("rejected", None, id=sender_id, reason=reason),
                correlation_data=env.correlation_data,
            )
        if hermes is not None:
            self.link.publish(
                self.topics.hermes_error, hermes_error(hermes[0], hermes[1], reason, "")
            )
        self.link.ack(inbound)
