"""MqttLink unit behaviour that the end-to-end tests cannot provoke on purpose."""

from __future__ import annotations

import logging
import time

import pytest

from edge_tts.config import BrokerSettings
from edge_tts.messages import Envelope
from edge_tts.mqtt_link import Inbound, MqttLink


def link(received: list[Inbound] | None = None) -> MqttLink:
    sink = received if received is not None else []
    return MqttLink(BrokerSettings(), "edge-tts-unit", ["a/say"], "a/availability", sink.append)


def test_a_failing_callback_never_reaches_paho(caplog: pytest.LogCaptureFixture) -> None:
    def boom(*_: object) -> None:
        raise RuntimeError("bug in a handler")

    guarded = link()._guard(boom)
    with caplog.at_level(logging.ERROR):
        guarded(None, None, None)  # paho's thread would die if this raised
    assert "bug in a handler" in caplog.text


def test_ack_from_an_earlier_connection_is_not_sent() -> None:
    mqtt_link = link()
    stale = Inbound(Envelope("a/say", b"hi", time.monotonic()), mid=7, qos=1, generation=0)
    # Not connected, and generation 0 predates any connection: the mid would name another
    # message on the current connection, so it must not be acknowledged there.
    assert mqtt_link.ack(stale) is False


def test_not_alive_before_start() -> None:
    mqtt_link = link()
    assert not mqtt_link.alive and not mqtt_link.connected


def test_publishing_to_a_topic_paho_refuses_returns_false_instead_of_raising() -> None:
    assert link().publish("reply/#", b"{}") is False


def test_a_message_of_the_current_connection_is_acknowledged_before_suback() -> None:
    mqtt_link = link()
    mqtt_link._generation = 3  # connected (CONNACK), subscriptions not yet granted
    current = Inbound(Envelope("a/say", b"hi", time.monotonic()), mid=7, qos=1, generation=3)
    acked: list[tuple[int, int]] = []
    mqtt_link._client.ack = lambda mid, qos: acked.append((mid, qos)) or 0  # type: ignore[method-assign]
    assert mqtt_link.ack(current) is True and acked == [(7, 1)]
