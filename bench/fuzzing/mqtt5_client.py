"""The fuzzer's MQTT 5 client: publishes a Case with its properties, records what it
receives (with correlation data) and when the broker drops it."""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from edge_tts.mqtt.client import close_client

from .case import NONE, UNIQUE, Case

MAX_INFLIGHT = 128  # QoS 1/2 messages paho keeps unacknowledged (above both windows)


@dataclass
class Inbound:
    at: float
    topic: str
    payload: bytes
    correlation: bytes | None


class Client:
    def __init__(self, port: int, topics: list[str]) -> None:
        self.messages: list[Inbound] = []
        self.cond = threading.Condition()
        self.disconnects: list[tuple[float, str]] = []
        self.closing = False
        self.topics = topics
        self._subscribed = threading.Event()
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=f"fuzz-{secrets.token_hex(4)}",
            protocol=MQTTProtocolVersion.MQTTv5,
        )
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_message = self._on_message
        self.client.on_disconnect = self._on_disconnect
        self.client.max_inflight_messages_set(MAX_INFLIGHT)
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        if not self._subscribed.wait(15):
            raise RuntimeError("the fuzz client did not connect")

    def _on_connect(self, client: mqtt.Client, *_: Any) -> None:
        client.subscribe([(t, 1) for t in self.topics])

    def _on_subscribe(self, *_: Any) -> None:
        self._subscribed.set()

    def _on_disconnect(
        self, _c: mqtt.Client, _u: object, _f: Any, reason: ReasonCode, _p: Any
    ) -> None:
        if self.closing:
            return
        with self.cond:
            self.disconnects.append((time.monotonic(), str(reason)))
            self.cond.notify_all()

    def _on_message(self, _c: mqtt.Client, _u: object, msg: mqtt.MQTTMessage) -> None:
        props = getattr(msg, "properties", None)
        correlation = getattr(props, "CorrelationData", None)
        with self.cond:
            self.messages.append(
                Inbound(time.monotonic(), msg.topic, bytes(msg.payload), correlation)
            )
            self.cond.notify_all()

    def publish(self, topic: str, case: Case, run_prefix: str) -> None:
        props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        if case.usable_topic:
            props.ResponseTopic = case.response_topic.replace(
                UNIQUE, f"{run_prefix}/{case.index}", 1
            )
        elif case.response_topic != NONE:
            props.ResponseTopic = case.response_topic
        if case.correlation is not None:
            props.CorrelationData = case.correlation
        if case.expiry is not None:
            props.MessageExpiryInterval = case.expiry
        if case.user_properties:
            props.UserProperty = case.user_properties
        if case.content_type is not None:
            props.ContentType = case.content_type
        if case.payload_format is not None:
            props.PayloadFormatIndicator = case.payload_format
        self.client.publish(topic, case.payload, qos=case.qos, retain=case.retain, properties=props)

    def wait(self, seen: int, timeout: float) -> bool:
        """Until more than `seen` messages have arrived (True) or `timeout` (False)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while len(self.messages) <= seen:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True

    def close(self) -> None:
        self.closing = True
        close_client(self.client)
