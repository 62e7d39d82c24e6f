"""The daemon as a subprocess, with a fake NOTIFY_SOCKET that records sd_notify datagrams."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]


class NotifySocket:
    def __init__(self, path: Path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.2)
        self.datagrams: list[tuple[float, str]] = []
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="notify-reader", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            with self._cond:
                self.datagrams.append((time.monotonic(), data.decode()))
                self._cond.notify_all()

    def lines(self) -> list[str]:
        with self._cond:
            return [line for _, d in self.datagrams for line in d.splitlines()]

    def wait_for(self, line: str, timeout: float, after: int = 0) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while line not in self.lines()[after:]:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {line!r} from sd_notify; got {self.lines()[-10:]}")
                self._cond.wait(left)

    def close(self) -> None:
        self._stop.set()
        self.sock.close()
        self._thread.join(5)


def daemon_config(root: Path, port: int, **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "device_id": "testpi",
        "topic_prefix": "edge-tts",
        "broker": {"host": "127.0.0.1", "port": port, "keepalive": 5},
        "state_dir": str(root / "state"),
        "telemetry": {"interval": 1},
        "log_level": "DEBUG",
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            config[key] = {**config[key], **value}
        else:
            config[key] = value
    return config


class DaemonProcess:
    def __init__(self, root: Path, config: dict[str, Any], env: dict[str, str] | None = None):
        self.root = root
        self.config_path = root / "edge-tts.yaml"
        self.config_path.write_text(yaml.safe_dump(config))
        self.notify = NotifySocket(root / "notify.sock")
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = root / "daemon.log"

    def start(self) -> None:
        # As systemd with WatchdogSec=4 would set it: the health tick pings every 2 s.
        env = {
            **os.environ,
            **self.env,
            "NOTIFY_SOCKET": str(self.notify.path),
            "WATCHDOG_USEC": "4000000",
            "PYTHONUNBUFFERED": "1",
        }
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "edge_tts", "run", "--config", str(self.config_path)],
                env=env,
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def wait_ready(self, timeout: float = 60, after: int = 0) -> None:
        try:
            self.notify.wait_for("READY=1", timeout, after)
        except AssertionError as err:
            raise AssertionError(f"{err}\n--- daemon log ---\n{self.log()[-4000:]}") from None

    def terminate(self, timeout: float = 15) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def close(self) -> None:
        if self.running():
            self.kill()
        self.notify.close()
