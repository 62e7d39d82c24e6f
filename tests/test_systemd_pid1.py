"""edge-ttsd.service under a real systemd 252 as PID 1: readiness, the watchdog, exit 78.

tests/test_systemd_unit.py checks the unit with `systemd-analyze` and rebuilds its sandbox
without systemd; tests/test_deploy.py converges a debootstrapped Debian root. This module
converges such a root the same way (tests/support/rootfs.py: the real playbook, through
Ansible's chroot connection), then boots it with `systemd-nspawn --boot`: systemd 252 from
Debian runs as PID 1 of the container, starts the enabled unit at boot as it would on a
board, and the test drives it with systemctl and journalctl inside the container (nsenter).
It shows:

(a) READY=1 reaches systemd, and the unit becomes active only after it: the daemon sends
    READY=1 only once it is connected to the broker, so it boots with the broker down and
    the unit must stay `activating` (while systemd does receive the daemon's STATUS= lines);
    it becomes `active` only after the broker is started (then: the main process runs
    unprivileged under systemd's own seccomp filter, and answers a `say` over MQTT);
(b) the watchdog restarts a hung daemon: with WatchdogSec=10 (a drop-in), the main process
    is frozen with SIGSTOP, and systemd must kill it ("Watchdog timeout") and start a new one;
(c) RestartPreventExitStatus=78: with an invalid config the daemon exits 78 and the unit
    goes to `failed` without a scheduled restart, and stays there.

The three tests share one booted container and run in this order ((a) needs the fresh boot).
The root lives on a tmpfs (dpkg's fsyncs and deleting ~1 GB are slow on a disk). The
container shares the host's network (the broker listens on the host's 127.0.0.1). On a
host without systemd as PID 1 (CI, a sandbox) the container runs in the caller's cgroup
(--keep-unit); cgroup controllers may be read-only inside (a cgroup v1/hybrid host), so
MemoryMax=, TasksMax= and DeviceAllow= are not what is checked here.

Needs what tests/support/rootfs.py needs (root, debootstrap, network or its warm cache,
mosquitto, openssl) and systemd-nspawn (Debian package systemd-container, installed on
demand). Skipped only when this machine refuses to start a container at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from .support.broker import Recorder, start_mosquitto
from .support.rootfs import (
    DEVICE,
    SecureBroker,
    attach_caches,
    cached_root_tarball,
    playbook,
    require_root_and_tools,
    run,
    snapshot_sources,
    umount_all,
    umount_below,
    unpack_root,
    write_inventory,
)
from .support.waiting import wait_until

pytestmark = pytest.mark.system

UNIT = "edge-ttsd.service"
CONFIG = "etc/edge-tts/edge-tts.yaml"
DROP_IN = f"etc/systemd/system/{UNIT}.d/zz-pid1-test.conf"
WATCHDOG_S = 10
POLL_S = 0.2  # each look is a systemctl run through nsenter
INSIDE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "SYSTEMD_PAGER": "",
    "SYSTEMD_COLORS": "0",
}
PROPERTIES = (
    "ActiveState",
    "SubState",
    "Result",
    "MainPID",
    "NRestarts",
    "StatusText",
    "ExecMainCode",
    "ExecMainStatus",
    "ExecMainStartTimestampMonotonic",
    "ActiveEnterTimestampMonotonic",
    "WatchdogUSec",
    "RestartUSec",
)


def _nspawn_mode_args() -> list[str]:
    # Without systemd on the host there is no one to ask for a scope: stay in our cgroup.
    return [] if Path("/run/systemd/system").is_dir() else ["--keep-unit"]


def _require_nspawn() -> None:
    if shutil.which("systemd-nspawn") is None:
        result = run(["apt-get", "install", "-y", "-qq", "systemd-container"], 600)
        assert result.returncode == 0, f"cannot install systemd-container: {result.stderr}"


@dataclass
class Machine:
    work: Path
    root: Path
    broker: SecureBroker
    log: Path
    nspawn: subprocess.Popen[bytes] | None = None
    leader: int = 0  # PID 1 of the container, as the host sees it

    # --- the broker: down at boot, so that the daemon cannot be ready yet --------------------

    def start_broker(self) -> float:
        """Start Mosquitto (again) on the same ports; returns time.monotonic() before it."""
        if self.broker._proc is not None:
            return 0.0
        before = time.monotonic()
        self.broker._proc = start_mosquitto(
            self.broker.root,
            self.broker.root / "mosquitto.conf",
            [self.broker.plain_port, self.broker.tls_port],
        )
        return before

    # --- inside the container ----------------------------------------------------------------

    def inside(self, *cmd: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["nsenter", f"--target={self.leader}", "--all", *cmd],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=INSIDE_ENV,
        )

    def systemctl(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        return self.inside("systemctl", "--no-pager", *args, timeout=timeout)

    def show(self) -> dict[str, str]:
        result = self.systemctl("show", UNIT, "-p", ",".join(PROPERTIES), timeout=30)
        assert result.returncode == 0, result.stderr
        return dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)

    def journal(self, *args: str) -> str:
        result = self.inside("journalctl", "--no-pager", "-o", "cat", *args, timeout=60)
        return result.stdout + result.stderr

    def diagnostics(self) -> str:
        parts = [f"nspawn log (tail):\n{self.log.read_text(errors='replace')[-3000:]}"]
        if self.leader and Path(f"/proc/{self.leader}").exists():
            show = self.systemctl("show", UNIT, "-p", ",".join(PROPERTIES), timeout=30)
            parts.append(f"systemctl show:\n{show.stdout}{show.stderr}")
            parts.append("journal (tail):\n" + self.journal("-b", "-n", "60", "-u", UNIT))
        parts.append(f"broker log (tail):\n{self.broker.log()[-1500:]}")
        return "\n".join(parts)

    # --- boot and power off --------------------------------------------------------------------

    def boot(self) -> None:
        with self.log.open("ab") as out:
            self.nspawn = subprocess.Popen(
                [
                    "systemd-nspawn",
                    "--quiet",
                    "--register=no",
                    *_nspawn_mode_args(),
                    f"--machine=etts-pid1-{os.getpid()}",
                    "--link-journal=no",
                    "--console=read-only",
                    f"--directory={self.root}",
                    "--boot",
                    "systemd.log_color=0",
                    "systemd.show_status=0",
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

        def leader() -> int | None:
            assert self.nspawn is not None
            if self.nspawn.poll() is not None:
                raise AssertionError(
                    f"systemd-nspawn exited ({self.nspawn.returncode})\n{self.diagnostics()}"
                )
            for stat in Path("/proc").glob("[0-9]*/stat"):
                with contextlib.suppress(OSError):
                    comm, _, rest = stat.read_text().rpartition(")")
                    # the child nspawn forked into the new PID namespace, once it is systemd
                    if int(rest.split()[1]) == self.nspawn.pid and comm.endswith("(systemd"):
                        return int(stat.parent.name)
            return None

        self.leader = wait_until(
            leader, 60, "systemd as PID 1 of the container", self.diagnostics, interval=POLL_S
        )

        def manager_up() -> bool:
            state = self.systemctl("is-system-running", timeout=30).stdout.strip()
            return state in {"starting", "running", "degraded"}

        wait_until(
            manager_up,
            60,
            "systemd in the container to answer systemctl",
            self.diagnostics,
            interval=POLL_S,
        )

    def power_off(self) -> None:
        if self.nspawn is not None and self.nspawn.poll() is None:
            self.nspawn.send_signal(signal.SIGTERM)  # nspawn asks the container to power off
            try:
                self.nspawn.wait(90)
            except subprocess.TimeoutExpired:
                self.nspawn.kill()
                self.nspawn.wait(30)
        if self.leader:  # killing PID 1 of a PID namespace kills everything in it
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.leader, signal.SIGKILL)
        if self.nspawn is not None:
            propagate = Path(f"/run/systemd/nspawn/propagate/etts-pid1-{os.getpid()}")
            with contextlib.suppress(OSError):
                propagate.rmdir()  # nspawn leaves it when /run is not a tmpfs


def _probe_nspawn(root: Path) -> None:
    """Can this machine start a container at all? Tried on the pristine root, before the
    (slow) converge; a refusal here is the sandbox's, not the project's."""
    result = run(
        [
            "systemd-nspawn",
            "--quiet",
            "--register=no",
            *_nspawn_mode_args(),
            "--link-journal=no",
            "--console=pipe",
            f"--directory={root}",
            "/bin/true",
        ],
        120,
    )
    if result.returncode != 0:
        pytest.skip(
            "this machine cannot start a container: `systemd-nspawn -D ROOT /bin/true` "
            f"exited {result.returncode}: {(result.stdout + result.stderr).strip()[-800:]}"
        )


@pytest.fixture(scope="module")
def machine() -> Iterator[Machine]:
    require_root_and_tools()
    _require_nspawn()
    tarball = cached_root_tarball()
    work = Path(tempfile.mkdtemp(prefix="ettspid1-"))
    root = work / "root"
    root.mkdir()
    broker = SecureBroker(work)
    state = Machine(work, root, broker, work / "nspawn.log")
    # The root in memory: dpkg's fsyncs, and removing ~1 GB afterwards, are slow on a disk.
    in_memory = run(["mount", "-t", "tmpfs", "-o", "size=6G,mode=0755", "ettspid1", str(root)], 60)
    try:
        unpack_root(tarball, root)
        _probe_nspawn(root)

        # The converge, as in tests/test_deploy.py (one run: the second is tested there).
        attach_caches(root)
        broker.start()  # makes the TLS material and the password file the inventory names
        write_inventory(work, root, broker, snapshot_sources(work / "src"))
        converge_s, _ = playbook(work / "inventory.yml", work / "ansible.log")
        umount_below(root)
        wants = root / f"etc/systemd/system/multi-user.target.wants/{UNIT}"
        assert wants.is_symlink(), "the playbook did not enable the unit"

        broker.stop()  # down at boot: see test_unit_becomes_active_only_after_ready
        booting = time.monotonic()
        state.boot()
        print(f"\nconverge {converge_s:.0f} s, boot {time.monotonic() - booting:.0f} s")
        yield state
    finally:
        stopping = time.monotonic()
        state.power_off()
        print(f"\npower off {time.monotonic() - stopping:.0f} s")
        broker.stop()
        if os.environ.get("EDGE_TTS_CI_KEEP"):  # for a post-mortem: logs and the target root
            umount_below(root)
            print(
                f"kept {work}"
                + (f" (umount {root} when done)" if in_memory.returncode == 0 else "")
            )
        else:
            umount_all(root)
            shutil.rmtree(work, ignore_errors=True)


def _seconds(span: str) -> float:
    """systemctl show's time spans: "5s", "100ms", "1min 30s"."""
    units = {"min": 60.0, "ms": 0.001, "us": 0.000001, "s": 1.0}
    total = 0.0
    for word in span.split():
        for suffix, factor in units.items():
            if word.endswith(suffix) and word[: -len(suffix)].isdigit():
                total += int(word[: -len(suffix)]) * factor
                break
        else:
            raise AssertionError(f"cannot read the time span {span!r}")
    return total


