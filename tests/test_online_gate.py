"""`edge-ttsd wait-online`, the rollout gate, against a real Mosquitto.

Exit codes (edge_tts/mqtt/online_gate.py): 0 once the device's retained availability says
`online`, 1 when it does not within --timeout (also when no broker answers), 2 when the
broker refuses the login, 78 for a config that does not load.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from edge_tts.cli import EXIT_REFUSED
from edge_tts.mqtt.online_gate import EXIT_LOGIN_REFUSED, EXIT_ONLINE, EXIT_TIMEOUT

from .conftest import REPO, run_cli
from .support.broker import Broker, Recorder, free_port, make_tls_material
from .support.waiting import DEFAULT_TIMEOUT_S, stop_process, wait_until

pytestmark = pytest.mark.daemon

DEVICE = "gate-pi"
AVAILABILITY = f"edge-tts/{DEVICE}/availability"
USER, PASSWORD = "gate-user", "gate-secret"
# The gate's own deadline where it is the behaviour under test (a timeout); generous where
# it only bounds a test that should succeed.
EXPIRES_S = 2.0
GENEROUS_S = 60.0


def write_config(path: Path, **broker: Any) -> Path:
    path.write_text(yaml.safe_dump({"device_id": DEVICE, "broker": broker}))
    return path


def gate_argv(config: Path, *args: str, timeout: float = GENEROUS_S) -> list[str]:
    return ["wait-online", "--config", str(config), "--timeout", str(timeout), *args]


def gate(config: Path, *args: str, timeout: float = GENEROUS_S) -> subprocess.CompletedProcess[str]:
    """The gate as the role runs it: a process of its own."""
    return run_cli(*gate_argv(config, *args, timeout=timeout), timeout=timeout + 30)


def mosquitto_password_file(path: Path, user: str, password: str) -> Path:
    subprocess.run(["mosquitto_passwd", "-c", "-b", str(path), user, password], check=True)
    return path


def started(broker: Broker, request: pytest.FixtureRequest) -> Broker:
    request.addfinalizer(broker.stop)  # also if start() fails half-way
    broker.start()
    return broker


def recorder(port: int, request: pytest.FixtureRequest, **kwargs: Any) -> Recorder:
    rec = Recorder(port, ["edge-tts/#"], **kwargs)
    request.addfinalizer(rec.close)
    return rec


def test_exits_0_when_the_retained_availability_says_online(
    broker: Broker, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    recorder(broker.port, request).publish(AVAILABILITY, "online", retain=True)
    result = gate(write_config(tmp_path / "c.yaml", host="127.0.0.1", port=broker.port))
    assert result.returncode == EXIT_ONLINE, result.stderr
    assert result.stdout.strip() == f"{AVAILABILITY}: online"


def test_waits_until_the_device_comes_online(
    broker: Broker, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    config = write_config(tmp_path / "c.yaml", host="127.0.0.1", port=broker.port)
    rec = recorder(broker.port, request)
    rec.publish(AVAILABILITY, "offline", retain=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "edge_tts", *gate_argv(config)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    request.addfinalizer(lambda: stop_process(proc))
    # Mosquitto logs each client's id as it connects: the gate is in, and has seen `offline`
    # or will see `online` as the retained value when it subscribes; either way it must wait.
    wait_until(
        lambda: (
            f"as edge-tts-deploy-{DEVICE}-{proc.pid}" in broker.log() or proc.poll() is not None
        ),
        DEFAULT_TIMEOUT_S,
        "the gate to connect",
        broker.log,
    )
    assert proc.poll() is None, proc.communicate()
    rec.publish(AVAILABILITY, "online", retain=True)
    out, err = proc.communicate(timeout=GENEROUS_S + 30)
    assert proc.returncode == EXIT_ONLINE, err
    assert out.strip() == f"{AVAILABILITY}: online"


def test_a_device_that_stays_offline_exits_1_naming_the_last_value(
    broker: Broker, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    recorder(broker.port, request).publish(AVAILABILITY, "offline", retain=True)
    config = write_config(tmp_path / "c.yaml", host="127.0.0.1", port=broker.port)
    result = gate(config, timeout=EXPIRES_S)
    assert result.returncode == EXIT_TIMEOUT
    assert (
        f"{AVAILABILITY}: not online after {EXPIRES_S:.0f} s (last value: offline)" in result.stderr
    )


def test_no_broker_within_the_timeout_exits_1(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", host="127.0.0.1", port=free_port())  # nobody
    result = gate(config, timeout=EXPIRES_S)
    assert result.returncode == EXIT_TIMEOUT
    assert f"{AVAILABILITY}: not online after {EXPIRES_S:.0f} s (last value: none)" in result.stderr


def test_refused_credentials_exit_2_with_the_brokers_answer(
    workdir: Path, request: pytest.FixtureRequest
) -> None:
    passwd = mosquitto_password_file(workdir / "passwd", USER, PASSWORD)
    broker = started(Broker(workdir, password_file=passwd), request)
    wrong = workdir / "wrong-password"
    wrong.write_text("not-the-password\n")
    config = write_config(
        workdir / "c.yaml",
        host="127.0.0.1",
        port=broker.port,
        username=USER,
        password_file=str(wrong),
    )
    result = gate(config)  # refused at once: the timeout is not reached
    assert result.returncode == EXIT_LOGIN_REFUSED, result.stderr
    assert result.stderr.strip() == (
        f"{AVAILABILITY}: the broker refused the login: Not authorized"
    )
    assert result.stdout == ""


def test_logs_in_over_tls_with_the_password_file_given(
    workdir: Path, request: pytest.FixtureRequest
) -> None:
    """As the role runs it: the config names the broker, its CA and the user; the password
    comes from --password-file (LoadCredential='s file) and replaces the config's source."""
    ca, cert, key = make_tls_material(workdir)
    passwd = mosquitto_password_file(workdir / "passwd", USER, PASSWORD)
    broker = started(Broker(workdir, password_file=passwd, tls=(cert, key)), request)
    rec = recorder(broker.port, request, auth=(USER, PASSWORD), ca=ca)
    rec.publish(AVAILABILITY, "online", retain=True)
    wrong = workdir / "stale-password"
    wrong.write_text("the-old-password")
    right = workdir / "mqtt-password"
    right.write_text(PASSWORD)
    config = write_config(
        workdir / "c.yaml",
        host="127.0.0.1",
        port=broker.port,
        tls={"ca_file": str(ca)},
        username=USER,
        password_file=str(wrong),
    )
    result = gate(config, "--password-file", str(right))
    assert result.returncode == EXIT_ONLINE, result.stderr
    refused = gate(config)  # without it, the config's own (stale) password
    assert refused.returncode == EXIT_LOGIN_REFUSED, refused.stderr


def test_a_config_that_does_not_load_exits_78(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"device_id": DEVICE, "brokr": {"host": "127.0.0.1"}}))
    result = gate(bad, timeout=EXPIRES_S)
    assert result.returncode == EXIT_REFUSED
    assert str(bad) in result.stderr and "broker" in result.stderr  # suggests the key
