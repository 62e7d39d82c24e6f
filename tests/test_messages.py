"""Payload parsing: every bad payload is a BadRequest with a reason, never a crash."""

from __future__ import annotations

import json
import time

import pytest

from edge_tts.messages.events import event
from edge_tts.messages.parse import hermes_site, parse_payload
from edge_tts.messages.request import Arrival, BadRequest, Origin, Priority
from edge_tts.messages.topics import Topics
from edge_tts.mqtt.envelope import (
    Envelope,
    MqttOrigin,
    parse_hermes,
    parse_say,
    valid_response_topic,
)

pytestmark = pytest.mark.unit


def env(payload: bytes | str, **kw: object) -> Envelope:
    data = payload.encode() if isinstance(payload, str) else payload
    return Envelope(topic="edge-tts/pi/say", payload=data, received_at=time.monotonic(), **kw)  # type: ignore[arg-type]


def test_plain_text() -> None:
    request = parse_say(env("Hello there."), 100)
    assert request.text == "Hello there."
    assert request.priority == Priority.NORMAL and not request.dedupe


def test_json_fields() -> None:
    payload = {
        "text": "Hi",
        "id": "a1",
        "priority": "critical",
        "voice": "v",
        "speaker": 3,
        "speed": 1.5,
        "volume": 0.5,
        "ttl": 60,
        "interrupt": True,
    }
    request = parse_say(env(json.dumps(payload)), 100)
    assert (request.id, request.priority, request.speaker, request.speed) == (
        "a1",
        Priority.CRITICAL,
        "3",
        1.5,
    )
    assert request.dedupe and request.takes_over
    assert request.expires_at is not None and 59 < request.expires_at - time.time() <= 60


def test_mqtt5_expiry_and_redelivery() -> None:
    request = parse_say(env("Hi", expiry_interval=5, redelivered=True), 100)
    assert request.dedupe
    assert request.expires_at is not None and request.expires_at - time.time() <= 5
    assert not request.expired()
    assert request.expired(time.time() + 6)


def test_a_message_without_an_id_is_its_delivery() -> None:
    """Two messages with the same text are two requests with two ids; the broker's
    redelivery of one (same packet id, DUP set) is that one again."""
    a, b = (
        parse_say(env("Doorbell", packet_id=7), 100),
        parse_say(env("Doorbell", packet_id=8), 100),
    )
    assert a.key != b.key and a.id != b.id and not a.dedupe and not b.dedupe
    again = parse_say(env("Doorbell", packet_id=7, redelivered=True), 100)
    assert again.key == a.key and again.id == a.id and again.dedupe and again.redelivered
    qos0 = [parse_say(env("Doorbell"), 100) for _ in range(2)]  # never redelivered
    assert qos0[0].id != qos0[1].id


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"\xff\xfe", "UTF-8"),
        (b"", "non-empty"),
        (b"{", "malformed JSON"),
        (b"[1]", "object"),
        (b'""', "non-empty"),
        (b'{"text": ' + b"[" * 3000 + b"]" * 3000 + b"}", "nested"),
        (b'{"text": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": 1}}}}}}}}}', "nested"),
        (b'{"text": null}', "'text'"),
        (b'{"text": "hi", "bogus": 1}', "unknown field"),
        (b'{"text": "hi", "priority": 3}', "'priority'"),
        (b'{"text": "hi", "speed": true}', "'speed'"),
        (b'{"text": "hi", "speed": 50}', "'speed'"),
        (b'{"text": "hi", "volume": -1}', "'volume'"),
        (b'{"text": "hi", "interrupt": "yes"}', "'interrupt'"),
        (b'{"text": "hi", "id": 7}', "'id'"),
        (b'{"text": "hi", "ttl": 5, "expires_at": 9}', "not both"),
        ("x" * 101, "limit is 100"),
    ],
)
def test_bad_payloads(payload: bytes | str, reason: str) -> None:
    with pytest.raises(BadRequest, match=None) as err:
        parse_say(env(payload), 100)
    assert reason.lower() in str(err.value).lower()


def test_hermes() -> None:
    payload = json.dumps(
        {
            "text": "Hi",
            "siteId": "kitchen",
            "id": "h1",
            "lang": "en",
            "sessionId": "s1",
            "volume": 0.8,
        }
    )
    request = parse_hermes(env(payload), 100)
    origin = request.origin
    assert isinstance(origin, MqttOrigin) and origin.hermes is not None
    assert (origin.hermes.site_id, origin.hermes.session_id, request.id) == (
        "kitchen",
        "s1",
        "h1",
    )
    assert hermes_site(payload.encode()) == "kitchen"
    assert hermes_site(b"\xff") is None


def test_topics_and_events() -> None:
    topics = Topics("edge-tts", "pi")
    assert topics.subscriptions() == ["edge-tts/pi/say", "edge-tts/all/say", "hermes/tts/say"]
    body = json.loads(event("rejected", None, reason="why", extra=None))
    assert body["event"] == "rejected" and body["reason"] == "why" and "extra" not in body


