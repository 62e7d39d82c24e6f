"""A real Mosquitto broker on a free loopback port, and a test client that records."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from edge_tts.mqtt.client import close_client

from .waiting import DEFAULT_TIMEOUT_S, REQUEST_TIMEOUT_S, stop_process, wait_until


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Broker:
    def __init__(
        self, root: Path, password_file: Path | None = None, tls: tuple[Path, Path] | None = None
    ):
        self.root = root
        self.port = free_port()
        self.password_file = password_file  # mosquitto_passwd file: no anonymous clients
        self.tls = tls  # (server certificate, its key): TLS only on this listener
        # Log every packet (set before start()): what the broker received, as it says it,
        # for a test that must know rather than infer (e.g. that our PUBACK reached it).
        self.log_packets = False
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if shutil.which("mosquitto") is None:
            raise RuntimeError("mosquitto is not installed (scripts/setup --test installs it)")
        conf = self.root / "mosquitto.conf"
        # Persistence keeps sessions and queued QoS 1 messages across a broker restart.
        # Started as root (CI), mosquitto would drop to a user that cannot write our temp dir.
        stay = "user root\n" if os.geteuid() == 0 else ""
        auth = (
            f"allow_anonymous false\npassword_file {self.password_file}\n"
            if self.password_file
            else "allow_anonymous true\n"
        )
        tls = f"certfile {self.tls[0]}\nkeyfile {self.tls[1]}\n" if self.tls else ""
        packets = "log_type all\n" if self.log_packets else ""
        conf.write_text(
            f"listener {self.port} 127.0.0.1\n{tls}{auth}{stay}{packets}"
            f"persistence true\npersistence_location {self.root}/\n"
            "autosave_interval 1\nmax_queued_messages 1000\n"
        )
        self._proc = start_mosquitto(self.root, conf, [self.port])

    def log(self) -> str:
        return mosquitto_log(self.root)

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self) -> int | None:
        """Stop Mosquitto (SIGKILL if SIGTERM is not enough); safe to call twice, and
        after a failed start. Its exit status (None: it was not running): 0 only when it
        saved its state on the way out; killed, it keeps only its last autosave, up to
        2 s old, and may deliver again what it had since been acknowledged."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        return stop_process(proc, timeout=10)

    def kill(self) -> None:
        """Kill Mosquitto at once (SIGKILL: a crash or power cut); start() brings it back on
        the same port with what it had persisted."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait(timeout=DEFAULT_TIMEOUT_S)

    def __enter__(self) -> Broker:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


def start_mosquitto(root: Path, conf: Path, ports: list[int]) -> subprocess.Popen[bytes]:
    """Start Mosquitto with `conf`, logging to root/mosquitto.log; return once every port
    accepts connections."""
    with (root / "mosquitto.log").open("ab") as log:
        proc = subprocess.Popen(
            ["mosquitto", "-c", str(conf)], stdout=log, stderr=subprocess.STDOUT
        )

    def listening() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"mosquitto exited with {proc.returncode}: {mosquitto_log(root)}")
        try:
            for port in ports:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    try:
        wait_until(listening, DEFAULT_TIMEOUT_S, f"mosquitto to listen on {ports}", interval=0.05)
    except BaseException:
        stop_process(proc, timeout=5)
        raise
    return proc


def mosquitto_log(root: Path) -> str:
    path = root / "mosquitto.log"
    return path.read_text(errors="replace") if path.exists() else ""


class Recorder:
    """An MQTT client that publishes and keeps every message it sees, in order."""

    def __init__(
        self,
        port: int,
        topics: list[str],
        auth: tuple[str, str] | None = None,
        ca: Path | None = None,
    ):
        self.messages: list[tuple[float, str, bytes, bool]] = []
        self._cond = threading.Condition()
        self._topics = topics
        self._subscribed = threading.Event()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=MQTTProtocolVersion.MQTTv5)
        self.client.on_connect = self._on_connect
        self.client.on_message = self._on_message
        if auth is not None:
            self.client.username_pw_set(*auth)
        if ca is not None:
            self.client.tls_set(ca_certs=str(ca))
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        if not self._subscribed.wait(DEFAULT_TIMEOUT_S):
            close_client(self.client)  # or its network thread outlives the test
            raise RuntimeError(f"recorder did not connect to port {port}")

    def _on_connect(self, client: mqtt.Client, *_: Any) -> None:
        for topic in self._topics:
            client.subscribe(topic, qos=1)
        self._subscribed.set()

    def _on_message(self, _c: mqtt.Client, _u: object, msg: mqtt.MQTTMessage) -> None:
        with self._cond:
            self.messages.append((time.monotonic(), msg.topic, bytes(msg.payload), msg.retain))
            self._cond.notify_all()

    def publish(self, topic: str, payload: str | bytes, qos: int = 1, **kwargs: Any) -> float:
        """Publish and wait for the broker's acknowledgement; the monotonic time it came."""
        info = self.client.publish(topic, payload, qos=qos, **kwargs)
        info.wait_for_publish(DEFAULT_TIMEOUT_S)
        if not info.is_published():
            raise AssertionError(f"publish to {topic} not acknowledged: {info.rc}")
        return time.monotonic()

    def on_topic(self, topic: str) -> list[bytes]:
        """Payloads seen on `topic`, in order."""
        with self._cond:
            return [p for _, t, p, _ in self.messages if t == topic]

    def events(self, topic: str) -> list[dict[str, Any]]:
        with self._cond:
            return [json.loads(p) for _, t, p, _ in self.messages if t == topic]

    def wait_for(
        self, predicate: Callable[[], bool], timeout: float = DEFAULT_TIMEOUT_S, what: str = ""
    ) -> None:
        """Wait until `predicate()` holds; it is re-checked at every message."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [(t, p[:200]) for _, t, p, _ in self.messages[-10:]]
                    raise AssertionError(
                        f"timed out after {timeout:g} s waiting for {what or predicate}; "
                        f"last messages: {seen}"
                    )
                self._cond.wait(left)

    def wait_event(
        self,
        topic: str,
        kind: str,
        request_id: str | None = None,
        timeout: float = REQUEST_TIMEOUT_S,
    ) -> dict[str, Any]:
        def find() -> dict[str, Any] | None:
            for e in self.events(topic):
                if e.get("event") == kind and (request_id is None or e.get("id") == request_id):
                    return e
            return None

        self.wait_for(lambda: find() is not None, timeout, f"{kind} {request_id or ''} on {topic}")
        found = find()
        assert found is not None
        return found

    def close(self) -> None:
        close_client(self.client)


def make_tls_material(root: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a server certificate for 127.0.0.1: (ca, cert, key)."""
    ca_key, ca, key, csr, cert = (
        root / n for n in ("ca.key", "ca.pem", "srv.key", "srv.csr", "srv.pem")
    )
    run = [
        (
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=edge-tts test CA",
            "-keyout",
            str(ca_key),
            "-out",
            str(ca),
        ),
        (
            "openssl",
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(csr),
        ),
        (
            "openssl",
            "x509",
            "-req",
            "-in",
            str(csr),
            "-CA",
            str(ca),
            "-CAkey",
            str(ca_key),
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            str(cert),
            "-extfile",
            str(_san(root)),
        ),
    ]
    for argv in run:
        subprocess.run(argv, check=True, capture_output=True)
    for path in (key, cert):
        path.chmod(0o644)  # mosquitto reads them after dropping privileges
    return ca, cert, key


def _san(root: Path) -> Path:
    ext = root / "san.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1\n")
    return ext
