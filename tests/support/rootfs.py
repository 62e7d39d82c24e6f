"""A Debian root that Ansible converges: the debootstrapped root cached per machine, what is
mounted into it, the broker the device logs in to, and the playbook run on it through
Ansible's chroot connection.

The root looks like a freshly flashed board: Debian bookworm from
`debootstrap --variant=minbase` (no python). tests/test_deploy.py converges one and starts
the daemon from the installed paths; tests/test_systemd_pid1.py converges one and boots it
with systemd as PID 1.

Needs root, network (Debian and PyPI), debootstrap (installed on demand), mosquitto and
openssl. Cached between runs on the same machine, in /var/cache/edge-tts-ci (or
$EDGE_TTS_CI_CACHE): the debootstrapped root as a tarball, apt's .deb files, pip's cache
and the controller's artifacts (the INT8 voice, the wheels). Times: docs/fleet.md.

A root of another architecture (`arch="arm64"`: tests/test_arm64.py) runs its binaries
through qemu-user, registered with binfmt_misc by tests/support/arm64.py; it gets its own
tarball and its own apt cache (apt locks its archive directory).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from edge_tts.state.atomic import exclusive

from .broker import Broker, free_port, make_tls_material, start_mosquitto

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
BIN = Path(sys.executable).parent
CACHE = Path(os.environ.get("EDGE_TTS_CI_CACHE", "/var/cache/edge-tts-ci"))
MIRROR = os.environ.get("EDGE_TTS_CI_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SUITE = "bookworm"
DEVICE = "ci-pi"
PASSWORD = "ci-secret-1"
PLAYBOOK_TIMEOUT_S = 1800
VENV = "/opt/edge-tts/venv"  # where the playbook installs the daemon


def ci_cache() -> Path:
    """Where builds survive between CI runs on this machine: $EDGE_TTS_CI_CACHE (as root,
    /var/cache/edge-tts-ci by default), else the user's own cache."""
    if os.geteuid() == 0 or "EDGE_TTS_CI_CACHE" in os.environ:
        return CACHE
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "edge-tts-ci"


def ansible_tool(name: str) -> str:
    """The path of an Ansible command installed beside this python."""
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{name} is not installed in {BIN} (pip install ansible ansible-lint)")
    return str(path)


def ansible_env(**extra: str) -> dict[str, str]:
    """A clean environment: what a CI machine's pip or proxy settings say must not leak into
    the target through the chroot connection."""
    return {
        "PATH": f"{BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        **extra,
    }


def run(
    cmd: list[str], timeout: float, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd, env=env
    )


def venv_reports(root: Path, imports: str, *fields: str, timeout: float = 120) -> list[str]:
    """The installed venv's python, in the root (chroot, Ansible's clean environment):
    `import IMPORTS; print(FIELDS...)`; asserts it ran, returns the printed fields."""
    code = f"import {imports}; print({', '.join(fields)})"
    cmd = ["chroot", str(root), f"{VENV}/bin/python", "-c", code]
    result = run(cmd, timeout, env=ansible_env())
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def require_root_and_tools() -> None:
    """Skip without root; fail without mosquitto or openssl; install debootstrap if missing."""
    if os.geteuid() != 0:
        pytest.skip("the converge test needs root (debootstrap, chroot, mounts)")
    missing = [
        tool for tool in ("mosquitto", "mosquitto_passwd", "openssl") if not shutil.which(tool)
    ]
    if missing:
        pytest.fail(f"missing {missing} (scripts/setup --test-all installs them)")
    if shutil.which("debootstrap") is None:
        result = run(["apt-get", "install", "-y", "-qq", "debootstrap"], 600)
        assert result.returncode == 0, f"cannot install debootstrap: {result.stderr}"


# --- the root ---------------------------------------------------------------------------------


def host_arch() -> str:
    """This machine's Debian architecture (amd64)."""
    return run(["dpkg", "--print-architecture"], 30).stdout.strip()


