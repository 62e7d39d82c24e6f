"""An emulated arm64 board for tests/test_arm64.py: qemu-user registered with binfmt_misc,
the aarch64 wheels the device's pip installs from, what runs inside the root, and the
x86 reference run on an older x86 CPU model (qemu-x86_64, from the same package).

The root itself is tests/support/rootfs.py's (`cached_root_tarball("arm64")`,
`attach_caches(root, "arm64", wheels)`): its binaries run through qemu-aarch64-static,
which the kernel starts for every aarch64 ELF once binfmt_misc knows it. With the F
("fix binary") flag the kernel opens the interpreter when it is registered, so it need not
exist inside the root.

The wheels: the device's pip, emulated, gets no index (`--no-index --find-links`): the host
downloads aarch64 wheels of every dependency of the app's wheel (`pip download --platform
manylinux_2_*_aarch64 --only-binary=:all:`, at the versions its constraints file pins)
and systemd-python's sdist (it has no wheels; the device builds it once and pip's cache,
shared between runs, keeps the built wheel). Cached in /var/cache/edge-tts-ci/arm64-wheels,
downloaded again only when the requirements or the pins change.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from edge_tts.state.atomic import exclusive

from .rootfs import CACHE, DEPLOY, ansible_env, run

BINFMT = Path("/proc/sys/fs/binfmt_misc")
QEMU = Path("/usr/bin/qemu-aarch64-static")
QEMU_X86 = Path("/usr/bin/qemu-x86_64-static")  # same package
# Debian's qemu-user-static entry for aarch64 ELF executables (/usr/share/binfmts/qemu-aarch64),
# written to the kernel directly if update-binfmts cannot do it.
AARCH64_MAGIC = r"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00"
AARCH64_MASK = r"\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff"
PYTHON_VERSION = "3.11"  # bookworm's
# Every manylinux tag bookworm's glibc 2.36 accepts: pip does not widen a given tag itself.
PLATFORMS = ["manylinux2014_aarch64"] + [f"manylinux_2_{n}_aarch64" for n in range(17, 37)]
SOURCE_ONLY = {"systemd-python"}  # no wheels on PyPI: built on the device
WHEELHOUSE = CACHE / "arm64-wheels"
INSIDE_WHEELHOUSE = "/var/cache/edge-tts-ci-wheels"  # where attach_caches mounts it
# qemu's x86 CPU models with SSE4.1 and without AVX2, oldest first: on them onnxruntime's
# int8 kernels are its SSE4.1 ones, which widen to int16 and accumulate in int32 exactly,
# as ARM's do. With AVX2 (or AVX-512 without VNNI) they would be vpmaddubsw kernels, which
# saturate their int16 pair sums: a newer model would compare something else. The host's
# python may need more than the oldest (AES, AVX...): the first that runs it is used.
EXACT_INT8_X86_MODELS = ("Nehalem", "Westmere", "SandyBridge", "IvyBridge")


# --- qemu-user and binfmt_misc ----------------------------------------------------------------


def require_emulation() -> None:
    """qemu-aarch64 registered with binfmt_misc (with the F flag), installing and registering
    it when needed; pytest.fail naming what stood in the way (never a silent skip)."""
    _install("qemu-user-static", "binfmt-support")
    if not (BINFMT / "register").exists():
        mounted = run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)], 60)
        if mounted.returncode != 0:
            pytest.fail(
                f"binfmt_misc is not mounted and cannot be: {mounted.stderr.strip()} (a "
                "container without CAP_SYS_ADMIN, or a kernel without CONFIG_BINFMT_MISC). "
                "Without it the kernel cannot run the root's aarch64 binaries: debootstrap's "
                "second stage, apt, Ansible's modules and pip all exec aarch64 programs, and "
                "qemu-aarch64-static run by hand covers only the first program, not what it "
                "starts. Run this test by hand as root on a machine that has it."
            )
    entry = BINFMT / "qemu-aarch64"
    if not _registered(entry):
        enabled = run(["update-binfmts", "--enable", "qemu-aarch64"], 60)
        if not _registered(entry):
            _register_directly(entry, enabled.stdout + enabled.stderr)
    if "F" not in _flags(entry):
        pytest.fail(
            f"{entry} has no F flag ({entry.read_text()!r}): the kernel would look for its "
            "interpreter inside the root. Re-register it: update-binfmts --disable "
            "qemu-aarch64 && update-binfmts --enable qemu-aarch64 (qemu-user-static's "
            "entry has fix_binary yes)"
        )


def require_qemu_x86() -> None:
    """qemu-x86_64-static, installing qemu-user-static when needed (no binfmt_misc: it runs
    x86 programs only when asked to, on a given CPU model)."""
    _install("qemu-user-static")


def _install(*packages: str) -> None:
    """apt-get install what of `packages` is missing; pytest.fail if it cannot."""
    missing = [pkg for pkg in packages if not _installed(pkg)]
    if missing:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        result = run(["apt-get", "install", "-y", "-qq", *missing], 900, env=env)
        if result.returncode != 0:  # an old package list: update once, then try again
            run(["apt-get", "update", "-qq"], 600)
            result = run(["apt-get", "install", "-y", "-qq", *missing], 900, env=env)
        if result.returncode != 0:
            pytest.fail(f"cannot install {missing} (scripts/setup --test-all): {result.stderr}")


def _installed(package: str) -> bool:
    status = run(["dpkg-query", "-W", "-f=${Status}", package], 30).stdout
    return status == "install ok installed"


def _registered(entry: Path) -> bool:
    return entry.is_file() and entry.read_text().startswith("enabled")


def _flags(entry: Path) -> str:
    for line in entry.read_text().splitlines():
        if line.startswith("flags:"):
            return line.removeprefix("flags:").strip()
    return ""


def _register_directly(entry: Path, why: str) -> None:
    """What update-binfmts would write, written to the kernel ourselves."""
    if entry.exists():
        entry.write_text("-1")  # a disabled or stale entry: remove it, then register anew
    line = f":qemu-aarch64:M::{AARCH64_MAGIC}:{AARCH64_MASK}:{QEMU}:F"
    try:
        (BINFMT / "register").write_text(line)
    except OSError as err:
        pytest.fail(
            f"cannot register qemu-aarch64 with binfmt_misc: update-binfmts said {why!r}, "
            f"writing {BINFMT / 'register'} failed with {err}"
        )
    if not _registered(entry):
        pytest.fail(f"qemu-aarch64 is not enabled after registering it: {entry.read_text()!r}")


# --- the wheels the device's pip installs from --------------------------------------------------


def build_wheel(source: Path) -> tuple[Path, Path]:
    """The app's wheel and its constraints file, as the role builds them on the controller
    (the same script, sources and output directory: the play then finds them up to date)."""
    result = run(
        [
            sys.executable,
            str(DEPLOY / "roles/edge_tts/files/build_wheel.py"),
            "--source",
            str(source),
            "--out",
            str(CACHE / "artifacts" / "wheels"),
        ],
        600,
    )
    assert result.returncode == 0, result.stderr
    built = json.loads(result.stdout)
    return Path(built["wheel"]), Path(built["constraints"])


def requirements(wheel: Path) -> list[Requirement]:
    """What the wheel needs on an aarch64 device (its Requires-Dist without extras)."""
    with zipfile.ZipFile(wheel) as whl:
        (name,) = (n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = whl.read(name).decode()
    device = {"platform_machine": "aarch64", "python_version": PYTHON_VERSION, "extra": ""}
    needed = []
    for line in metadata.splitlines():
        if line.startswith("Requires-Dist:"):
            req = Requirement(line.removeprefix("Requires-Dist:").strip())
            if req.marker is None or req.marker.evaluate(device):
                needed.append(req)
    return needed


def arm64_wheelhouse(wheel: Path, constraints: Path) -> Path:
    """WHEELHOUSE, holding aarch64 wheels of everything `wheel` needs at the versions
    `constraints` pins, systemd-python's sdist and `wheel` (the role installs it first)."""
    needed = requirements(wheel)
    binary = sorted(str(r) for r in needed if r.name not in SOURCE_ONLY)
    source = sorted(str(r) for r in needed if r.name in SOURCE_ONLY)
    key = hashlib.sha256(
        json.dumps([binary, source, constraints.read_text(), PLATFORMS]).encode()
    ).hexdigest()[:16]
    stamp = WHEELHOUSE / f".complete-{key}"
    with exclusive(CACHE / ".arm64-wheels.lock"):
        if stamp.is_file():
            return WHEELHOUSE
        WHEELHOUSE.mkdir(parents=True, exist_ok=True)
        pip = [sys.executable, "-m", "pip", "download", "-q", "-d", str(WHEELHOUSE)]
        pins = ["-c", str(constraints)]
        platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
        target = ["--python-version", PYTHON_VERSION, "--implementation", "cp"]
        downloads = [
            [*pip, *pins, *platforms, *target, "--only-binary=:all:", "wheel", *binary],
            [*pip, *pins, "--no-deps", "--no-binary=:all:", *source],
        ]
        for command in downloads:
            result = run(command, 1800)  # the host's own pip settings and proxy
            assert result.returncode == 0, (
                f"{' '.join(command)}\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
            )
        stamp.write_text("\n".join([*binary, *source]) + "\n")
    return WHEELHOUSE