def test_unit_becomes_active_only_after_ready(machine: Machine) -> None:
    """(a) The unit, started at boot, waits in `activating` for READY=1, which the daemon
    sends only once it reaches the broker; systemd hears its STATUS= meanwhile."""

    def waiting() -> dict[str, str] | None:
        props = machine.show()
        assert props["ActiveState"] in {"inactive", "activating"}, props
        if props["StatusText"].startswith("waiting for broker"):
            return props
        return None

    began = time.monotonic()
    props = wait_until(
        waiting, 180, "the daemon to wait for the broker", machine.diagnostics, interval=POLL_S
    )
    print(f"\nwaiting for the broker after {time.monotonic() - began:.0f} s")
    assert (props["ActiveState"], props["SubState"]) == ("activating", "start"), props
    assert int(props["MainPID"]) > 0
    assert props["ActiveEnterTimestampMonotonic"] == "0", props  # never active so far

    broker_up_us = machine.start_broker() * 1_000_000

    def active() -> dict[str, str] | None:
        props = machine.show()
        assert props["ActiveState"] in {"activating", "active"}, props
        return props if props["ActiveState"] == "active" else None

    props = wait_until(
        active, 120, "the unit to become active", machine.diagnostics, interval=POLL_S
    )
    print(f"active {time.monotonic() - broker_up_us / 1e6:.0f} s after the broker started")
    assert props["SubState"] == "running", props
    assert not props["StatusText"].startswith("waiting for broker"), props
    # The same CLOCK_MONOTONIC inside and out (no time namespace): active after the broker.
    assert int(props["ActiveEnterTimestampMonotonic"]) > broker_up_us, props

    assert "Ready: " in machine.journal("-b", "-u", UNIT)  # logged right after READY=1

    # It is the real sandbox: who runs, and with what.
    pid = props["MainPID"]
    status = machine.inside("cat", f"/proc/{pid}/status").stdout
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    assert fields["Uid"].split()[0] != "0"
    assert fields["CapEff"].strip() == "0000000000000000"
    assert fields["NoNewPrivs"].strip() == "1"
    assert fields["Seccomp"].strip() == "2"

    # `systemctl reload` (ExecReload=) reads the lexicon again, in the same process.
    reload = machine.systemctl("reload", UNIT, timeout=60)
    assert reload.returncode == 0, reload.stdout + reload.stderr
    wait_until(
        lambda: "Lexicon reloaded: " in machine.journal("-b", "-u", UNIT),
        60,
        "the daemon to log its lexicon reload",
        machine.diagnostics,
        interval=POLL_S,
    )
    assert machine.show()["MainPID"] == pid

    # And it speaks: a say request over MQTT comes back finished.
    recorder = Recorder(machine.broker.plain_port, ["edge-tts/#"])
    try:
        recorder.publish(f"edge-tts/{DEVICE}/say", json.dumps({"text": "PID one.", "id": "p1"}))
        recorder.wait_event(f"edge-tts/{DEVICE}/events", "finished", "p1", timeout=90)
    finally:
        recorder.close()


