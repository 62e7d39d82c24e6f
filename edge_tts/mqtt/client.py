"""paho clients as we build them: the login (credentials, TLS) and protocol that the daemon
and the rollout gate share, and the daemon's session on top of it (persistent session,
manual ack, last will, reconnect back-off, bounded queues), with what it says at CONNECT,
SUBSCRIBE and PUBLISH. What a connection does over time is `mqtt_link.MqttLink`'s.
"""

from __future__ import annotations

import logging
import ssl
import time

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

from ..config import BrokerSettings
from .envelope import Envelope

PAHO_LOGGER = logging.getLogger("paho")

RECONNECT_MIN_S, RECONNECT_MAX_S = 1, 30
# Enough in-flight QoS 1 messages that a critical request is not stuck at the broker
# behind a full queue of unacknowledged ones.
RECEIVE_MAXIMUM = 1000
# The largest packet the broker may send us (MQTT 5): paho reads a whole packet into
# memory, and a broker's own limit is 256 MB by default. The largest valid request is far
# smaller: 100,000 characters (queue.max_text_chars' maximum) at 12 bytes each as JSON
# escapes, plus MQTT 5 properties a sender may add (response topic, correlation data).
MAX_PACKET_BYTES = 2 * 2**20


def protocol_of(broker: BrokerSettings) -> MQTTProtocolVersion:
    """The protocol to try first: 3.1.1 when configured, else MQTT 5 ("5" or "auto")."""
    if broker.protocol == "3.1.1":
        return MQTTProtocolVersion.MQTTv311
    return MQTTProtocolVersion.MQTTv5


def new_client(
    broker: BrokerSettings,
    client_id: str,
    protocol: MQTTProtocolVersion,
    *,
    persistent: bool = False,
    manual_ack: bool = False,
) -> mqtt.Client:
    """A paho client for `broker` speaking `protocol`, with the broker's credentials and TLS
    set: the one place that turns broker settings into a login, used by the daemon's link
    and by the rollout gate (`edge-ttsd wait-online`), so both log in the same way.

    `persistent`: MQTT 3.1.1's clean session off (MQTT 5 asks for its session at connect)."""
    v5 = protocol == MQTTProtocolVersion.MQTTv5
    client = mqtt.Client(
        CallbackAPIVersion.VERSION2,
        client_id=client_id,
        protocol=protocol,
        clean_session=None if v5 or not persistent else False,
        manual_ack=manual_ack,
    )
    if broker.username:
        client.username_pw_set(broker.username, broker.password())
    tls = broker.tls
    if tls is not None:
        client.tls_set(
            ca_certs=str(tls.ca_file) if tls.ca_file else None,
            certfile=str(tls.cert_file) if tls.cert_file else None,
            keyfile=str(tls.key_file) if tls.key_file else None,
            cert_reqs=ssl.CERT_NONE if tls.insecure else ssl.CERT_REQUIRED,
        )
        client.tls_insecure_set(tls.insecure)
    return client


def close_client(client: mqtt.Client) -> None:
    """Disconnect, stop paho's network thread, and close every socket the client holds.

    `loop_stop` leaves open the loopback socket pair paho wakes its thread with; only
    `Client.__del__` closes it (paho issue #627). A client in a reference cycle (its
    callbacks are its owner's bound methods) is freed by the garbage collector, which may
    finalize the sockets before the client: a ResourceWarning, and two descriptors held
    until then, for each replaced client (a protocol fallback) and each `wait-online`."""
    client.disconnect()
    client.loop_stop()  # joins the thread, unless called on it: then it ends later
    if not network_thread_alive(client):
        client._reset_sockets()  # what __del__ does; paho has no public close


def network_thread_alive(client: mqtt.Client) -> bool:
    """paho's network thread (`loop_start`) runs; it reconnects by itself."""
    thread = getattr(client, "_thread", None)
    return thread is not None and thread.is_alive()


def session_client(
    broker: BrokerSettings, client_id: str, protocol: MQTTProtocolVersion, availability: str
) -> mqtt.Client:
    """The daemon's client: its session kept, messages acknowledged by hand, `offline` on
    `availability` as the last will, reconnecting with back-off, queues bounded."""
    client = new_client(broker, client_id, protocol, persistent=True, manual_ack=True)
    client.enable_logger(PAHO_LOGGER)
    client.reconnect_delay_set(RECONNECT_MIN_S, RECONNECT_MAX_S)
    client.will_set(availability, "offline", qos=1, retain=True)
    client.max_inflight_messages_set(100)
    client.max_queued_messages_set(1000)  # bounded: events while offline
    return client


def connect_properties(broker: BrokerSettings, protocol: MQTTProtocolVersion) -> Properties | None:
    """MQTT 5's CONNECT asks for the session to outlive the connection, for room, and
    for no packet larger than MAX_PACKET_BYTES (the broker drops those, unanswered)."""
    if protocol != MQTTProtocolVersion.MQTTv5:
        return None
    props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
    props.SessionExpiryInterval = broker.session_expiry
    props.ReceiveMaximum = RECEIVE_MAXIMUM
    props.MaximumPacketSize = MAX_PACKET_BYTES
    return props


def subscribe(
    client: mqtt.Client, protocol: MQTTProtocolVersion, topics: list[str]
) -> tuple[MQTTErrorCode, int | None]:
    """Subscribe to `topics` at QoS 1: paho's (result, mid)."""
    if protocol != MQTTProtocolVersion.MQTTv5:
        # 3.1.1 replays retained copies at every subscribe: the Daemon skips them.
        return client.subscribe([(topic, 1) for topic in topics])
    # The broker's retained copy of a request is never sent at (re)subscribe: a
    # request plays once, when it is published, not again at every reconnect.
    options = SubscribeOptions(qos=1, retainHandling=SubscribeOptions.RETAIN_DO_NOT_SEND)
    return client.subscribe([(topic, options) for topic in topics])


def publish_properties(
    protocol: MQTTProtocolVersion, correlation_data: bytes | None
) -> Properties | None:
    """A PUBLISH's MQTT 5 correlation data, when there is any and the protocol has it."""
    if correlation_data is None or protocol != MQTTProtocolVersion.MQTTv5:
        return None
    properties = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    properties.CorrelationData = correlation_data
    return properties


def envelope(msg: mqtt.MQTTMessage) -> Envelope:
    """What paho tells of a message, as our `Envelope`; stamped with its arrival now."""
    props = getattr(msg, "properties", None)
    return Envelope(
        topic=msg.topic,
        payload=bytes(msg.payload),
        received_at=time.monotonic(),
        expiry_interval=getattr(props, "MessageExpiryInterval", None),
        response_topic=getattr(props, "ResponseTopic", None),
        correlation_data=getattr(props, "CorrelationData", None),
        redelivered=bool(msg.dup),
        retained=bool(msg.retain),
        packet_id=msg.mid if msg.qos > 0 else 0,
    )
