"""The daemon's MQTT connection over time: connect, announce, subscribe, manual ack,
publish, reconnect, and the fallback from MQTT 5 to 3.1.1. How its paho client is built
(login, TLS, session, last will) is `mqtt_client`'s; which topics it subscribes to and
when the broker's answer means serving, `mqtt_subscriptions`'.

Callbacks only turn a message into an `Inbound` and hand it on; nothing heavy runs on
paho's network thread, and no exception may escape into it (paho would re-raise it and
the network thread would die).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import MQTTProtocolVersion
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from ..config import BrokerSettings
from . import client as mqtt_client
from .envelope import Envelope
from .subscriptions import Subscriptions

_LOGGER = logging.getLogger(__name__)

# CONNACK codes of a broker that does not speak MQTT 5: 132 (v5), 1 (3.1.1's own answer).
_UNSUPPORTED_PROTOCOL = (132, 1)


class OutageNoise(logging.Filter):
    """paho's network loop logs an ERROR "Client is not connected" after every failed
    reconnect during a broker outage, and once more as it ends after our clean disconnect:
    dropped. A broker that goes away while paho reads ("failed to receive on socket:
    [Errno 104] Connection reset by peer", a broker restart) is a WARNING, not an ERROR in
    the journal: the outage is expected, and `_handle_disconnect` logs it too."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "Client is not connected" in message:
            return False
        if record.levelno > logging.WARNING and "failed to receive on socket" in message:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def guard(handler: Callable[..., None]) -> Callable[..., None]:
    """`handler` as a paho callback: what it raises is logged, never passed to paho."""

    def guarded(*args: Any) -> None:
        try:
            handler(*args)
        except Exception:  # an exception here would kill paho's network thread
            _LOGGER.exception("MQTT callback %s failed", handler.__name__)

    return guarded


@dataclass(frozen=True)
class Inbound:
    envelope: Envelope
    mid: int
    qos: int
    generation: int  # which connection delivered it: a mid is only valid on that one


class MqttLink:
    def __init__(
        self,
        broker: BrokerSettings,
        client_id: str,
        subscriptions: list[str],
        availability_topic: str,
        on_message: Callable[[Inbound], None],
        optional: Sequence[str] = (),
    ):
        self._broker = broker
        self._client_id = client_id
        # `optional`: outside the daemon's own topics (Home Assistant's status), where a
        # broker ACL may refuse them: logged, but the daemon serves without them.
        self._subscriptions = Subscriptions(subscriptions, optional)
        self._availability = availability_topic
        self._on_message = on_message
        self._lock = threading.Lock()
        self._generation = 0
        self._connected = threading.Event()
        self._protocol = mqtt_client.protocol_of(broker)
        self.connects = 0
        self.on_connected: Callable[[], None] | None = None
        self._stopping = False
        self._quiet = OutageNoise()
        mqtt_client.PAHO_LOGGER.addFilter(self._quiet)
        self._client = self._make_client()

    # --- lifecycle -----------------------------------------------------------------

    def start(self) -> None:
        self._client.connect_async(
            self._broker.host,
            self._broker.port,
            keepalive=self._broker.keepalive,
            clean_start=False,
            properties=mqtt_client.connect_properties(self._broker, self._protocol),
        )
        self._client.loop_start()

    def stop(self) -> None:
        """Say `offline` ourselves (a clean disconnect does not fire the will), then leave."""
        if self._connected.is_set():
            info = self._client.publish(self._availability, "offline", qos=1, retain=True)
            with contextlib.suppress(RuntimeError, ValueError):  # not sent: the will says it
                info.wait_for_publish(timeout=2)
        self._stopping = True
        mqtt_client.close_client(self._client)
        mqtt_client.PAHO_LOGGER.removeFilter(self._quiet)
        self._connected.clear()

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    @property
    def alive(self) -> bool:
        """paho's network thread runs (it reconnects by itself): what the watchdog needs.
        A broker outage is not a reason for systemd to restart us."""
        return mqtt_client.network_thread_alive(self._client)

    def wait_connected(self, timeout: float) -> bool:
        return self._connected.wait(timeout)

    @property
    def protocol(self) -> str:
        return "5" if self._protocol == MQTTProtocolVersion.MQTTv5 else "3.1.1"

    # --- messages ------------------------------------------------------------------

    def ack(self, inbound: Inbound) -> bool:
        """Acknowledge on the connection that delivered it; on a later one the mid means
        another message, and the broker will redeliver this one anyway.

        Only the connection counts, not the subscriptions: the broker redelivers a
        session's unacknowledged messages right after CONNACK, before our SUBACK, and a
        redelivery answered from the played-request history must be acknowledged then, or
        it comes back at every reconnect."""
        with self._lock:
            if inbound.generation != self._generation:
                return False
            return self._client.ack(inbound.mid, inbound.qos) == mqtt.MQTT_ERR_SUCCESS

    def publish(
        self,
        topic: str,
        payload: bytes | str,
        qos: int = 1,
        retain: bool = False,
        correlation_data: bytes | None = None,
    ) -> bool:
        """Publish, or log why not; never raises, so no caller's thread can die of it."""
        properties = mqtt_client.publish_properties(self._protocol, correlation_data)
        try:
            # paho queues it while disconnected and sends it after the reconnect.
            info = self._client.publish(
                topic, payload, qos=qos, retain=retain, properties=properties
            )
        except (ValueError, TypeError) as err:  # a topic or payload paho refuses
            _LOGGER.error("Cannot publish to %r: %s", topic[:200], err)
            return False
        if info.rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_NO_CONN):
            _LOGGER.error("Cannot publish to %r: %s", topic[:200], mqtt.error_string(info.rc))
            return False
        return True

    def _can_fall_back(self) -> bool:
        return self._broker.protocol == "auto" and self._protocol == MQTTProtocolVersion.MQTTv5

    def _fall_back(self) -> None:
        """paho cannot change protocol on a live client: replace it (off paho's thread)."""
        mqtt_client.close_client(self._client)
        self._protocol = MQTTProtocolVersion.MQTTv311
        self._client = self._make_client()
        self.start()

    # --- paho plumbing -------------------------------------------------------------

    def _make_client(self) -> mqtt.Client:
        client = mqtt_client.session_client(
            self._broker, self._client_id, self._protocol, self._availability
        )
        client.on_connect = guard(self._handle_connect)
        client.on_disconnect = guard(self._handle_disconnect)
        client.on_message = guard(self._handle_message)
        client.on_subscribe = guard(self._handle_subscribe)
        return client

    def _handle_connect(
        self,
        client: mqtt.Client,
        _userdata: object,
        flags: mqtt.ConnectFlags,
        reason: ReasonCode,
        _props: Properties | None,
    ) -> None:
        if reason.is_failure:
            if reason.value in _UNSUPPORTED_PROTOCOL and self._can_fall_back():
                _LOGGER.warning("Broker does not speak MQTT 5; falling back to 3.1.1")
                threading.Thread(target=self._fall_back, name="mqtt-fallback").start()
                return
            # Refused (bad credentials, not authorized...): not connected; paho retries.
            _LOGGER.error("Broker refused the connection: %s", reason)
            return
        with self._lock:
            self._generation += 1
            self.connects += 1
        _LOGGER.info(
            "Connected to %s:%d (MQTT %s, session present: %s)",
            self._broker.host,
            self._broker.port,
            self.protocol,
            flags.session_present,
        )
        client.publish(self._availability, "online", qos=1, retain=True)
        # Connected means "serving": only once the broker has granted every subscription.
        self._subscriptions.subscribe(client, self._protocol)

    def _handle_subscribe(
        self,
        _client: mqtt.Client,
        _userdata: object,
        mid: int,
        reasons: list[ReasonCode],
        _props: Properties | None,
    ) -> None:
        if self._subscriptions.granted(mid, reasons):
            self._connected.set()
            if self.on_connected is not None:
                self.on_connected()

    def _handle_disconnect(
        self,
        _client: mqtt.Client,
        _userdata: object,
        _flags: mqtt.DisconnectFlags,
        reason: ReasonCode,
        _props: Properties | None,
    ) -> None:
        self._connected.clear()
        with self._lock:
            self._generation += 1  # the old connection's message ids mean nothing now
        if self._stopping:
            return
        _LOGGER.warning("Disconnected from the broker (%s); reconnecting with back-off", reason)
        if self._broker.username:
            # Re-read the password file: a rotated credential applies without a restart.
            self._client.username_pw_set(self._broker.username, self._broker.password())

    def _handle_message(
        self, _client: mqtt.Client, _userdata: object, msg: mqtt.MQTTMessage
    ) -> None:
        envelope = mqtt_client.envelope(msg)
        with self._lock:
            generation = self._generation
        self._on_message(Inbound(envelope, msg.mid, msg.qos, generation))