def cached_root_tarball(arch: str | None = None) -> Path:
    """A pristine `debootstrap --variant=minbase` root of `arch` (default: this machine's),
    made once per machine (about 30 s; arm64 under emulation about 2-3 min)."""
    native = host_arch()
    arch = arch or native
    tarball = CACHE / f"{SUITE}-minbase-{arch}.tar.zst"
    lock = ".debootstrap.lock" if arch == native else f".debootstrap-{arch}.lock"
    with exclusive(CACHE / lock):
        if tarball.is_file():
            return tarball
        build = Path(tempfile.mkdtemp(prefix="ettsboot-"))
        build.chmod(0o755)  # it becomes "/" of every target: mkdtemp's 0700 would lock users out
        try:
            boot = ["debootstrap", f"--arch={arch}", "--variant=minbase", SUITE, str(build)]
            made = run([*boot, MIRROR], 1800)
            assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
            part = tarball.with_suffix(".part")
            packed = run(
                [
                    "tar",
                    "--zstd",
                    "-C",
                    str(build),
                    "--exclude=./var/cache/apt/archives/*.deb",
                    "-cf",
                    str(part),
                    ".",
                ],
                600,
            )
            assert packed.returncode == 0, packed.stderr
            part.rename(tarball)
        finally:
            shutil.rmtree(build, ignore_errors=True)
    return tarball


def unpack_root(tarball: Path, root: Path) -> None:
    """The cached root, unpacked into the (existing) directory `root`."""
    unpacked = run(["tar", "--zstd", "-xpf", str(tarball), "-C", str(root)], 600)
    assert unpacked.returncode == 0, unpacked.stderr
    root.chmod(0o755)


def attach_caches(root: Path, arch: str | None = None, wheels: Path | None = None) -> None:
    """What the converge needs mounted into `root`: /proc, and the machine's apt and pip
    caches; and the host's CA bundle for pip (a CI behind a TLS-inspecting proxy). A root of
    another `arch` gets an apt cache of its own (apt-archives-<arch>: apt locks the
    directory, and the amd64 converge may run at the same time); `wheels`, a directory of
    wheels for pip's --find-links, appears as /var/cache/edge-tts-ci-wheels."""
    apt = "apt-archives" if arch in (None, host_arch()) else f"apt-archives-{arch}"
    caches = [
        (CACHE / apt, root / "var/cache/apt/archives"),
        (CACHE / "pip", root / "var/cache/edge-tts-ci-pip"),
    ]
    for cache, _ in caches:
        (cache / "partial").mkdir(parents=True, exist_ok=True)
    if wheels is not None:
        caches.append((wheels, root / "var/cache/edge-tts-ci-wheels"))
    for _, inside in caches:
        inside.mkdir(parents=True, exist_ok=True)
    # /proc only: nothing needs /sys (and with it, onnxruntime crashed under qemu-arm64)
    mount("-t", "proc", "proc", str(root / "proc"))
    for cache, inside in caches:
        mount("--bind", str(cache), str(inside))
    (root / "var/cache/edge-tts-ci-ca").mkdir(parents=True)
    shutil.copy2("/etc/ssl/certs/ca-certificates.crt", root / "var/cache/edge-tts-ci-ca")


def mount(*args: str) -> None:
    result = run(["mount", *args], 60)
    assert result.returncode == 0, result.stderr


def umount_all(root: Path) -> None:
    """Everything mounted under root, deepest first; lazily if something still holds it."""
    mounts = [
        line.split()[1]
        for line in Path("/proc/mounts").read_text().splitlines()
        if line.split()[1] == str(root) or line.split()[1].startswith(f"{root}/")
    ]
    for target in sorted(mounts, key=len, reverse=True):
        if run(["umount", target], 60).returncode != 0:
            run(["umount", "-l", target], 60)


def umount_below(root: Path) -> None:
    """What was mounted inside the root (/proc, the caches), not the root itself."""
    mounts = [
        line.split()[1]
        for line in Path("/proc/mounts").read_text().splitlines()
        if line.split()[1].startswith(f"{root}/")
    ]
    for target in sorted(mounts, key=len, reverse=True):
        result = run(["umount", target], 60)
        assert result.returncode == 0, result.stderr


# --- the broker the device logs in to ---------------------------------------------------------


