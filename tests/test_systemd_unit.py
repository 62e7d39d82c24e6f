"""systemd/edge-ttsd.service: what systemd 252 says about it, and the daemon inside its sandbox.

No systemd runs as PID 1 here, so `systemd-analyze verify` runs against a scratch root that
holds the unit, systemd's own units and a stand-in for ExecStart, and the sandbox is
rebuilt by tests/support/run_sandboxed.py (seccomp filters from systemd's own syscall groups,
address families, namespaces, capabilities) around the real daemon.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml

from edge_tts.cli import EXIT_REFUSED
from edge_tts.config import HTTP_TOKEN_CREDENTIAL, PASSWORD_CREDENTIAL

from .support import run_sandboxed
from .support.broker import Broker, Recorder
from .support.daemon_proc import NotifySocket, daemon_config, wait_ready
from .support.soundcard import VirtualSoundCard
from .support.waiting import REQUEST_TIMEOUT_S, stop_process

# Timing-sensitive (docs/development.md): scripts/test runs it outside the parallel workers.
pytestmark = pytest.mark.serial

REPO = Path(__file__).resolve().parents[1]
UNIT = REPO / "systemd" / "edge-ttsd.service"
SANDBOX = REPO / "tests" / "support" / "run_sandboxed.py"
MAX_EXPOSURE = 2.5
SYSTEMD_UNITS = next(
    (p for p in (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system")) if p.is_dir()),
    None,
)


def _needs_systemd_analyze() -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.fail("systemd-analyze is missing (Debian package systemd)")


def systemd_version() -> int:
    out = subprocess.run(["systemd-analyze", "--version"], capture_output=True, text=True).stdout
    match = re.match(r"systemd (\d+)", out)
    assert match, out
    return int(match.group(1))


@pytest.fixture(scope="module")
def unit() -> run_sandboxed.Unit:
    return run_sandboxed.Unit(UNIT)


# --- the unit's settings --------------------------------------------------------------------


@pytest.mark.unit
def test_service_type_watchdog_and_restart_policy(unit: run_sandboxed.Unit) -> None:
    assert unit.get("Type") == "notify"
    assert unit.get("NotifyAccess") == "main"
    assert 10 <= run_sandboxed._seconds(unit.get("WatchdogSec")) <= 120
    assert unit.get("Restart") == "on-failure"
    assert str(EXIT_REFUSED) in unit.words("RestartPreventExitStatus")
    assert int(unit.values["Unit.StartLimitBurst"][-1]) >= 1
    assert unit.values["Unit.StartLimitIntervalSec"]
    assert unit.words("ExecStart") == [
        "/opt/edge-tts/venv/bin/edge-ttsd",
        "run",
        "--config",
        "/etc/edge-tts/edge-tts.yaml",
    ]
    assert unit.words("ExecReload") == ["/bin/sh", "-c", 'kill -HUP "$MAINPID"']  # the lexicon


@pytest.mark.unit
def test_identity_credentials_and_state(unit: run_sandboxed.Unit) -> None:
    assert unit.get("User") == "edge-tts"
    assert unit.words("SupplementaryGroups") == ["audio"]
    credentials = dict(value.partition(":")[::2] for value in unit.all("LoadCredential"))
    assert set(credentials) == {PASSWORD_CREDENTIAL, HTTP_TOKEN_CREDENTIAL}
    assert all(source.startswith("/etc/edge-tts/credentials/") for source in credentials.values())
    assert unit.words("StateDirectory") == ["edge-tts"]
    assert unit.get("UMask") == "0077"


@pytest.mark.unit
def test_hardening_settings(unit: run_sandboxed.Unit) -> None:
    expected = {
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "NoNewPrivileges": "yes",
        "DevicePolicy": "closed",
        "DeviceAllow": "char-alsa rw",
        "SystemCallArchitectures": "native",
        # Measured, see test_memory_deny_write_execute_breaks_playback.
        "MemoryDenyWriteExecute": "no",
    }
    assert {key: unit.get(key) for key in expected} == expected
    assert "Service.CapabilityBoundingSet" in unit.values
    assert unit.all("CapabilityBoundingSet") == []  # the empty set
    assert unit.get("PrivateDevices", "no") == "no"  # yes would hide /dev/snd
    assert set(unit.words("RestrictAddressFamilies")) == {"AF_UNIX", "AF_INET", "AF_INET6"}
    assert unit.all("SystemCallFilter")[0] == "@system-service"
    high, limit = (_bytes(unit.get(key)) for key in ("MemoryHigh", "MemoryMax"))
    assert 0 < high < limit


def _bytes(value: str) -> int:
    factors = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(value[:-1]) * factors[value[-1]] if value[-1] in factors else int(value)


# --- systemd-analyze --------------------------------------------------------------------------


def _verify_root(tmp_path: Path, unit_text: str) -> Path:
    """A scratch root: systemd's own units, our unit, and an executable at the path of
    each of its commands (ExecStart=, ExecReload=, ...): verify checks they exist."""
    assert SYSTEMD_UNITS is not None, "no systemd units on this machine"
    root = tmp_path / "root"
    shutil.copytree(SYSTEMD_UNITS, root / "usr/lib/systemd/system", symlinks=True)
    (root / "etc/systemd/system").mkdir(parents=True)
    (root / "etc/systemd/system/edge-ttsd.service").write_text(unit_text)
    commands = re.findall(r"^Exec\w+=[-@:+!]*(/\S+)", unit_text, re.MULTILINE)
    assert "/opt/edge-tts/venv/bin/edge-ttsd" in commands
    for command in commands:
        exe = root / command.lstrip("/")
        exe.parent.mkdir(parents=True, exist_ok=True)
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    return root


def _verify(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "systemd-analyze",
            "verify",
            "--man=no",
            f"--root={root}",
            "/etc/systemd/system/edge-ttsd.service",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.daemon
def test_verify_prints_no_warning(tmp_path: Path) -> None:
    _needs_systemd_analyze()
    result = _verify(_verify_root(tmp_path, UNIT.read_text()))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "edge-ttsd" not in output, output


@pytest.mark.daemon
def test_verify_would_report_a_key_systemd_252_does_not_know(tmp_path: Path) -> None:
    """The check above can fail: a key from a newer systemd is reported."""
    _needs_systemd_analyze()
    if systemd_version() != 252:
        pytest.skip(f"systemd {systemd_version()} here; the unit targets 252")
    text = UNIT.read_text().replace("[Service]\n", "[Service]\nImportCredential=mqtt-*\n")
    result = _verify(_verify_root(tmp_path, text))
    assert "Unknown key 'ImportCredential'" in result.stdout + result.stderr


@pytest.mark.daemon
def test_security_exposure_is_at_most_2_5() -> None:
    _needs_systemd_analyze()
    result = subprocess.run(
        ["systemd-analyze", "security", "--offline=yes", "--no-pager", str(UNIT)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    match = re.search(r"Overall exposure level for edge-ttsd\.service: (\d+\.\d+)", result.stdout)
    assert match, result.stdout + result.stderr
    exposure = float(match.group(1))
    print(f"systemd-analyze security: exposure {exposure}")
    assert exposure <= MAX_EXPOSURE, result.stdout


# --- the daemon inside the sandbox -------------------------------------------------------------


@pytest.fixture()
def rig() -> Iterator[tuple[Path, Broker, Recorder, VirtualSoundCard]]:
    work = Path(tempfile.mkdtemp(prefix="ttsd-sb-"))  # short: unix socket paths are limited
    card_dir = work / "card"
    card_dir.mkdir()
    with contextlib.ExitStack() as stack:  # stops what started, in reverse, also on failure
        stack.callback(shutil.rmtree, work, ignore_errors=True)
        card = VirtualSoundCard(card_dir)
        stack.callback(card.stop)
        card.start()
        broker = stack.enter_context(Broker(work))
        recorder = Recorder(broker.port, ["edge-tts/#"])
        stack.callback(recorder.close)
        yield work, broker, recorder, card


def _run_sandboxed(
    work: Path, port: int, card: VirtualSoundCard, *settings: str
) -> tuple[subprocess.Popen[bytes], NotifySocket, Path]:
    """The daemon (this checkout) under the unit's seccomp filters, as this user: the user,
    mount and credential parts need the installed tree (tests/test_deploy.py covers them)."""
    config = work / "edge-tts.yaml"
    config.write_text(yaml.safe_dump(daemon_config(work, port)))
    notify = NotifySocket(work / f"notify-{len(list(work.glob('notify-*')))}.sock")
    log = work / "daemon.log"
    overrides = ["User=", "StateDirectory=", "LoadCredential=", *settings]
    command = [
        sys.executable,
        str(SANDBOX),
        *(f"--set={item}" for item in overrides),
        *(f"--env={key}={value}" for key, value in card.env.items()),
        f"--env=NOTIFY_SOCKET={notify.path}",
        f"--env=PYTHONPATH={REPO}",
        "--",
        sys.executable,
        "-m",
        "edge_tts",
        "run",
        "--config",
        str(config),
    ]
    with log.open("ab") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    return proc, notify, log


def _stop(proc: subprocess.Popen[bytes], notify: NotifySocket) -> int:
    """SIGTERM (SIGKILL after 30 s); the exit status."""
    try:
        return stop_process(proc, timeout=30)
    finally:
        notify.close()


@pytest.mark.daemon
def test_daemon_plays_inside_the_unit_seccomp_sandbox(
    rig: tuple[Path, Broker, Recorder, VirtualSoundCard],
) -> None:
    """SystemCallFilter=@system-service ~@privileged @resources, RestrictAddressFamilies=,
    RestrictNamespaces=: the daemon still loads the voice, talks MQTT and plays through the
    (PulseAudio-backed) ALSA device with sounddevice's callback stream."""
    work, broker, recorder, card = rig
    proc, notify, log = _run_sandboxed(work, broker.port, card)
    try:
        wait_ready(notify, proc, log=log.read_text)
        mark = card.mark()
        recorder.publish("edge-tts/testpi/say", json.dumps({"text": "Sandbox check.", "id": "s1"}))
        finished = recorder.wait_event(
            "edge-tts/testpi/events", "finished", "s1", timeout=REQUEST_TIMEOUT_S
        )
        assert finished["audio_ms"] > 300
        card.wait_sound(mark)
        audio = card.captured(mark)
        assert int(np.abs(audio.astype(np.int32)).max()) > 1000, "no audio came out"
    finally:
        code = _stop(proc, notify)
    assert code == 0, log.read_text()[-3000:]
    assert "SIGSYS" not in log.read_text()