def test_watchdog_restarts_a_hung_daemon(machine: Machine) -> None:
    """(b) WatchdogSec=10 (a drop-in); SIGSTOP the main process; systemd kills it and starts
    a new one, because Restart=on-failure covers a watchdog timeout."""
    machine.start_broker()
    drop_in = machine.root / DROP_IN
    drop_in.parent.mkdir(parents=True, exist_ok=True)
    drop_in.write_text(f"[Service]\nWatchdogSec={WATCHDOG_S}\n")
    reload = machine.systemctl("daemon-reload")
    assert reload.returncode == 0, reload.stderr
    began = time.monotonic()
    restart = machine.systemctl("restart", UNIT)  # blocks until READY=1
    print(f"\nrestart with WatchdogSec={WATCHDOG_S}: {time.monotonic() - began:.0f} s")
    assert restart.returncode == 0, restart.stderr + machine.diagnostics()
    before = machine.show()
    assert before["ActiveState"] == "active", before
    assert before["WatchdogUSec"] in {f"{WATCHDOG_S}s", str(WATCHDOG_S * 1_000_000)}, before
    hung = before["MainPID"]
    timeouts = machine.journal("-b", "-u", UNIT).count("Watchdog timeout")

    frozen = machine.inside("sh", "-c", f"kill -STOP {hung}")  # systemctl kill adds SIGCONT
    assert frozen.returncode == 0, frozen.stderr

    def frozen_state() -> bool:
        stat = machine.inside("cat", f"/proc/{hung}/stat").stdout
        return stat.rsplit(")", 1)[-1].split()[0] in {"T", "t"} if stat else False

    wait_until(
        frozen_state, 10, "the main process to be stopped", machine.diagnostics, interval=POLL_S
    )

    def restarted() -> dict[str, str] | None:
        props = machine.show()
        if (
            int(props["NRestarts"]) > int(before["NRestarts"])
            and props["ActiveState"] == "active"
            and props["MainPID"] not in {"0", hung}
        ):
            return props
        return None

    # timeout + RestartSec + a voice load, generously
    began = time.monotonic()
    after = wait_until(
        restarted, 180, "the watchdog to restart the daemon", machine.diagnostics, interval=POLL_S
    )
    print(f"SIGSTOP to active again: {time.monotonic() - began:.0f} s")
    assert int(after["NRestarts"]) == int(before["NRestarts"]) + 1, after
    journal = machine.journal("-b", "-u", UNIT)
    assert journal.count("Watchdog timeout") == timeouts + 1, journal[-3000:]
    assert "Failed with result 'watchdog'" in journal, journal[-3000:]


