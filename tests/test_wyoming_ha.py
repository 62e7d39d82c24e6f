"""A real Home Assistant Core speaks through the daemon's Wyoming server: HA 2025.4.4 in
its own venv (tests/support/homeassistant.py), a real Mosquitto, the real daemon (real
voice, wav-dir sink). HA is told to add the server as its UI does, lists the voices, and
its TTS API returns the WAV of a text, with the lead-in, while nothing plays locally."""

from __future__ import annotations

import asyncio
import io
import re
import shutil
import tempfile
import urllib.request
import wave
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from wyoming.audio import AudioChunk
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize

from edge_tts.audio.dsp import ms_to_frames
from edge_tts.config import AudioSettings

from .support.broker import Broker, free_port
from .support.daemon_proc import REPO, DaemonProcess, daemon_config
from .support.homeassistant import HomeAssistant, ha_venv, wait_for
from .support.rootfs import ci_cache

pytestmark = pytest.mark.system

TEXT = "The front door has been unlocked. Please check the garage before you leave."
RATE = 22050
TTS_TIMEOUT_S = 300.0  # HA fetches the audio while the daemon synthesizes, on a busy machine


@dataclass
class Rig:
    ha: HomeAssistant
    daemon: DaemonProcess
    wyoming_port: int
    wav_dir: Path


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    root = Path(tempfile.mkdtemp(prefix="wy-ha-"))
    venv = ha_venv(ci_cache())  # before the broker: a cold build takes minutes
    with Broker(root) as broker:
        ha = HomeAssistant(venv, broker.port)
        port = free_port()
        wav_dir = root / "wav"
        config = daemon_config(
            root,
            broker.port,
            audio={"sink": "wav-dir", "wav_dir": str(wav_dir)},
            wyoming={"uri": f"tcp://127.0.0.1:{port}"},
            log_level="INFO",
        )
        daemon = DaemonProcess(root, config)
        try:
            daemon.start()
            ha.start()  # HA starts while the daemon warms up its voice
            daemon.wait_ready()
            yield Rig(ha, daemon, port, wav_dir)
        finally:
            try:
                if daemon.running():
                    assert daemon.terminate() == 0
            finally:
                print(daemon.log()[-6000:])  # shown when a test fails
                daemon.close()
                ha.stop()
                shutil.rmtree(ha.config_dir, ignore_errors=True)
                shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def engine(rig: Rig) -> str:
    """HA's tts entity for the server, added as HA's UI adds it."""
    ha = rig.ha
    entry = ha.flow("wyoming", {"host": "127.0.0.1", "port": rig.wyoming_port})
    assert entry["state"] == "loaded", entry

    def tts_entity() -> str | None:
        mine = [
            e["entity_id"]
            for e in ha.ws("config/entity_registry/list")
            if e["config_entry_id"] == entry["entry_id"] and e["entity_id"].startswith("tts.")
        ]
        return mine[0] if mine else None

    found: str = wait_for(tts_entity, "HA's tts entity for the server", ha)
    return found


def speak(ha: HomeAssistant, engine: str, message: str) -> tuple[int, np.ndarray]:
    """The WAV HA's TTS API makes of `message` with the server's voice."""
    body = {"engine_id": engine, "message": message, "options": {"preferred_format": "wav"}}
    url = ha.rest("POST", "/api/tts_get_url", body)
    return read_wav(fetch(ha, url["path"]))


def test_home_assistant_speaks_through_the_wyoming_server(rig: Rig, engine: str) -> None:
    ha = rig.ha
    provider = ha.ws("tts/engine/get", engine_id=engine)["provider"]
    assert "en_US" in provider["supported_languages"]

    rate, audio = speak(ha, engine, TEXT)

    assert rate == RATE
    lead_in = ms_to_frames(AudioSettings().lead_in_ms, RATE)
    assert not audio[:lead_in].any()  # the lead-in, for a player that wakes late
    speech = audio[lead_in:]
    assert rms(speech[: RATE // 2]) > 300  # speech right after it
    reference = asyncio.run(direct_synthesis(rig.wyoming_port, TEXT))
    assert speech.size == pytest.approx(reference.size - lead_in, rel=0.25)  # the same text
    assert 2.0 < speech.size / RATE < 10.0
    assert list(rig.wav_dir.glob("*.wav")) == []  # nothing was played on the device
    rig.daemon.wait_log(r"Wyoming 127\.0\.0\.1:\d+: wyoming-\d+ done")
    assert ha.errors_about("wyoming", "Wyoming") == []


def test_a_message_in_ssml_from_home_assistant_is_read_as_ssml(rig: Rig, engine: str) -> None:
    """The README's example. HA 2025.4.4 (wyoming 1.5.4) sends no text_format: its message
    goes as it is, and a message starting with <speak is SSML here, as on MQTT."""
    readme = (REPO / "README.md").read_text("utf-8")
    found = re.search(r'entity_id: (tts\.\S+)\n.*?message: "(<speak.*?</speak>)"', readme, re.S)
    assert found is not None, "README's tts.speak example"
    assert found[1] == engine  # the README names the entity HA makes
    message = found[2]
    rate, audio = speak(rig.ha, engine, message)
    assert rate == RATE
    lead_in = ms_to_frames(AudioSettings().lead_in_ms, RATE)
    sound = np.flatnonzero(audio[lead_in:])
    assert sound.size and np.diff(sound).max() > 2 * RATE  # the break: 2 s of digital zeros
    assert ha_errors(rig) == []


def ha_errors(rig: Rig) -> list[str]:
    errors: list[str] = rig.ha.errors_about("wyoming", "Wyoming")
    return errors


def fetch(ha: HomeAssistant, path: str) -> bytes:
    request = urllib.request.Request(ha.url + path, headers={"Authorization": f"Bearer {ha.token}"})
    with urllib.request.urlopen(request, timeout=TTS_TIMEOUT_S) as response:
        data: bytes = response.read()
    return data


def read_wav(data: bytes) -> tuple[int, np.ndarray]:
    with wave.open(io.BytesIO(data)) as wav:
        assert (wav.getnchannels(), wav.getsampwidth()) == (1, 2)
        frames = wav.getnframes() or (len(data) - 44) // 2  # a streamed header says 0
        return wav.getframerate(), np.frombuffer(wav.readframes(frames), "<i2")


def rms(audio: np.ndarray) -> float:
    return float(np.sqrt(np.mean(audio.astype(np.float64) ** 2))) if audio.size else 0.0


async def direct_synthesis(port: int, text: str) -> np.ndarray:
    """The same text from the server, without HA in between: what HA's WAV should hold."""
    chunks: list[bytes] = []
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Synthesize(text=text).event())
        while (event := await asyncio.wait_for(client.read_event(), TTS_TIMEOUT_S)) is not None:
            if AudioChunk.is_type(event.type):
                chunks.append(AudioChunk.from_event(event).audio)
            elif event.type in ("audio-stop", "error"):
                break
    return np.frombuffer(b"".join(chunks), "<i2")
