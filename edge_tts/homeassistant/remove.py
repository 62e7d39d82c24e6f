"""`edge-ttsd homeassistant remove`: take a decommissioned device out of Home Assistant.

An empty retained message on the discovery topic makes HA delete the device and its
entities; one on the retained volume topic leaves nothing of the device on the broker for
HA to pick up again. It logs in as the rollout gate does (the daemon's broker settings,
`online_gate`). A daemon still running publishes discovery again at its next connect:
stop it first, or set `homeassistant.discovery: false`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from ..config import Settings
from ..messages.topics import Topics
from ..mqtt.online_gate import EXIT_LOGIN_REFUSED, EXIT_TIMEOUT, BrokerTask, gate_broker, run_task
from .discovery import config_topic

EXIT_REMOVED = 0


def retained_topics(settings: Settings) -> list[str]:
    """What the device leaves retained for Home Assistant, discovery first."""
    topics = Topics(settings.topic_prefix, settings.device_id)
    return [config_topic(settings.homeassistant.prefix, settings.device_id), topics.volume]


class _Clearing(BrokerTask):
    """Publishes an empty retained message on each topic; done once the broker has
    taken them all."""

    def __init__(self, topics: list[str]) -> None:
        super().__init__()
        self.topics = topics
        self.pending: set[int] = set()
        self.cleared = 0

    def bind(self, client: mqtt.Client) -> None:
        super().bind(client)
        client.on_publish = self._on_publish

    def connected(self, client: mqtt.Client) -> None:
        # Both callbacks run on paho's thread: no PUBACK is handled before this returns.
        for topic in self.topics:
            self.pending.add(client.publish(topic, b"", qos=1, retain=True).mid)

    def _on_publish(
        self,
        _client: mqtt.Client,
        _userdata: object,
        mid: int,
        _reason: ReasonCode,
        _props: Properties | None,
    ) -> None:
        if mid in self.pending:
            self.pending.discard(mid)
            self.cleared += 1
        if self.cleared == len(self.topics):
            self.done.set()


def remove(settings: Settings, timeout: float, password_file: Path | None = None) -> int:
    """EXIT_REMOVED once the broker has taken every empty retained message; EXIT_TIMEOUT
    or EXIT_LOGIN_REFUSED otherwise, each with a line saying why. Raises ConfigError when
    the password cannot be read."""
    broker = gate_broker(settings.broker, password_file)
    clearing = _Clearing(retained_topics(settings))
    run_task(broker, f"edge-tts-remove-{settings.device_id}-{os.getpid()}", clearing, timeout)
    if clearing.refused is not None:
        print(f"the broker refused the login: {clearing.refused}", file=sys.stderr)
        return EXIT_LOGIN_REFUSED
    if clearing.cleared < len(clearing.topics):
        print(
            f"not removed: the broker at {broker.host}:{broker.port} took "
            f"{clearing.cleared} of {len(clearing.topics)} messages in {timeout:g} s",
            file=sys.stderr,
        )
        return EXIT_TIMEOUT
    for topic in clearing.topics:
        print(f"cleared {topic}")
    return EXIT_REMOVED
