"""The rollout gate: wait until this device's retained availability topic says `online`.

`edge-ttsd wait-online` runs on the device, from the daemon's venv, as root (to read the
broker password), after the Ansible role has (re)started the unit:

    edge-ttsd wait-online --config /etc/edge-tts/edge-tts.yaml \\
        --password-file /etc/edge-tts/credentials/mqtt-password --timeout 180

It logs in the way the daemon does (`mqtt_client.new_client`: host, port, TLS, user and
password from the same settings) under a client id of its own, subscribes to
`<topic_prefix>/<device_id>/availability`, and succeeds as soon as the retained value is
`online`: the daemon runs and could log in with the credentials just deployed.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import MQTTProtocolVersion
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from ..config import BrokerSettings, Settings
from ..messages.topics import Topics
from .client import close_client, new_client

EXIT_ONLINE = 0
EXIT_TIMEOUT = 1  # not online in time; an unreachable broker ends here too
EXIT_LOGIN_REFUSED = 2  # the broker refused the login: wrong credentials, not authorized
# (a config that does not load exits 78, as for every command)

# Every broker the daemon can use speaks 3.1.1, and a retained value reads the same in both
# protocols: the gate needs neither MQTT 5 nor the daemon's fallback from it.
PROTOCOL = MQTTProtocolVersion.MQTTv311


class BrokerTask:
    """A short job on the broker under the daemon's login (the rollout gate, the Home
    Assistant removal): `done` is set once there is an answer, `refused` says why the
    login failed. Subclasses act in `connected` and hook further callbacks in `bind`."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.refused: str | None = None

    def bind(self, client: mqtt.Client) -> None:
        client.on_connect = self._on_connect

    def connected(self, client: mqtt.Client) -> None:
        raise NotImplementedError

    def _on_connect(
        self,
        client: mqtt.Client,
        _userdata: object,
        _flags: mqtt.ConnectFlags,
        reason: ReasonCode,
        _props: Properties | None,
    ) -> None:
        if reason.is_failure:
            self.refused = str(reason)
            self.done.set()
            return
        self.connected(client)


def run_task(broker: BrokerSettings, client_id: str, task: BrokerTask, timeout: float) -> None:
    """Connect, let `task` work until it is done or `timeout` passes, disconnect."""
    client = new_client(broker, client_id, PROTOCOL)
    task.bind(client)
    try:
        # paho's thread retries a broker that is not up yet until we give up.
        client.connect_async(broker.host, broker.port, keepalive=broker.keepalive)
        client.loop_start()
        task.done.wait(timeout)
    finally:
        close_client(client)


class _Watch(BrokerTask):
    """The availability topic's last value; done once it is `online`."""

    def __init__(self, topic: str) -> None:
        super().__init__()
        self.topic = topic
        self.last: str | None = None

    def bind(self, client: mqtt.Client) -> None:
        super().bind(client)
        client.on_message = self._on_message

    def connected(self, client: mqtt.Client) -> None:
        client.subscribe(self.topic, qos=1)

    def _on_message(self, _client: mqtt.Client, _userdata: object, msg: mqtt.MQTTMessage) -> None:
        self.last = msg.payload.decode("utf-8", "replace")
        if self.last == "online":
            self.done.set()


def gate_broker(broker: BrokerSettings, password_file: Path | None) -> BrokerSettings:
    """The daemon's broker settings, with the password read from `password_file` when it is
    given and exists: the gate runs outside the unit, without its $CREDENTIALS_DIRECTORY."""
    if password_file is None or not broker.username or not password_file.is_file():
        return broker
    return dataclasses.replace(broker, password_file=password_file)


def wait_online(settings: Settings, timeout: float, password_file: Path | None = None) -> int:
    """EXIT_ONLINE, EXIT_TIMEOUT or EXIT_LOGIN_REFUSED, each with a line saying why. Raises
    ConfigError when the password cannot be read."""
    broker = gate_broker(settings.broker, password_file)
    watch = _Watch(Topics(settings.topic_prefix, settings.device_id).availability)
    client_id = f"edge-tts-deploy-{settings.device_id}-{os.getpid()}"
    run_task(broker, client_id, watch, timeout)
    if watch.last == "online":
        print(f"{watch.topic}: online")
        return EXIT_ONLINE
    if watch.refused is not None:
        print(f"{watch.topic}: the broker refused the login: {watch.refused}", file=sys.stderr)
        return EXIT_LOGIN_REFUSED
    print(
        f"{watch.topic}: not online after {timeout:.0f} s (last value: {watch.last or 'none'})",
        file=sys.stderr,
    )
    return EXIT_TIMEOUT
