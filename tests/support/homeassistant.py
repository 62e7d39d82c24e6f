"""A real Home Assistant Core for end-to-end tests: its venv, a throwaway instance wired to
a test broker, and a client for its REST and websocket APIs.

HA needs Python 3.13 and 820 MB of packages, so it lives in a venv of its own
(`ha_setup.sh`, built once into the CI cache under a lock); this side talks to it over
HTTP only, with the standard library (a minimal websocket client below), so the project's
venv gains no dependency. Provisioning follows ../shared/ha/ha_run.py: a fresh config
dir, the owner created through the onboarding API, a long-lived token, and the MQTT entry
added through the config-flow API, as the UI would.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import struct
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from edge_tts.state.atomic import exclusive

from .broker import free_port
from .waiting import stop_process, wait_until

SETUP = Path(__file__).with_name("ha_setup.sh")
HA_VERSION = "2025.4.4"  # the newest that runs on the machine's Python 3.13.0
SETUP_TIMEOUT_S = 1800.0  # cold: ~2.5 min on a quiet machine, much longer on a busy one
START_TIMEOUT_S = 600.0  # HA's first start: 5 s quiet, minutes at a load of 10+
RESTART_EXIT_CODE = 100  # HA's "restart me"
CLIENT_ID = "http://127.0.0.1/"  # any URL: HA's auth needs one for the code flow

CONFIG = """homeassistant:
  name: edge-tts-e2e
  latitude: 52.0
  longitude: 4.0
  elevation: 0
  unit_system: metric
  time_zone: UTC
  country: NL
  currency: EUR
http:
  server_host: 127.0.0.1
  server_port: {port}
api:
config:
onboarding:
logger:
  default: warning
  logs:
    homeassistant.components.mqtt: info
