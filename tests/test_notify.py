"""sd_notify against a real AF_UNIX datagram socket, and the health tick that gates pings."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from edge_tts.daemon.notify import HealthTick, Notifier
from edge_tts.daemon.periodic import Duty, Tick

pytestmark = [
    pytest.mark.unit,
    pytest.mark.serial,
]  # serial: timing-sensitive


class FakeSystemd:
    """The receiving end of NOTIFY_SOCKET, as systemd binds it."""

    def __init__(self, sock: socket.socket, path: str) -> None:
        self.sock = sock
        self.path = path

    def receive(self, timeout: float = 30.0) -> str:
        self.sock.settimeout(timeout)
        return self.sock.recv(4096).decode("utf-8")

    def pending(self) -> list[str]:
        self.sock.setblocking(False)
        messages = []
        try:
            while True:
                messages.append(self.sock.recv(4096).decode("utf-8"))
        except BlockingIOError:
            return messages


@pytest.fixture()
def fake_systemd(tmp_path: Path) -> Iterator[FakeSystemd]:
    path = tmp_path / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        yield FakeSystemd(sock, str(path))


@pytest.fixture()
def abstract_systemd() -> Iterator[FakeSystemd]:
    name = f"edge-tts-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        yield FakeSystemd(sock, "@" + name)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"):
        monkeypatch.delenv(name, raising=False)


def test_every_message_reaches_the_socket(fake_systemd: FakeSystemd) -> None:
    notifier = Notifier(fake_systemd.path)
    assert notifier.enabled
    assert notifier.ready("voice loaded")
    assert fake_systemd.receive() == "READY=1\nSTATUS=voice loaded"
    assert notifier.status("queue 2\nplaying")
    assert fake_systemd.receive() == "STATUS=queue 2 playing"
    assert notifier.watchdog()
    assert fake_systemd.receive() == "WATCHDOG=1"
    assert notifier.stopping()
    assert fake_systemd.receive() == "STOPPING=1"
    assert notifier.ready()
    assert fake_systemd.receive() == "READY=1"


def test_abstract_namespace_socket(abstract_systemd: FakeSystemd) -> None:
    notifier = Notifier(abstract_systemd.path)
    assert notifier.ready()
    assert abstract_systemd.receive() == "READY=1"
    assert notifier.stopping("bye")
    assert abstract_systemd.receive() == "STOPPING=1\nSTATUS=bye"


def test_socket_path_defaults_to_the_environment(
    fake_systemd: FakeSystemd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", fake_systemd.path)
    assert Notifier().watchdog()
    assert fake_systemd.receive() == "WATCHDOG=1"


def test_disabled_without_a_socket() -> None:
    notifier = Notifier()
    assert not notifier.enabled
    assert notifier.ready("x") is False
    assert notifier.status("x") is False
    assert notifier.watchdog() is False
    assert notifier.stopping() is False


def test_unsupported_address_disables(caplog: pytest.LogCaptureFixture) -> None:
    assert not Notifier("relative/path.sock").enabled
    assert "unsupported NOTIFY_SOCKET" in caplog.text


def test_a_vanished_socket_returns_false_without_raising(tmp_path: Path) -> None:
    notifier = Notifier(str(tmp_path / "gone.sock"))
    assert notifier.enabled
    assert notifier.watchdog() is False
    assert notifier.watchdog() is False


def test_watchdog_interval_is_half_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    notifier = Notifier()
    assert notifier.watchdog_interval() is None
    monkeypatch.setenv("WATCHDOG_USEC", "30000000")
    assert notifier.watchdog_interval() == 15.0
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    assert notifier.watchdog_interval() == 15.0
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid() + 1))
    assert notifier.watchdog_interval() is None
    monkeypatch.delenv("WATCHDOG_PID")
    monkeypatch.setenv("WATCHDOG_USEC", "garbage")
    assert notifier.watchdog_interval() is None
    monkeypatch.setenv("WATCHDOG_USEC", "0")
    assert notifier.watchdog_interval() is None


class Switch:
    """A health check the test can turn off, or make raise."""

    def __init__(self) -> None:
        self.ok = True
        self.explode = False

    def __call__(self) -> bool:
        if self.explode:
            raise RuntimeError("worker thread vanished")
        return self.ok


def test_health_tick_pings_only_while_all_checks_pass(
    fake_systemd: FakeSystemd, caplog: pytest.LogCaptureFixture
) -> None:
    mqtt, workers = Switch(), Switch()
    tick = HealthTick(Notifier(fake_systemd.path), {"mqtt": mqtt, "workers": workers})

    assert tick.tick() == ()
    assert fake_systemd.pending() == ["WATCHDOG=1"]

    mqtt.ok = False
    assert tick.tick() == ("mqtt",)
    assert tick.last_failures == ("mqtt",)
    assert fake_systemd.pending() == ["STATUS=degraded: mqtt"]
    assert tick.tick() == ("mqtt",)
    assert fake_systemd.pending() == []  # no ping, and the status is not repeated

    workers.explode = True
    assert tick.tick() == ("mqtt", "workers")
    assert fake_systemd.pending() == ["STATUS=degraded: mqtt, workers"]
    assert "worker thread vanished" in caplog.text

    mqtt.ok, workers.explode = True, False
    assert tick.tick() == ()
    assert fake_systemd.pending() == ["WATCHDOG=1", "STATUS=healthy"]
    assert caplog.text.count("unhealthy, withholding watchdog ping") == 2


def test_health_tick_reports_the_summary_when_healthy(fake_systemd: FakeSystemd) -> None:
    summary = ["idle"]
    tick = HealthTick(Notifier(fake_systemd.path), {"audio": lambda: True}, lambda: summary[0])
    tick.tick()
    tick.tick()
    summary[0] = "speaking"
    tick.tick()
    assert fake_systemd.pending() == [
        "WATCHDOG=1",
        "STATUS=idle",
        "WATCHDOG=1",
        "WATCHDOG=1",
        "STATUS=speaking",
    ]


def test_health_thread_pings_stops_and_resumes(fake_systemd: FakeSystemd) -> None:
    audio = Switch()
    health = HealthTick(Notifier(fake_systemd.path), {"audio": audio})
    tick = Tick([Duty("health", 0.05, health.tick, at_start=True)], name="health")
    tick.start()
    try:
        assert fake_systemd.receive() == "WATCHDOG=1"
        audio.explode = True
        assert _wait_for(fake_systemd, "STATUS=degraded: audio")
        fake_systemd.pending()
        # The behaviour under test: several intervals pass without a single ping while the
        # check keeps raising (a busy machine runs fewer ticks, which cannot fail this).
        assert not _wait_for(fake_systemd, "WATCHDOG=1", timeout=0.3)
        audio.explode = False
        assert _wait_for(fake_systemd, "WATCHDOG=1")
    finally:
        tick.stop(timeout=30)
    assert not any(t.name == "health" and t.is_alive() for t in threading.enumerate())


def _wait_for(fake: FakeSystemd, message: str, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            if fake.receive(timeout=left) == message:
                return True
        except TimeoutError:
            return False
    return False


def test_one_tick_runs_each_duty_at_its_own_pace_and_survives_one_that_raises() -> None:
    """The daemon's periodic duties share one thread: a fast duty runs many times while a
    slow one runs once, and a duty that raises neither stops the tick nor the others."""
    fast, slow, failures = threading.Semaphore(0), threading.Event(), []

    def broken() -> None:
        failures.append(1)
        raise RuntimeError("a bug in a duty")

    tick = Tick(
        [
            Duty("fast", 0.01, fast.release),
            Duty("slow", 3600, slow.set, at_start=True),
            Duty("broken", 0.01, broken),
        ]
    )
    tick.start()
    try:
        for _ in range(5):  # five runs of the fast duty, and the broken one ran too
            assert fast.acquire(timeout=30)
        assert slow.is_set() and failures
    finally:
        tick.stop(timeout=30)
    assert not any(t.name == "tick" and t.is_alive() for t in threading.enumerate())
    with pytest.raises(ValueError, match="interval must be positive"):
        Tick([Duty("never", 0, fast.release)])
