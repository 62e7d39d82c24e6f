"""The daemon's reporter: what became of a request, published as the events, MQTT 5
responses and Hermes replies that `messages` defines, each final one after the ack."""

from __future__ import annotations

import logging

from ..core.telemetry import Telemetry
from ..messages.events import FINAL_KINDS, EventKind, event, hermes_error, hermes_finished
from ..messages.parse import payload_id
from ..messages.topics import Topics, valid_response_topic
from ..speech.dedupe import PlayedStore
from ..speech.jobs import Job
from ..speech.outcome import (
    finished_fields,
    real_time_factor,
    started_fields,
    time_to_first_audio_ms,
)
from .link import Inbound, MqttLink

_LOGGER = logging.getLogger(__name__)


class MqttReporter:
    """A request's fate → events (own topic, response topic), Hermes replies, and the ack:
    the daemon's `Reporter` (jobs.py)."""

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

    def _emit(self, job: Job, kind: EventKind, **fields: object) -> None:
        final = kind in FINAL_KINDS
        if final:
            # Acknowledged first: a sender that sees the final event knows the broker will
            # not deliver the request again (both go out in order on one connection).
            self._answered.add(job.request.key)
            for delivery in job.deliveries:
                delivery.ack()
        payload = event(kind, job.request, **fields)
        self.link.publish(self.topics.events, payload)
        request = job.request
        if final and request.response_topic:
            self.link.publish(
                request.response_topic, payload, correlation_data=request.correlation_data
            )

    def queued(self, job: Job, position: int) -> None:
        self.telemetry.count("received")
        self._emit(job, "queued", position=position, text_chars=len(job.request.text))

    def started(self, job: Job) -> None:
        self._emit(job, "started", **started_fields(job))

    def finished(self, job: Job) -> None:
        self.telemetry.count("played")
        self.telemetry.answered(
            job.request.door, time_to_first_audio_ms(job), real_time_factor(job)
        )
        self.telemetry.observe("synthesis_ms", job.synth_seconds * 1000)
        self._emit(job, "finished", **finished_fields(job))
        self._hermes_done(job)

    def rejected(self, job: Job, reason: str) -> None:
        self.telemetry.count("rejected")
        _LOGGER.warning("Rejected %s: %s", job.request.id, reason)
        self._emit(job, "rejected", reason=reason)
        self._hermes_done(job, error=reason)

    def expired(self, job: Job) -> None:
        self.telemetry.count("expired")
        self._emit(job, "expired")
        self._hermes_done(job, error="expired before it could be played")

    def interrupted(self, job: Job, by: str) -> None:
        self.telemetry.count("interrupted")
        self._emit(job, "interrupted", by=by, audio_ms=round(job.audio_seconds * 1000))
        self._hermes_done(job)

    def duplicate(self, job: Job, reason: str) -> None:
        """The same request again (same id and text, or the redelivery of one an earlier
        run played but was killed before acknowledging): not played twice, but answered,
        so a sender always learns what became of a message."""
        self.telemetry.count("duplicates")
        _LOGGER.info("Request %s is a duplicate (%s); not played again", job.request.id, reason)
        self._emit(job, "duplicate", reason=reason)
        self._hermes_done(job)

    def deferred(self, job: Job) -> None:
        """Not a final event: the daemon stops, and the broker delivers it again."""
        self.telemetry.count("deferred")
        self._emit(job, "deferred", reason="daemon stopping; plays after restart")

    def _hermes_done(self, job: Job, error: str | None = None) -> None:
        hermes = job.request.hermes
        if hermes is None:
            return
        if error is not None:
            self.link.publish(
                self.topics.hermes_error,
                hermes_error(hermes.site_id, hermes.session_id, error, job.request.text[:100]),
            )
        # Always answer: a Hermes dialogue manager waits for sayFinished to go on.
        self.link.publish(self.topics.hermes_finished, hermes_finished(job.request))

    def bad_payload(
        self, inbound: Inbound, reason: str, hermes: tuple[str, str | None] | None
    ) -> None:
        self.telemetry.count("rejected")
        _LOGGER.warning("Rejected a message on %s: %s", inbound.envelope.topic, reason)
        env = inbound.envelope
        sender_id = payload_id(env.payload)
        self.link.publish(
            self.topics.events,
            event("rejected", None, id=sender_id, reason=reason, topic=env.topic),
        )
        response_topic = valid_response_topic(env)
        if response_topic:
            self.link.publish(
                response_topic,
                event("rejected", None, id=sender_id, reason=reason),
                correlation_data=env.correlation_data,
            )
        if hermes is not None:
            self.link.publish(
                self.topics.hermes_error, hermes_error(hermes[0], hermes[1], reason, "")
            )
        self.link.ack(inbound)
