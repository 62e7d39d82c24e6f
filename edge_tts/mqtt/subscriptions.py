"""What the daemon's MQTT connection subscribes to, and when the broker's answer means
serving: every one of its own topics granted. An optional topic (Home Assistant's
status) may be refused, by a broker ACL say: that is logged, and the daemon serves
without it. What SUBSCRIBE says (QoS, retain handling) is `mqtt_client`'s.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import paho.mqtt.client as mqtt
from paho.mqtt.enums import MQTTProtocolVersion
from paho.mqtt.reasoncodes import ReasonCode

from . import client as mqtt_client

_LOGGER = logging.getLogger(__name__)


class Subscriptions:
    def __init__(self, required: Sequence[str], optional: Sequence[str] = ()) -> None:
        self.required = list(required)
        self.optional = list(optional)  # outside the daemon's own topics
        self._lock = threading.Lock()
        self._pending: int | None = None  # the mid of the SUBSCRIBE whose SUBACK counts

    def subscribe(self, client: mqtt.Client, protocol: MQTTProtocolVersion) -> None:
        """Ask for every topic, on a new connection; its SUBACK decides `granted`."""
        topics = [*self.required, *self.optional]
        result, mid = mqtt_client.subscribe(client, protocol, topics)
        with self._lock:
            self._pending = mid if result == mqtt.MQTT_ERR_SUCCESS else None

    def granted(self, mid: int, reasons: list[ReasonCode]) -> bool:
        """True when this SUBACK answers the last SUBSCRIBE and grants every own topic
        (what it refuses is logged)."""
        with self._lock:
            if mid != self._pending:
                return False
            self._pending = None
        required = len(self.required)  # SUBACK answers in the order subscribed
        refused = [str(r) for r in reasons[:required] if r.is_failure]
        if refused:
            _LOGGER.error("Broker refused subscriptions %s: %s", self.required, refused)
            return False
        for topic, reason in zip(self.optional, reasons[required:], strict=False):
            if reason.is_failure:
                _LOGGER.warning("Broker refused %s: %s; serving without it", topic, reason)
        return True