@pytest.mark.daemon
def test_memory_deny_write_execute_breaks_playback(
    rig: tuple[Path, Broker, Recorder, VirtualSoundCard],
) -> None:
    """Why the unit says MemoryDenyWriteExecute=no: sounddevice makes its PortAudio callback
    with cffi's ffi.callback(), which needs a writable and executable page. If this test
    fails because playback works, cffi/sounddevice changed: turn the setting on."""
    work, broker, recorder, card = rig
    proc, notify, log = _run_sandboxed(work, broker.port, card, "MemoryDenyWriteExecute=yes")
    try:
        wait_ready(notify, proc, log=log.read_text)  # voice, numpy, onnxruntime: all fine
        recorder.publish("edge-tts/testpi/say", json.dumps({"text": "Is it there?", "id": "m1"}))
        rejected = recorder.wait_event(
            "edge-tts/testpi/events", "rejected", "m1", timeout=REQUEST_TIMEOUT_S
        )
    finally:
        _stop(proc, notify)
    assert "audio output unavailable" in json.dumps(rejected)
    assert "write+execute memory for ffi.callback()" in log.read_text()


@pytest.mark.daemon
def test_synthesis_alone_runs_with_memory_deny_write_execute(tmp_path: Path) -> None:
    """Python, numpy and onnxruntime need no writable+executable memory (no JIT)."""
    out = tmp_path / "mdwe.wav"
    result = subprocess.run(
        [
            sys.executable,
            str(SANDBOX),
            "--set=User=",
            "--set=StateDirectory=",
            "--set=LoadCredential=",
            "--set=MemoryDenyWriteExecute=yes",
            f"--env=PYTHONPATH={REPO}",
            f"--env=HOME={tmp_path}",
            "--",
            sys.executable,
            "-m",
            "edge_tts",
            "say",
            "--out",
            str(out),
            "Checked without writable code pages.",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 20_000