# --- processes inside the root ----------------------------------------------------------------


def stop_processes_in(root: Path) -> list[int]:
    """SIGKILL every process whose root directory is `root` (what a timed-out playbook or
    synthesis left behind); returns their pids. Only processes this test started have it."""
    killed = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            inside = os.readlink(proc / "root") == str(root)
        except OSError:  # gone, or a kernel thread
            continue
        if inside:
            try:
                os.kill(int(proc.name), signal.SIGKILL)
                killed.append(int(proc.name))
            except ProcessLookupError:
                pass
    return killed


def in_root(
    root: Path,
    *cmd: str,
    timeout: float = 300,
    cpu: str | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`cmd` inside the root, as root, in Ansible's clean environment plus `env`; aarch64
    programs run emulated (20-100x slower than the host), on qemu's CPU model `cpu`
    (QEMU_CPU, which qemu-user reads from the environment the kernel starts it with;
    default: `max`, every feature qemu has, more than any Pi)."""
    extra = {**(env or {}), **({"QEMU_CPU": cpu} if cpu else {})}
    return run(["chroot", str(root), *cmd], timeout, env=ansible_env(**extra))


def speak_on_x86_model(
    script: Path, text: str, out: Path, *builds: str
) -> tuple[str, dict[str, object]] | None:
    """tests/support/arm64_speech.py run by this very python and onnxruntime under
    qemu-x86_64 on the oldest of EXACT_INT8_X86_MODELS that can run them: onnxruntime then
    picks its int8 kernels by that model's CPUID. Returns the model and the script's
    report; None if this python or one of its libraries needs an instruction none of
    them has (built for x86-64-v3, say)."""
    found = oldest_x86_model_running([sys.executable, str(script), text, str(out), *builds], out)
    if found is None:
        return None
    cpu, result = found
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report: dict[str, object] = json.loads(result.stdout.splitlines()[-1])
    return cpu, report


def oldest_x86_model_running(
    command: list[str], cwd: Path
) -> tuple[str, subprocess.CompletedProcess[str]] | None:
    """The first of EXACT_INT8_X86_MODELS on which `command` ran without an illegal
    instruction, and how it ran there; None if it needs more than each of them has."""
    for cpu in EXACT_INT8_X86_MODELS:
        result = on_x86_model(cpu, command, cwd)
        if result is not None:
            return cpu, result
    return None


def on_x86_model(
    cpu: str, command: list[str], cwd: Path, timeout: float = 600
) -> subprocess.CompletedProcess[str] | None:
    """`command` (an x86_64 program) under qemu-x86_64 on the CPU model `cpu`; None if it
    used an instruction that model does not have (qemu raises SIGILL in the program and
    dies of it). No core file: qemu-user writes one into `cwd` unless RLIMIT_CORE is 0."""
    result = subprocess.run(
        [str(QEMU_X86), "-cpu", cpu, *command],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
        preexec_fn=_no_core_files,
    )
    return None if result.returncode == -signal.SIGILL else result


def _no_core_files() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def copy_into(root: Path, source: Path, inside: str) -> None:
    target = root / inside.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