@pytest.mark.parametrize(
    ("topic", "problem"),
    [("reply/#", "wildcard"), ("reply/+/x", "wildcard"), ("", "empty"), ("a\0b", "NUL")],
)
def test_an_unusable_response_topic_is_refused_on_arrival(topic: str, problem: str) -> None:
    with pytest.raises(BadRequest, match=problem):
        parse_say(env('{"text": "Hello", "id": "odd-1"}', response_topic=topic), 100)
    with pytest.raises(BadRequest, match=problem):
        parse_hermes(env('{"text": "Hello"}', response_topic=topic), 100)
    assert valid_response_topic(env("Hello", response_topic=topic)) is None


def test_a_usable_response_topic_is_kept() -> None:
    request = parse_say(env("Hello", response_topic="reply/me"), 100)
    assert isinstance(request.origin, MqttOrigin) and request.origin.response_topic == "reply/me"


def test_a_door_without_envelopes_parses_the_same_fields() -> None:
    """HTTP's /say: the payload and what the door knows, its origin carried as it is."""
    arrival = Arrival(Origin("http_say"), received_at=time.monotonic())
    payload = json.dumps({"text": "Hi", "priority": "high", "ttl": 5}).encode()
    first, again = (parse_payload(payload, arrival, 100) for _ in range(2))
    assert first.origin is arrival.origin and first.priority == Priority.HIGH
    assert first.expires_at is not None and first.received_at == arrival.received_at
    # No delivery names it: without an id the same text twice is two requests.
    assert first.key != again.key and not first.dedupe
    with pytest.raises(BadRequest, match="unknown field"):
        parse_payload(b'{"text": "Hi", "topic": "x"}', arrival, 100)


@pytest.mark.parametrize("field", ["text", "id", "voice", "speaker"])
def test_lone_surrogates_are_refused_not_crashed_on(field: str) -> None:
    payload = {"text": "Hello", field: "a\ud800b"}
    with pytest.raises(BadRequest, match="surrogate"):
        parse_say(env(json.dumps(payload)), 100)


def test_an_id_is_one_request_only_together_with_its_text() -> None:
    first = parse_say(env('{"text": "Front door open.", "id": "door"}'), 100)
    again = parse_say(env('{"id": "door", "text": "Front door open."}'), 100)
    other = parse_say(env('{"text": "Front door closed.", "id": "door"}'), 100)
    assert first.dedupe and other.dedupe
    assert first.key == again.key and first.key != other.key
    assert first.id == other.id == "door"


def test_the_retained_flag_does_not_change_parsing() -> None:
    # The daemon, not the parser, skips the broker's retained copies (see test_reliability).
    assert parse_say(env("Hello", retained=True), 100).text == "Hello"


def test_ssml_is_a_payload_starting_with_speak_or_a_json_text_format() -> None:
    plain = parse_say(env("<speak>Door <break time='1s'/>open.</speak>"), 200)
    assert plain.document is not None and len(plain.document) == 3
    marked = parse_say(env(json.dumps({"text": "<speak>Hi</speak>", "text_format": "ssml"})), 200)
    assert marked.document is not None and marked.speech == marked.document
    spoken_as_text = {"text": "<speak>Hi</speak>", "text_format": "text"}
    assert parse_say(env(json.dumps(spoken_as_text)), 200).document is None
    assert parse_say(env("1 < 2 and 3 > 2"), 200).document is None  # plain stays plain
    assert parse_say(env("1 < 2"), 200).speech == "1 < 2"
    bom = parse_say(env("\ufeff<speak>Hi</speak>"), 200)  # what Windows tools send
    assert bom.document is not None and bom.speech == bom.document


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ("<speak>Door <break time='1s'>open.</speak>", "mismatched tag at line 1, column 37"),
        ({"text": "Door", "text_format": "ssml"}, "SSML must be a <speak> element"),
        ({"text": "Hi", "text_format": "html"}, "'text_format' must be one of text, ssml"),
        ({"text": "Hi", "text_format": 1}, "'text_format' must be a str"),
        ("<speak><break time='99s'/>Hi</speak>", "line 1, column 8: break time '99s' is longer"),
    ],
)
def test_bad_ssml_is_a_bad_request_saying_where(
    payload: str | dict[str, object], reason: str
) -> None:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    with pytest.raises(BadRequest, match=reason):
        parse_say(env(data), 200)


def test_an_ssml_request_is_the_same_request_as_the_plain_text_it_says() -> None:
    plain = parse_say(env('{"text": "Front door open.", "id": "door"}'), 200)
    marked = {"text": "<speak>Front door open.</speak>", "id": "door"}
    slow = {"text": '<speak><prosody rate="slow">Front door open.</prosody></speak>', "id": "door"}
    assert parse_say(env(json.dumps(marked)), 200).key == plain.key
    assert parse_say(env(json.dumps(slow)), 200).key != plain.key
