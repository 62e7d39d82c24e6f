"""MqttLink unit behaviour that the end-to-end tests cannot provoke on purpose."""

from __future__ import annotations

import logging
import socket
import ssl
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import MQTTErrorCode, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.reasoncodes import ReasonCode

from edge_tts.config import BrokerSettings, TlsSettings
from edge_tts.mqtt.client import network_thread_alive, new_client
from edge_tts.mqtt.envelope import Envelope
from edge_tts.mqtt.link import Inbound, MqttLink, OutageNoise, guard
from edge_tts.mqtt.online_gate import BrokerTask, run_task

from .support.broker import free_port

pytestmark = pytest.mark.unit


def link(received: list[Inbound] | None = None, broker: BrokerSettings | None = None) -> MqttLink:
    sink = received if received is not None else []
    broker = broker or BrokerSettings()
    return MqttLink(broker, "edge-tts-unit", ["a/say"], "a/availability", sink.append)


def test_a_failing_callback_never_reaches_paho(caplog: pytest.LogCaptureFixture) -> None:
    def boom(*_: object) -> None:
        raise RuntimeError("bug in a handler")

    guarded = guard(boom)
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

    def ack(mid: int, qos: int) -> MQTTErrorCode:
        acked.append((mid, qos))
        return MQTTErrorCode.MQTT_ERR_SUCCESS

    mqtt_link._client.ack = ack  # type: ignore[method-assign]
    assert mqtt_link.ack(current) is True and acked == [(7, 1)]


# --- new_client: the login the daemon's link and the rollout gate share --------------------


def test_new_client_logs_in_with_the_brokers_user_and_password_file(tmp_path: Path) -> None:
    secret = tmp_path / "mqtt-password"
    secret.write_text("s3cret\n")
    broker = BrokerSettings(username="dev-1", password_file=secret)
    client = new_client(broker, "gate", MQTTProtocolVersion.MQTTv311)
    assert (client.username, client.password) == ("dev-1", "s3cret")
    assert client.protocol == MQTTProtocolVersion.MQTTv311
    assert client._clean_session is True  # a passer-by: no session kept for it


def test_new_client_verifies_the_broker_unless_told_not_to() -> None:
    verified = new_client(BrokerSettings(tls=TlsSettings()), "a", MQTTProtocolVersion.MQTTv5)
    context = verified._ssl_context
    assert context is not None and context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    insecure = TlsSettings(insecure=True)
    unverified = new_client(BrokerSettings(tls=insecure), "b", MQTTProtocolVersion.MQTTv5)
    context = unverified._ssl_context
    assert context is not None and context.verify_mode == ssl.CERT_NONE
    assert not context.check_hostname
    assert new_client(BrokerSettings(), "c", MQTTProtocolVersion.MQTTv5)._ssl_context is None


def test_the_link_keeps_its_session_and_acknowledges_by_hand() -> None:
    client = link(broker=BrokerSettings(protocol="3.1.1", username="dev-1"))._client
    assert client.protocol == MQTTProtocolVersion.MQTTv311 and client.username == "dev-1"
    assert client._clean_session is False and client._manual_ack is True


def subscribed(reasons: list[int]) -> MqttLink:
    """A link whose SUBSCRIBE (own topic a/say, optional ha/status) got `reasons`."""
    received: list[Inbound] = []
    mqtt_link = MqttLink(
        BrokerSettings(),
        "edge-tts-unit",
        ["a/say"],
        "a/availability",
        received.append,
        ["ha/status"],
    )
    mqtt_link._subscriptions._pending = 5  # the mid of its SUBSCRIBE
    codes = [ReasonCode(PacketTypes.SUBACK, identifier=code) for code in reasons]
    mqtt_link._handle_subscribe(mqtt_link._client, None, 5, codes, None)
    return mqtt_link


def test_a_refused_optional_subscription_does_not_stop_serving(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        assert subscribed([1, 0x87]).connected  # a broker ACL keeps us to our own topics
    assert "ha/status" in caplog.text


def test_a_refused_own_subscription_means_not_serving() -> None:
    assert not subscribed([0x87, 1]).connected


def test_a_broker_outage_is_no_error_in_the_journal() -> None:
    """paho's own lines for an outage: the repeats dropped, a reset read a warning."""
    quiet = OutageNoise()

    def record(level: int, message: str) -> logging.LogRecord:
        return logging.LogRecord("paho.mqtt.client", level, __file__, 1, message, None, None)

    assert not quiet.filter(record(logging.ERROR, "Client is not connected"))
    reset = record(logging.ERROR, "failed to receive on socket: [Errno 104] Connection reset")
    assert quiet.filter(reset) and (reset.levelno, reset.levelname) == (logging.WARNING, "WARNING")
    other = record(logging.ERROR, "something else went wrong")
    assert quiet.filter(other) and other.levelno == logging.ERROR


# --- paho's sockets ---------------------------------------------------------------------


def paho_sockets(client: mqtt.Client) -> list[socket.socket]:
    """The loopback pair paho's network thread wakes up on (made by loop_start)."""
    pair = [client._sockpairR, client._sockpairW]
    assert all(sock is not None and sock.fileno() >= 0 for sock in pair)
    return [sock for sock in pair if sock is not None]


def test_stopping_the_link_closes_pahos_sockets_at_once() -> None:
    """`loop_stop` leaves them to the garbage collector, which may finalize them before
    the client that would close them: a ResourceWarning (a failed test run) and two
    descriptors held until then."""
    mqtt_link = link(broker=BrokerSettings(port=free_port()))  # nothing listens there
    mqtt_link.start()
    pair = paho_sockets(mqtt_link._client)
    mqtt_link.stop()
    assert [sock.fileno() for sock in pair] == [-1, -1]
    assert not mqtt_link.alive


def test_a_broker_task_closes_its_client_and_sockets() -> None:
    """The rollout gate and Home Assistant's removal: one short-lived client each."""

    class Probe(BrokerTask):
        def connected(self, client: mqtt.Client) -> None:
            raise AssertionError("nothing listens there")

    made: list[tuple[mqtt.Client, list[socket.socket]]] = []
    original = mqtt.Client.loop_start

    def loop_start(client: mqtt.Client) -> MQTTErrorCode:
        result = original(client)
        made.append((client, paho_sockets(client)))
        return result

    probe = Probe()
    probe.done.set()  # run_task returns once paho's thread has started
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mqtt.Client, "loop_start", loop_start)
        run_task(BrokerSettings(port=free_port()), "edge-tts-gate-unit", probe, timeout=30)
    ((client, pair),) = made
    assert [sock.fileno() for sock in pair] == [-1, -1]
    assert not network_thread_alive(client)
