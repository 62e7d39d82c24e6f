"""Wait until this device's retained availability topic says `online`; the rollout gate.

Run with the daemon's venv python, as root (to read the broker password):

    edge-tts-wait-online.py --config /etc/edge-tts/edge-tts.yaml \
        --password-file /etc/edge-tts/credentials/mqtt-password --timeout 120

It connects with the daemon's own broker settings (host, port, TLS, user) under a client id
of its own, subscribes to `<topic_prefix>/<device_id>/availability` and exits 0 as soon as
the retained value is `online`: the daemon is running and could log in to the broker with
the credentials just deployed. Exit 1 on timeout (naming the last value seen; an unreachable
broker ends here too), 2 when the broker refuses the login, 78 for a bad config.
"""

from __future__ import annotations

import argparse
import os
import ssl
import sys
import threading
import time
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from edge_tts.config import ConfigError, Settings, load_settings
from edge_tts.messages import Topics


def _client(settings: Settings, password_file: Path | None) -> mqtt.Client:
    broker = settings.broker
    client = mqtt.Client(
        CallbackAPIVersion.VERSION2,
        client_id=f"edge-tts-deploy-{settings.device_id}-{os.getpid()}",
        protocol=mqtt.MQTTv311,
    )
    if broker.username:
        password = None
        if password_file is not None and password_file.is_file():
            password = password_file.read_text(encoding="utf-8").rstrip("\r\n") or None
        client.username_pw_set(broker.username, password or broker.password())
    if broker.tls is not None:
        tls = broker.tls
        client.tls_set(
            ca_certs=str(tls.ca_file) if tls.ca_file else None,
            certfile=str(tls.cert_file) if tls.cert_file else None,
            keyfile=str(tls.key_file) if tls.key_file else None,
            cert_reqs=ssl.CERT_NONE if tls.insecure else ssl.CERT_REQUIRED,
        )
        client.tls_insecure_set(tls.insecure)
    return client


def wait_online(settings: Settings, password_file: Path | None, timeout: float) -> int:
    topic = Topics(settings.topic_prefix, settings.device_id).availability
    state: dict[str, Any] = {"last": None, "refused": None}
    online = threading.Event()
    failed = threading.Event()

    def on_connect(client: mqtt.Client, _u: object, _f: object, reason: Any, _p: object) -> None:
        if reason.is_failure:
            state["refused"] = str(reason)
            failed.set()
            return
        client.subscribe(topic, qos=1)

    def on_message(_c: mqtt.Client, _u: object, msg: mqtt.MQTTMessage) -> None:
        state["last"] = msg.payload.decode("utf-8", "replace")
        if state["last"] == "online":
            online.set()

    client = _client(settings, password_file)
    client.on_connect = on_connect
    client.on_message = on_message
    deadline = time.monotonic() + timeout
    try:
        client.connect_async(settings.broker.host, settings.broker.port, keepalive=30)
        client.loop_start()
        while time.monotonic() < deadline and not online.is_set() and not failed.is_set():
            online.wait(0.2)
    finally:
        client.disconnect()
        client.loop_stop()
    if online.is_set():
        print(f"{topic}: online")
        return 0
    if failed.is_set():
        print(f"{topic}: the broker refused the login: {state['refused']}", file=sys.stderr)
        return 2
    print(
        f"{topic}: not online after {timeout:.0f} s (last value: {state['last'] or 'none'})",
        file=sys.stderr,
    )
    return 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=Path("/etc/edge-tts/edge-tts.yaml"))
    parser.add_argument("--password-file", type=Path, help="else the config's own source")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds")
    args = parser.parse_args()
    try:
        settings = load_settings(args.config)
    except ConfigError as err:
        print(f"{args.config}: {err}", file=sys.stderr)
        return 78
    return wait_online(settings, args.password_file, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
