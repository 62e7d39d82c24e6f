"""sd_notify: READY / STATUS / WATCHDOG / STOPPING, and the health tick that earns the pings.

The protocol is one datagram of newline-separated KEY=VALUE lines sent to $NOTIFY_SOCKET, so
this speaks it directly over a socket instead of using systemd-python's `daemon.notify`:
that one only reads $NOTIFY_SOCKET from the environment (no custom path for tests) and is
missing wherever systemd-python is not installed.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Mapping

_LOGGER = logging.getLogger(__name__)


def _address(path: str) -> str | None:
    # A leading '@' names a Linux abstract-namespace socket, spelled with a NUL byte.
    if path.startswith("@"):
        return "\0" + path[1:]
    if path.startswith("/"):
        return path
    return None


def _one_line(text: str) -> str:
    return " ".join(text.splitlines()).strip()


class Notifier:
    """Talks to systemd's notify socket; without one every call is a no-op returning False."""

    def __init__(self, socket_path: str | None = None) -> None:
        path = os.environ.get("NOTIFY_SOCKET", "") if socket_path is None else socket_path
        self._address = _address(path) if path else None
        if path and self._address is None:
            _LOGGER.warning("ignoring unsupported NOTIFY_SOCKET %r", path)
        self.enabled: bool = self._address is not None
        self._warned = False

    def ready(self, status: str | None = None) -> bool:
        return self._send("READY=1", status)

    def status(self, text: str) -> bool:
        return self._send(None, text)

    def watchdog(self) -> bool:
        return self._send("WATCHDOG=1", None)

    def stopping(self, status: str | None = None) -> bool:
        return self._send("STOPPING=1", status)

    def watchdog_interval(self) -> float | None:
        """Seconds between pings (half of WatchdogSec=), or None when no watchdog is asked for."""
        watchdog_pid = os.environ.get("WATCHDOG_PID")
        if watchdog_pid and watchdog_pid.strip() != str(os.getpid()):
            return None  # the watchdog is meant for another process (our parent or a child)
        try:
            usec = int(os.environ.get("WATCHDOG_USEC", ""))
        except ValueError:
            return None
        return usec / 2_000_000 if usec > 0 else None

    def _send(self, state: str | None, status: str | None) -> bool:
        lines = [state] if state else []
        if status is not None:
            lines.append("STATUS=" + _one_line(status))
        if self._address is None or not lines:
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.sendto("\n".join(lines).encode("utf-8"), self._address)
        except OSError as err:
            self._warn_once(err)
            return False
        return True

    def _warn_once(self, err: OSError) -> None:
        # systemd gone (or a stale socket) repeats every tick; one warning says it all.
        log = _LOGGER.debug if self._warned else _LOGGER.warning
        log("sd_notify to %r failed: %s", self._address, err)
        self._warned = True


class HealthTick:
    """Pings the watchdog only while every component check passes (a duty of the
    daemon's tick, periodic.py)."""

    def __init__(
        self,
        notifier: Notifier,
        checks: Mapping[str, Callable[[], bool]],
        status: Callable[[], str] | None = None,
    ) -> None:
        self._notifier = notifier
        self._checks = dict(checks)
        self._status = status
        self._last_status: str | None = None
        self.last_failures: tuple[str, ...] = ()

    def tick(self) -> tuple[str, ...]:
        """Run every check once, ping or report; returns the names that failed."""
        failures = tuple(name for name in self._checks if not self._passes(name))
        self._log_change(failures)
        self.last_failures = failures
        if failures:
            self._set_status(f"degraded: {', '.join(failures)}")
        else:
            self._notifier.watchdog()
            if self._status is not None:
                self._set_status(self._status())
            elif self._last_status is not None:
                # No summary callback: still clear our stale "degraded" line after recovery.
                self._set_status("healthy")
        return failures

    def _passes(self, name: str) -> bool:
        try:
            return bool(self._checks[name]())
        except Exception:
            # Log only on the transition into failure; a dead component raises every tick.
            if name not in self.last_failures:
                _LOGGER.warning("health check %r raised", name, exc_info=True)
            return False

    def _log_change(self, failures: tuple[str, ...]) -> None:
        if failures == self.last_failures:
            return
        if failures:
            _LOGGER.warning("unhealthy, withholding watchdog ping: %s", ", ".join(failures))
        else:
            _LOGGER.info("all health checks pass again: %s", ", ".join(self.last_failures))

    def _set_status(self, text: str) -> None:
        # STATUS only on change: the line is for humans, the ping carries liveness.
        if text != self._last_status:
            self._notifier.status(text)
            self._last_status = text
