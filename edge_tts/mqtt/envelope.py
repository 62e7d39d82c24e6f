"""What MQTT tells of a message besides its payload (`Envelope`), what the MQTT door
keeps of it to answer the request (`MqttOrigin`: the MQTT 5 response topic and
correlation data, where a Hermes request came from), and the MQTT payloads as requests:
the say topic's (the JSON or text HTTP's /say takes too, messages/parse.py) and Hermes'
`hermes/tts/say`. The engine carries the origin without reading it; the reporter
(reporter.py) answers with it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..messages.parse import decode, json_object, parse_payload, request_from_fields
from ..messages.request import Arrival, BadRequest, Origin, SayRequest
from ..messages.topics import publish_topic_problem


@dataclass(frozen=True)
class Envelope:
    """What MQTT told us about a message, besides its payload."""

    topic: str
    payload: bytes
    received_at: float
    expiry_interval: int | None = None
    response_topic: str | None = None
    correlation_data: bytes | None = None
    redelivered: bool = False  # the broker's DUP flag: we may have seen it before a crash
    retained: bool = False  # replayed by the broker on every (re)subscribe
    packet_id: int = 0  # the broker's for a QoS 1 delivery, kept by its redelivery; 0: QoS 0


@dataclass(frozen=True)
class Hermes:
    """Where a Rhasspy/Hermes request came from, to answer it in kind."""

    site_id: str
    session_id: str | None


@dataclass(frozen=True)
class MqttOrigin(Origin):
    """Where to answer an MQTT request besides the events topic."""

    door: str = "mqtt"
    response_topic: str | None = None
    correlation_data: bytes | None = None
    hermes: Hermes | None = None


def parse_say(env: Envelope, max_text_chars: int, default_ttl: float | None = None) -> SayRequest:
    """A message on the say topic: plain text, SSML, or JSON (messages/parse.py
    `parse_payload`). Raises BadRequest with a reason a user can act on."""
    _check_response_topic(env)
    return parse_payload(env.payload, _arrival(env), max_text_chars, default_ttl)


def parse_hermes(env: Envelope, max_text_chars: int) -> SayRequest:
    """A Hermes `hermes/tts/say`: JSON {text, id, volume, lang, siteId, sessionId}."""
    _check_response_topic(env)
    fields = json_object(decode(env.payload))
    site = fields.get("siteId", "default")
    session = fields.get("sessionId")
    if not isinstance(site, str) or not (session is None or isinstance(session, str)):
        raise BadRequest("siteId and sessionId must be strings")
    hermes_fields: dict[str, Any] = {k: fields[k] for k in ("text", "id", "volume") if k in fields}
    if fields.get("lang") is not None:  # Hermes names the language, e.g. "zh-CN"
        hermes_fields["language"] = fields["lang"]
    arrival = _arrival(env, Hermes(site_id=site, session_id=session))
    return request_from_fields(hermes_fields, arrival, max_text_chars, None)


def valid_response_topic(env: Envelope) -> str | None:
    """The MQTT 5 response topic when we may publish to it, else None."""
    topic = env.response_topic
    return topic if topic is not None and publish_topic_problem(topic) is None else None


def _check_response_topic(env: Envelope) -> None:
    # Refused on arrival: found out only when the final event is published, it would
    # raise in the playback thread, after the request had played.
    if env.response_topic is None:
        return
    problem = publish_topic_problem(env.response_topic)
    if problem is not None:
        raise BadRequest(f"response topic {env.response_topic[:100]!r} {problem}")


def _arrival(env: Envelope, hermes: Hermes | None = None) -> Arrival:
    origin = MqttOrigin(
        response_topic=env.response_topic, correlation_data=env.correlation_data, hermes=hermes
    )
    # The broker resends a message we did not acknowledge with its packet id: topic,
    # packet id and payload name this delivery and its redeliveries only (messages/
    # request.py `dedupe_key`). A QoS 0 message (packet id 0) is never redelivered.
    delivery = None
    if env.packet_id:
        delivery = b"\0".join((env.topic.encode(), str(env.packet_id).encode(), env.payload))
    return Arrival(
        origin=origin,
        received_at=env.received_at,
        delivery=delivery,
        redelivered=env.redelivered,
        expiry_interval=env.expiry_interval,
    )