"""


def ha_venv(cache: Path) -> Path:
    """HA's venv in `cache` (HA_VENV overrides), built once per machine; two test runs
    (or a developer's harness run) build it once, under one lock."""
    venv = Path(os.environ.get("HA_VENV") or cache / "ha-venv")
    with exclusive(cache / ".ha-venv.lock"):
        env = {**os.environ, "HA_VENV": str(venv), "HA_VERSION": HA_VERSION}
        done = subprocess.run(
            ["bash", str(SETUP)], env=env, timeout=SETUP_TIMEOUT_S, capture_output=True, text=True
        )
    if "no Python 3.13 found" in done.stderr:
        # HA 2025.4 needs 3.13, which Debian bookworm does not package (pyenv's is used).
        pytest.skip(f"Home Assistant needs Python 3.13: {done.stderr.strip()}")
    if done.returncode != 0:
        raise AssertionError(f"{SETUP.name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return venv


class WebSocket:
    """Just enough RFC 6455 for HA's API: text frames, client masking, pings answered."""

    def __init__(self, host: str, port: int, path: str, timeout: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        self._buffer = b""
        head = self._read_until(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"no websocket upgrade: {head[:200]!r}")

    def send_json(self, message: dict[str, Any]) -> None:
        self._send(0x1, json.dumps(message).encode())

    def recv_json(self) -> Any:
        parts: list[bytes] = []
        while True:
            fin, opcode, data = self._frame()
            if opcode == 0x9:  # ping
                self._send(0xA, data)
            elif opcode == 0x8:
                raise ConnectionError("HA closed the websocket")
            elif opcode in (0x0, 0x1):
                parts.append(data)
                if fin:
                    return json.loads(b"".join(parts))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._send(0x8, b"")
        self.sock.close()

    def _send(self, opcode: int, data: bytes) -> None:
        mask = os.urandom(4)
        size = len(data)
        if size < 126:
            header = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
        elif size < 2**16:
            header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, size)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(header + mask + masked)

    def _frame(self) -> tuple[bool, int, bytes]:
        first, second = self._read(2)
        size = second & 0x7F
        if size == 126:
            (size,) = struct.unpack("!H", self._read(2))
        elif size == 127:
            (size,) = struct.unpack("!Q", self._read(8))
        mask = self._read(4) if second & 0x80 else b""
        data = self._read(size)
        if mask:
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        return bool(first & 0x80), first & 0x0F, data

    def _read(self, n: int) -> bytes:
        while len(self._buffer) < n:
            self._fill()
        data, self._buffer = self._buffer[:n], self._buffer[n:]
        return data

    def _read_until(self, end: bytes) -> bytes:
        while end not in self._buffer:
            self._fill()
        head, _, self._buffer = self._buffer.partition(end)
        return head

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("HA closed the connection")
        self._buffer += chunk


class HomeAssistant:
    """One HA instance in a fresh config dir, its MQTT integration on `broker_port`."""

    def __init__(self, venv: Path, broker_port: int) -> None:
        self.venv = venv
        self.broker_port = broker_port
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config_dir = Path(tempfile.mkdtemp(prefix="ha-config-"))
        self.log_path = self.config_dir / "home-assistant.log"
        self.token: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._ws: WebSocket | None = None
        self._ws_id = 0

    # --- process -------------------------------------------------------------------

    def start(self) -> None:
        (self.config_dir / "configuration.yaml").write_text(CONFIG.format(port=self.port))
        self._launch()
        self._provision()

    def _launch(self) -> None:
        with (self.config_dir / "stdout.log").open("ab") as out:
            hass = str(self.venv / "bin" / "hass")
            self.proc = subprocess.Popen(
                [hass, "-c", str(self.config_dir), "--log-file", str(self.log_path)],
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> None:
        if self._ws is not None:
            self._ws.close()
            self._ws = None
        if self.proc is not None:
            stop_process(self.proc, timeout=60)
            self.proc = None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def errors_about(self, *needles: str) -> list[str]:
        """ERROR lines (with their traceback) that mention one of `needles`."""
        entries = self.log().split("\n20")  # each entry starts with its date
        return [e for e in entries if " ERROR " in e[:80] and any(n in e for n in needles)]

    def _provision(self) -> None:
        wait_until(self._answers, START_TIMEOUT_S, "HA's HTTP server", self._log_tail, 0.5)
        user = self.rest(
            "POST",
            "/api/onboarding/users",
            {
                "client_id": CLIENT_ID,
                "name": "Test",
                "username": "test",
                "password": "test-password",
                "language": "en",
            },
        )
        token = self.rest(
            "POST",
            "/auth/token",
            form={"grant_type": "authorization_code", "code": user["auth_code"]}
            | {"client_id": CLIENT_ID},
        )
        self.token = token["access_token"]
        self.token = self.ws("auth/long_lived_access_token", client_name="e2e", lifespan=30)
        self._reconnect_ws()  # the websocket logged in with the short-lived token
        wait_until(self.running, START_TIMEOUT_S, "HA to run", self._log_tail, 0.5)
        self.flow("mqtt", {"broker": "127.0.0.1", "port": self.broker_port})

    def _answers(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(f"HA exited with {self.proc.returncode}{self._log_tail()}")
        try:
            self.rest("GET", "/api/onboarding")
        except (OSError, urllib.error.URLError):
            return False
        return True

    def running(self) -> bool:
        try:
            return bool(self.rest("GET", "/api/config")["state"] == "RUNNING")
        except (OSError, urllib.error.URLError):
            return False  # restarting

    def _log_tail(self) -> str:
        return f"\n--- HA log ---\n{self.log()[-3000:]}"

    # --- APIs ----------------------------------------------------------------------

    def rest(
        self,
        method: str,
        path: str,
        body: object = None,
        form: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> Any:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        data = None
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.url + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as err:
            detail = err.read()[:300]
            raise AssertionError(f"{method} {path}: HTTP {err.code} {detail!r}") from None
        return json.loads(raw) if raw else None

    def ws(self, kind: str, **fields: Any) -> Any:
        """One websocket command's result (AssertionError when HA refuses it)."""
        if self._ws is None:
            self._reconnect_ws()
        assert self._ws is not None
        self._ws_id += 1
        self._ws.send_json({"id": self._ws_id, "type": kind, **fields})
        while True:
            message = self._ws.recv_json()
            if message.get("id") == self._ws_id and message.get("type") == "result":
                if not message["success"]:
                    raise AssertionError(f"{kind}: {message['error']}")
                return message["result"]

    def _reconnect_ws(self) -> None:
        if self._ws is not None:
            self._ws.close()
        ws = WebSocket("127.0.0.1", self.port, "/api/websocket", timeout=60)
        ws.recv_json()  # auth_required
        ws.send_json({"type": "auth", "access_token": self.token})
        if ws.recv_json().get("type") != "auth_ok":
            raise AssertionError("HA refused the websocket login")
        self._ws = ws

    def flow(self, handler: str, data: dict[str, Any]) -> dict[str, Any]:
        """Add an integration through the config-flow API, as the UI does."""
        step = self.rest("POST", "/api/config/config_entries/flow", {"handler": handler})
        data = _fill_required(step.get("data_schema", []), data)
        result = self.rest("POST", f"/api/config/config_entries/flow/{step['flow_id']}", data)
        if result["type"] != "create_entry":
            raise AssertionError(f"{handler} flow: {result.get('reason') or result.get('errors')}")
        entry: dict[str, Any] = result["result"]
        return entry

    def restart(self) -> None:
        """HA's own restart: it exits with 100 for its supervisor (here: us) to start it
        again, in the same config dir; back when it runs again."""
        assert self.proc is not None
        with contextlib.suppress(OSError, urllib.error.URLError):  # it may hang up on us
            self.call("homeassistant", "restart")
        if self._ws is not None:
            self._ws.close()
            self._ws = None
        code = self.proc.wait(START_TIMEOUT_S)
        assert code == RESTART_EXIT_CODE, f"HA exited with {code}{self._log_tail()}"
        self._launch()
        wait_until(self.running, START_TIMEOUT_S, "HA to run again", self._log_tail, 0.5)

    # --- what HA made of a device ------------------------------------------------------

    def device(self, identifier: str) -> dict[str, Any] | None:
        devices = self.ws("config/device_registry/list")
        return next((d for d in devices if ["mqtt", identifier] in d["identifiers"]), None)

    def entities(self, device_id: str) -> list[dict[str, Any]]:
        return [e for e in self.ws("config/entity_registry/list") if e["device_id"] == device_id]

    def state(self, entity_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.rest("GET", f"/api/states/{entity_id}")
        return found

    def call(self, domain: str, service: str, **data: Any) -> None:
        self.rest("POST", f"/api/services/{domain}/{service}", data)


def _fill_required(schema: list[dict[str, Any]], data: dict[str, Any]) -> dict[str, Any]:
    """Answer what the form requires and the caller left out, as the UI's defaults would:
    a section recursively, a switch off, a choice its first option."""
    for field in schema:
        if field.get("type") == "expandable":
            data[field["name"]] = _fill_required(
                field.get("schema", []), data.get(field["name"], {})
            )
        elif field["name"] not in data and field.get("required") and field.get("default") is None:
            selector = field.get("selector", {})
            if "boolean" in selector:
                data[field["name"]] = False
            elif "select" in selector:
                option = selector["select"]["options"][0]
                data[field["name"]] = option["value"] if isinstance(option, dict) else option
    return data


def wait_for(check: Any, what: str, ha: HomeAssistant, timeout: float = 120) -> Any:
    """`wait_until` with HA's log tail in the failure message."""
    return wait_until(check, timeout, what, lambda: f"--- HA log ---\n{ha.log()[-3000:]}", 0.5)


__all__ = ["HomeAssistant", "WebSocket", "ha_venv", "wait_for"]