class SecureBroker(Broker):
    """Mosquitto with two loopback listeners: TLS + password for the device (as in the
    field), plain and anonymous for the test's recorder. A chroot shares the host's network,
    so the daemon inside reaches it on 127.0.0.1."""

    def __init__(self, root: Path):
        super().__init__(root)
        self.plain_port = free_port()
        self.tls_port = free_port()

    def start(self) -> None:
        tls = self.root / "tls"
        tls.mkdir()
        ca, cert, key = make_tls_material(tls)
        passwd = self.root / "passwd"
        made = run(["mosquitto_passwd", "-c", "-b", str(passwd), DEVICE, PASSWORD], 30)
        assert made.returncode == 0, made.stderr
        conf = self.root / "mosquitto.conf"
        conf.write_text(
            "user root\nper_listener_settings true\n"
            f"listener {self.plain_port} 127.0.0.1\nallow_anonymous true\n"
            f"listener {self.tls_port} 127.0.0.1\nallow_anonymous false\n"
            f"password_file {passwd}\n"
            f"cafile {ca}\ncertfile {cert}\nkeyfile {key}\n"
        )
        self._proc = start_mosquitto(self.root, conf, [self.plain_port, self.tls_port])

    # log() and stop() are Broker's.


# --- the converge -----------------------------------------------------------------------------


def snapshot_sources(dest: Path) -> Path:
    """What the wheel is built from, frozen for the test (others may edit the checkout)."""
    dest.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(
        REPO / "edge_tts", dest / "edge_tts", ignore=shutil.ignore_patterns("__pycache__")
    )
    return dest


def write_inventory(work: Path, root: Path, broker: SecureBroker, source: Path) -> Path:
    """work/inventory.yml: the root as the one device, reached through the chroot
    connection, logging in to `broker` with TLS and a password; the wheel from `source`."""
    inventory = {
        "all": {
            "children": {
                "edge_tts": {
                    "hosts": {
                        str(root): {
                            "ansible_connection": "community.general.chroot",
                            "ansible_become": False,
                            "edge_tts_device_id": DEVICE,
                        }
                    }
                }
            },
            "vars": {
                "edge_tts_broker_host": "127.0.0.1",
                "edge_tts_broker_port": broker.tls_port,
                "edge_tts_broker_username": DEVICE,
                "edge_tts_broker_password": PASSWORD,
                "edge_tts_broker_keepalive": 10,
                "edge_tts_tls_enabled": True,
                "edge_tts_tls_ca_src": str(broker.root / "tls" / "ca.pem"),
                "edge_tts_audio": {"sink": "wav-dir", "wav_dir": "/var/lib/edge-tts/wav"},
                "edge_tts_telemetry": {"interval": 5},
                "edge_tts_source_dir": str(source),
                "edge_tts_controller_python": sys.executable,
                "edge_tts_artifact_dir": str(CACHE / "artifacts"),
                # pip on the target: the shared cache, and the host's CA bundle (a CI behind a
                # TLS-inspecting proxy; elsewhere it is just Debian's bundle).
                "edge_tts_pip_environment": {
                    "PIP_CACHE_DIR": "/var/cache/edge-tts-ci-pip",
                    "PIP_CERT": "/var/cache/edge-tts-ci-ca/ca-certificates.crt",
                },
            },
        }
    }
    path = work / "inventory.yml"
    path.write_text(yaml.safe_dump(inventory))
    return path


def playbook(inventory: Path, log: Path, *extra: str, ok: bool = True) -> tuple[float, str]:
    """Run deploy/site.yml on `inventory`, appending its output to `log`; assert it succeeded
    (or, with ok=False, failed). Returns (seconds, output)."""
    start = time.monotonic()
    result = run(
        [ansible_tool("ansible-playbook"), "-i", str(inventory), *extra, "site.yml"],
        PLAYBOOK_TIMEOUT_S,
        cwd=DEPLOY,
        # the slowest tasks, in the log
        env=ansible_env(ANSIBLE_CALLBACKS_ENABLED="ansible.posix.profile_tasks"),
    )
    elapsed = time.monotonic() - start
    output = result.stdout + result.stderr
    with log.open("a") as f:
        f.write(output)
    assert (result.returncode == 0) == ok, output[-6000:]
    return elapsed, output
