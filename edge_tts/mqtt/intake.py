"""MQTT message → job → pipeline. Runs on paho's thread: it parses and enqueues, nothing
more, and every message it cannot take is answered (`rejected`) and acknowledged."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from ..config import Settings
from ..core.telemetry import Telemetry
from ..messages.parse import hermes_site
from ..messages.request import BadRequest, SayRequest
from ..messages.topics import Topics
from ..speech.jobs import Job, job_for
from ..speech.pipeline import Pipeline
from ..voice.registry import UnknownVoiceError, Voices
from .envelope import Envelope, parse_hermes, parse_say
from .link import Inbound, MqttLink
from .reporter import MqttReporter

_LOGGER = logging.getLogger(__name__)


class Intake:
    def __init__(
        self,
        settings: Settings,
        voices: Voices,
        link: MqttLink,
        reporter: MqttReporter,
        pipeline: Pipeline,
        telemetry: Telemetry,
    ) -> None:
        self._queue = settings.queue
        self._site_id = settings.site_id
        self._voices = voices
        self._link = link
        self._reporter = reporter
        self._pipeline = pipeline
        self._telemetry = telemetry
        self._retained_warned: set[str] = set()

    def on_message(self, inbound: Inbound) -> None:
        env = inbound.envelope
        hermes = env.topic == Topics.hermes_say
        if hermes and hermes_site(env.payload) not in (self._site_id, None):
            self._link.ack(inbound)  # addressed to another satellite
            return
        if env.retained:
            self._skip_retained_copy(inbound)
            return
        site = (self._site_id, _session(env.payload)) if hermes else None
        try:
            request = self._parse(env, hermes)
            job = self._job(request, inbound)
        except (BadRequest, UnknownVoiceError) as err:
            self._reporter.bad_payload(inbound, str(err), site)
            return
        except Exception as err:  # a bug must still answer the sender, never drop silently
            _LOGGER.exception("Could not take a message on %s", env.topic)
            self._reporter.bad_payload(inbound, f"internal error: {err}", site)
            return
        if not self._reporter.answered_before(job):
            self._pipeline.submit(job)

    def _skip_retained_copy(self, inbound: Inbound) -> None:
        """A retained request plays once, when it is published (it reaches us live, without
        the retain flag). The broker's stored copy, which MQTT 3.1.1 replays at every
        subscribe (MQTT 5 is asked not to), is not a new request: acknowledge and skip it."""
        self._link.ack(inbound)
        topic = inbound.envelope.topic
        self._telemetry.count("retained_skipped")
        if topic not in self._retained_warned:
            self._retained_warned.add(topic)
            _LOGGER.warning(
                "Skipping the broker's retained copy on %s (it played when published); "
                "clear it with: mosquitto_pub -r -n -t '%s'",
                topic,
                topic,
            )

    def _parse(self, env: Envelope, hermes: bool) -> SayRequest:
        if hermes:
            return parse_hermes(env, self._queue.max_text_chars)
        return parse_say(env, self._queue.max_text_chars, self._queue.default_ttl)

    def _job(self, request: SayRequest, inbound: Inbound) -> Job:
        return job_for(request, self._voices, [MqttDelivery(self._link, inbound)])


@dataclass(frozen=True)
class MqttDelivery:
    """The job's `Delivery` (speech/jobs.py): acknowledged on the connection that
    delivered it."""

    link: MqttLink
    inbound: Inbound

    def ack(self) -> None:
        self.link.ack(self.inbound)


def _session(payload: bytes) -> str | None:
    try:
        value = json.loads(payload).get("sessionId")
    except (ValueError, AttributeError, RecursionError):
        return None
    return value if isinstance(value, str) else None