def test_exit_78_is_not_restarted(machine: Machine) -> None:
    """(c) An invalid config: the daemon exits 78 (EX_CONFIG) and, by
    RestartPreventExitStatus=78, the unit fails for good instead of restarting."""
    config = machine.root / CONFIG
    settings = yaml.safe_load(config.read_text())
    settings["no_such_setting"] = True  # the config loader refuses unknown keys
    config.write_text(yaml.safe_dump(settings))
    started = machine.systemctl("restart", "--no-block", UNIT)
    assert started.returncode == 0, started.stderr

    def failed() -> dict[str, str] | None:
        props = machine.show()
        assert props["SubState"] != "auto-restart", props  # a restart would be scheduled
        return props if props["ActiveState"] == "failed" else None

    props = wait_until(failed, 120, "the unit to fail", machine.diagnostics, interval=POLL_S)
    assert (props["Result"], props["ExecMainCode"], props["ExecMainStatus"]) == (
        "exit-code",
        "1",  # CLD_EXITED
        "78",
    ), props
    assert props["NRestarts"] == "0", props  # `systemctl restart` resets the count

    # And it stays failed: watched for twice RestartSec=, it never starts again.
    restart_s = _seconds(props["RestartUSec"])
    assert restart_s > 0, props
    deadline = time.monotonic() + 2 * restart_s + 2
    while time.monotonic() < deadline:
        now = machine.show()
        assert (now["ActiveState"], now["NRestarts"], now["ExecMainStartTimestampMonotonic"]) == (
            "failed",
            props["NRestarts"],
            props["ExecMainStartTimestampMonotonic"],
        ), now
        time.sleep(0.5)
    journal = machine.journal("-b", "-u", UNIT)
    assert "no_such_setting" in journal, journal[-3000:]
    tail = journal[journal.rindex("no_such_setting") :]
    assert "Scheduled restart job" not in tail, tail
