"""The daemon as a subprocess, with a fake NOTIFY_SOCKET that records sd_notify datagrams."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psutil
import yaml

from .waiting import (
    DEFAULT_TIMEOUT_S,
    READY_MAX_S,
    READY_STALL_S,
    READY_TIMEOUT_S,
    wait_until,
)

REPO = Path(__file__).resolve().parents[2]


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

    def wait_for(self, line: str, timeout: float = DEFAULT_TIMEOUT_S, after: int = 0) -> None:
        """Wait for the exact line `line` among the lines from index `after` on."""
        self.wait_match(lambda got: got == line, timeout, after, repr(line))

    def wait_match(
        self,
        predicate: Callable[[str], bool],
        timeout: float = DEFAULT_TIMEOUT_S,
        after: int = 0,
        what: str = "",
    ) -> str:
        """Wait for a line (from index `after` on) that satisfies `predicate`; return it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = next((got for got in self.lines()[after:] if predicate(got)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"no {what or predicate} from sd_notify within {timeout:g} s; "
                        f"got {self.lines()[-10:]}"
                    )
                self._cond.wait(left)

    def close(self) -> None:
        self._stop.set()
        self.sock.close()
        self._thread.join(5)


def wait_working(
    proc: subprocess.Popen[bytes],
    check: Callable[[], bool],
    what: str,
    timeout: float = READY_TIMEOUT_S,
    log: Callable[[], str] = str,
) -> None:
    """Wait until `check()` holds, for as long as the daemon `proc` works towards it.

    Loading and warming up the voice is CPU-bound: on a busy machine it takes as long as
    the machine needs. So the deadline `timeout` is pushed back while the daemon keeps
    using CPU (up to READY_MAX_S): a daemon that hangs or waits for something that never
    comes fails after `timeout`, or READY_STALL_S after its last burst of work; one that
    exits fails at once. `log()` (the daemon's output) goes into the failure message."""
    started = time.monotonic()
    try:
        process: psutil.Process | None = psutil.Process(proc.pid)
    except psutil.NoSuchProcess:
        process = None
    last_cpu, last_progress = 0.0, started

    def cpu_seconds() -> float:
        try:
            times = process.cpu_times() if process is not None else None
        except psutil.Error:  # exited: the poll() below says so
            return last_cpu
        return 0.0 if times is None else times.user + times.system

    while not check():
        now = time.monotonic()
        if proc.poll() is not None:
            message = f"the daemon exited ({proc.returncode}) before {what}"
            raise AssertionError(f"{message}\n--- daemon log ---\n{log()[-4000:]}")
        used = cpu_seconds()
        if used - last_cpu >= 0.5:
            last_cpu, last_progress = used, now
        deadline = min(max(started + timeout, last_progress + READY_STALL_S), started + READY_MAX_S)
        if now >= deadline:
            raise AssertionError(
                f"no {what} after {now - started:.0f} s (the daemon used {used:.1f} s of CPU, "
                f"the last 0.5 s of it {now - last_progress:.0f} s ago)"
                f"\n--- daemon log ---\n{log()[-4000:]}"
            )
        time.sleep(0.05)


def wait_ready(
    notify: NotifySocket,
    proc: subprocess.Popen[bytes],
    timeout: float = READY_TIMEOUT_S,
    after: int = 0,
    log: Callable[[], str] = str,
) -> None:
    """Wait for READY=1 from `proc` (the daemon, or a wrapper that execs it), for as long as
    it works towards it (see wait_working)."""
    what = f"READY=1 (sd_notify so far: {notify.lines()[-5:]})"
    wait_working(proc, lambda: "READY=1" in notify.lines()[after:], what, timeout, log)


def daemon_config(root: Path, port: int, **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "device_id": "testpi",
        "topic_prefix": "edge-tts",
        "broker": {"host": "127.0.0.1", "port": port, "keepalive": 5},
        "state_dir": str(root / "state"),
        "telemetry": {"interval": 1},
        "log_level": "DEBUG",
    }
    return merge_sections(config, overrides)


def merge_sections(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """`base` with `overrides`: a section (a dict in both) merged key by key, anything
    else replaced."""
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


class DaemonProcess:
    """`python -m edge_tts run --config F` in `root`. `args` go after the config (e.g.
    `--set KEY=VALUE` pairs); `module` replaces `edge_tts` with another module that takes
    the same arguments (a benchmark's wrapper)."""

    def __init__(
        self,
        root: Path,
        config: dict[str, Any],
        env: dict[str, str] | None = None,
        args: Sequence[str] = (),
        module: str = "edge_tts",
    ):
        self.root = root
        self.args = list(args)
        self.module = module
        self.config_path = root / "edge-tts.yaml"
        self.config_path.write_text(yaml.safe_dump(config))
        self.notify = NotifySocket(root / "notify.sock")
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = root / "daemon.log"
        self._log_start = 0  # where this process's output begins in log() (shared file)

    def start(self) -> None:
        # As systemd with WatchdogSec=4 would set it: the health tick pings every 2 s.
        env = {
            **os.environ,
            **self.env,
            "NOTIFY_SOCKET": str(self.notify.path),
            "WATCHDOG_USEC": "4000000",
            "PYTHONUNBUFFERED": "1",
        }
        self._log_start = len(self.log())
        argv = [sys.executable, "-m", self.module, "run", "--config", str(self.config_path)]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [*argv, *self.args],
                env=env,
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def wait_ready(self, timeout: float = READY_TIMEOUT_S, after: int = 0) -> None:
        """Wait for READY=1 while the daemon works towards it; see `wait_ready` above."""
        assert self.proc is not None
        wait_ready(self.notify, self.proc, timeout, after, self.log)

    def log_mark(self) -> int:
        """A position in the log: `wait_log(..., after=mark)` looks only at what follows."""
        return len(self.log())

    def wait_log(
        self,
        pattern: str | re.Pattern[str],
        timeout: float = DEFAULT_TIMEOUT_S,
        count: int = 1,
        after: int | None = None,
    ) -> re.Match[str]:
        """Wait until the log holds `count` matches of the regular expression `pattern`
        after position `after` (default: where this process's output begins); return the
        last. Fails early if the daemon exits without having logged them."""
        regex = re.compile(pattern)
        start = self._log_start if after is None else after

        def found() -> re.Match[str] | None:
            exited = not self.running()  # before reading: what it wrote last is included
            matches = list(regex.finditer(self.log(), start))
            if len(matches) >= count:
                return matches[count - 1]
            if exited:
                raise AssertionError(
                    f"the daemon exited before logging {regex.pattern!r} x{count} "
                    f"(saw {len(matches)})\n--- daemon log ---\n{self.log()[-4000:]}"
                )
            return None

        what = f"{regex.pattern!r} x{count} in the daemon log"
        return wait_until(found, timeout, what, self._log_tail, interval=0.05)

    def wait_exit(self, timeout: float = DEFAULT_TIMEOUT_S) -> int:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"the daemon still runs after {timeout:g} s{self._log_tail()}"
            ) from None

    def terminate(self, timeout: float = 30) -> int:
        """SIGTERM, as systemd stops it; the exit status (AssertionError on a timeout)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.wait_exit(timeout)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(DEFAULT_TIMEOUT_S)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def _log_tail(self) -> str:
        return f"\n--- daemon log ---\n{self.log()[-4000:]}"

    def close(self) -> None:
        """Kill the daemon if it still runs and close the notify socket; idempotent."""
        if self.running():
            self.kill()
        self.notify.close()

    def __enter__(self) -> DaemonProcess:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
