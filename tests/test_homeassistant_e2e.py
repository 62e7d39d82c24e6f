"""What a real Home Assistant Core makes of the daemon's MQTT discovery, and that HA can use
the device: HA 2025.4.4 in its own venv (tests/support/homeassistant.py), a real
Mosquitto, the real daemon (wav-dir sink). Everything is asserted from HA's side, through
its REST and websocket APIs: an entity HA dropped for a bad value shows only as an ERROR
line in its log, so the registry and the states are what count, and no test may leave an
ERROR about the device in HA's log.

One HA and one daemon serve the module (an HA start costs tens of seconds on a busy
machine); the tests run in file order, each from the state the one before left.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import pytest

from edge_tts import __version__
from edge_tts.homeassistant.discovery import (
    SENSORS,
    STOP_BY,
    config_topic,
    unique_id,
)

from .conftest import run_cli
from .support.broker import Broker, Recorder
from .support.daemon_proc import DaemonProcess, daemon_config
from .support.homeassistant import HomeAssistant, ha_venv, wait_for
from .support.rootfs import ci_cache
from .support.waiting import REQUEST_TIMEOUT_S, wait_until

pytestmark = pytest.mark.system

DEVICE = "ha-e2e-pi"
PREFIX = f"edge-tts/{DEVICE}"
EVENTS = f"{PREFIX}/events"
SAY = f"{PREFIX}/say"
DISCOVERY = config_topic("homeassistant", DEVICE)
KEYS = {"speak", "stop", "volume", *(sensor.key for sensor in SENSORS)}
SENTENCE = "The washing machine has finished. Please empty it before the evening."
# Minutes of speech: still being written (the wav-dir sink is not paced) when the press
# comes, however fast the machine synthesizes.
LONG = " ".join(f"This is sentence number {n} of a long announcement." for n in range(1, 150))
HA_TIMEOUT_S = 180.0  # for HA to act on something it got over MQTT, on a busy machine


class Rig:
    def __init__(self, root: Path, broker: Broker, ha: HomeAssistant) -> None:
        self.root = root
        self.ha = ha
        self.port = broker.port
        self.wav_dir = root / "wav"
        self.rec = Recorder(broker.port, [f"{PREFIX}/#", "homeassistant/#"])
        self.config = daemon_config(
            root,
            broker.port,
            device_id=DEVICE,
            audio={"sink": "wav-dir", "wav_dir": str(self.wav_dir)},
            # Loaded at the first request: the restart test then waits seconds, not minutes.
            synthesis={"preload": False},
            queue={"max_text_chars": 10_000},
        )
        self.daemon = DaemonProcess(root, self.config)

    # --- the daemon ---------------------------------------------------------------------

    def start_daemon(self) -> None:
        after = len(self.daemon.notify.lines())  # READY=1 of this start, not an earlier one
        self.daemon.start()
        self.daemon.wait_ready(after=after)

    def stop_daemon(self) -> None:
        if self.daemon.running():
            assert self.daemon.terminate() == 0

    def say(self, request: dict[str, Any]) -> dict[str, Any]:
        self.rec.publish(SAY, json.dumps(request))
        return self.rec.wait_event(EVENTS, "finished", request["id"], REQUEST_TIMEOUT_S)

    def rms(self, request_id: str) -> float:
        with wave.open(str(self.wav_dir / f"{request_id}.wav"), "rb") as wav:
            audio = np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")
        return float(np.sqrt(np.mean(audio.astype(np.float64) ** 2)))

    # --- Home Assistant's view ----------------------------------------------------------

    def device(self) -> dict[str, Any] | None:
        return self.ha.device(f"edge-tts-{DEVICE}")

    def entities(self) -> dict[str, dict[str, Any]]:
        """Registry entries of the device, by component key."""
        device = self.device()
        if device is None:
            return {}
        prefix = unique_id(DEVICE, "")
        return {e["unique_id"].removeprefix(prefix): e for e in self.ha.entities(device["id"])}

    def entity_id(self, key: str) -> str:
        return str(self.entities()[key]["entity_id"])

    def state(self, key: str) -> str:
        return str(self.ha.state(self.entity_id(key))["state"])

    def wait_state(self, key: str, wanted: str, timeout: float = HA_TIMEOUT_S) -> None:
        seen: list[str] = []

        def reached() -> bool:
            seen.append(self.state(key))
            return seen[-1] == wanted

        def detail() -> str:
            return f"last state: {seen[-1:]}\n--- HA log ---\n{self.ha.log()[-3000:]}"

        wait_until(reached, timeout, f"{key} to be {wanted!r} in HA", detail, 0.5)

    def close(self) -> None:
        self.daemon.close()
        self.rec.close()
        print(self.daemon.log()[-6000:])  # shown when a test fails


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    root = Path(tempfile.mkdtemp(prefix="ha-e2e-"))
    venv = ha_venv(ci_cache())  # before the broker starts: a cold build takes minutes
    with Broker(root) as broker:
        ha = HomeAssistant(venv, broker.port)
        made: Rig | None = None
        try:
            ha.start()
            made = Rig(root, broker, ha)
            made.start_daemon()
            wait_for(
                lambda: set(made.entities()) == KEYS, "the device's entities", ha, HA_TIMEOUT_S
            )
            yield made
        finally:
            if made is not None:
                made.close()
            ha.stop()
            shutil.rmtree(ha.config_dir, ignore_errors=True)
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(autouse=True)
def no_errors_about_the_device(rig: Rig) -> Iterator[None]:
    """HA reports a payload it refused (an entity it dropped) only in its log."""
    yield
    assert rig.ha.errors_about(DEVICE, "homeassistant.components.mqtt") == []


# --- the tests, in order ---------------------------------------------------------------


def test_ha_creates_the_device_and_every_entity(rig: Rig) -> None:
    device = rig.device()
    assert device is not None
    assert device["name"] == f"edge-tts {DEVICE}"
    assert (device["manufacturer"], device["sw_version"]) == ("edge-tts-daemon", __version__)
    entities = rig.entities()
    assert set(entities) == KEYS
    assert entities["speak"]["entity_id"].startswith("notify.")
    assert entities["stop"]["entity_id"].startswith("button.")
    assert entities["volume"]["entity_id"].startswith("number.")
    volume = rig.ha.state(entities["volume"]["entity_id"])["attributes"]
    assert (volume["min"], volume["max"], volume["unit_of_measurement"]) == (0, 200, "%")
    for sensor in SENSORS:
        entry = entities[sensor.key]
        assert entry["entity_id"].startswith("sensor.")
        assert entry["original_name"] == sensor.name
        assert entry["entity_category"] == ("diagnostic" if sensor.diagnostic else None)
        attributes = rig.ha.state(entry["entity_id"])["attributes"]
        assert attributes["friendly_name"] == f"edge-tts {DEVICE} {sensor.name}"
        assert attributes.get("unit_of_measurement") == sensor.unit
        assert attributes.get("device_class") == sensor.device_class
        assert attributes.get("state_class") == sensor.state_class


def test_sensors_show_the_published_telemetry(rig: Rig) -> None:
    # Telemetry comes every second: HA shows one of the snapshots published so far.
    def shown(sensor_key: str) -> str | None:
        sensor = next(s for s in SENSORS if s.key == sensor_key)
        state = rig.state(sensor.key)
        seen = [json.loads(p) for p in rig.rec.on_topic(f"{PREFIX}/telemetry") if p]
        return state if any(_matches(state, sensor.template, t) for t in seen) else None

    for sensor in SENSORS:
        wait_for(lambda k=sensor.key: shown(k), f"{sensor.key} from telemetry", rig.ha)
    assert rig.state("status") == "ok"
    status = rig.ha.state(rig.entity_id("status"))["attributes"]
    assert status["problems"] == [] and status["summary"].startswith("mqtt connected")
    latest = json.loads(rig.rec.on_topic(f"{PREFIX}/telemetry")[-1])
    if latest["process"]["soc_temp_c"] is None:  # no sensor here: null, and HA copes
        assert rig.state("soc_temperature") == "unknown"


def test_notify_send_message_makes_the_daemon_speak(rig: Rig) -> None:
    message = "Hello from Home Assistant. [Kitchen] The oven is hot."
    before = len(rig.rec.messages)
    rig.ha.call("notify", "send_message", entity_id=rig.entity_id("speak"), message=message)
    rig.rec.wait_for(lambda: _said(rig, message) is not None, 60, "HA's message on the say topic")
    payload = _said(rig, message)
    assert payload is not None and json.loads(payload) == {"text": message}

    def finished() -> dict[str, Any] | None:
        """Sent without an id, it gets one of the daemon's making (its delivery's): the
        one request this test sends, so the first `finished` after HA's call is its."""
        later = [p for _, topic, p, _ in rig.rec.messages[before:] if topic == EVENTS]
        return next((e for e in map(json.loads, later) if e["event"] == "finished"), None)

    rig.rec.wait_for(lambda: finished() is not None, REQUEST_TIMEOUT_S, "its finished event")
    done = finished()
    assert done is not None and done["id"] != ""
    request_id = done["id"]
    assert done["audio_ms"] > 2000
    with wave.open(str(rig.wav_dir / f"{request_id}.wav"), "rb") as wav:
        assert wav.getnframes() / wav.getframerate() > 2.0


def test_stop_button_interrupts_a_long_request(rig: Rig) -> None:
    rig.rec.publish(SAY, json.dumps({"text": LONG, "id": "long-1"}))
    rig.rec.wait_event(EVENTS, "started", "long-1", REQUEST_TIMEOUT_S)
    rig.ha.call("button", "press", entity_id=rig.entity_id("stop"))
    interrupted = rig.rec.wait_event(EVENTS, "interrupted", "long-1", REQUEST_TIMEOUT_S)
    assert interrupted["by"] == STOP_BY
    assert not (rig.wav_dir / "long-1.wav").exists()  # an interrupted request leaves no file


def test_volume_number_makes_the_next_request_quieter(rig: Rig) -> None:
    rig.say({"text": SENTENCE, "id": "loud"})
    rig.ha.call("number", "set_value", entity_id=rig.entity_id("volume"), value=40)
    rig.rec.wait_for(lambda: rig.rec.on_topic(f"{PREFIX}/volume")[-1:] == [b"0.4"], 60, "0.4")
    rig.wait_state("volume", "40.0")
    rig.say({"text": SENTENCE, "id": "quiet"})
    ratio = rig.rms("quiet") / rig.rms("loud")
    assert 0.3 < ratio < 0.5, ratio  # 0.4, give or take the voice's own variation


def test_a_stopped_daemon_is_unavailable_and_the_volume_survives_its_restart(rig: Rig) -> None:
    rig.stop_daemon()
    for key in ("speak", "stop", "volume", "status"):
        rig.wait_state(key, "unavailable")
    rig.start_daemon()
    rig.wait_state("status", "ok")
    rig.wait_state("volume", "40.0")
    rig.say({"text": SENTENCE, "id": "quiet-after-restart"})
    ratio = rig.rms("quiet-after-restart") / rig.rms("loud")
    assert 0.3 < ratio < 0.5, ratio
    rig.ha.call("number", "set_value", entity_id=rig.entity_id("volume"), value=100)
    rig.wait_state("volume", "100.0")


def test_discovery_is_published_again_when_ha_restarts(rig: Rig) -> None:
    before = len(rig.rec.messages)
    restarted = time.monotonic()
    rig.ha.restart()

    def announced_then_discovered() -> bool:
        later = [(topic, payload) for _, topic, payload, _ in rig.rec.messages[before:]]
        online = [i for i, m in enumerate(later) if m == ("homeassistant/status", b"online")]
        return bool(online) and any(topic == DISCOVERY for topic, _ in later[online[0] :])

    rig.rec.wait_for(announced_then_discovered, HA_TIMEOUT_S, "HA's online, then our discovery")
    wait_for(lambda: set(rig.entities()) == KEYS, "the entities after HA's restart", rig.ha)
    rig.wait_state("status", "ok")
    print(f"HA restarted and saw the device again in {time.monotonic() - restarted:.1f} s")


def test_remove_takes_the_device_out_of_ha(rig: Rig) -> None:
    rig.stop_daemon()  # or it would announce itself again at its next connect
    done = run_cli("homeassistant", "remove", "--config", str(rig.root / "edge-tts.yaml"))
    assert done.returncode == 0, done.stderr
    assert f"cleared {DISCOVERY}" in done.stdout
    wait_for(lambda: rig.device() is None, "HA to delete the device", rig.ha, HA_TIMEOUT_S)
    assert rig.entities() == {}
    # Nothing retained is left for HA to find at its next start.
    probe = Recorder(rig.port, [DISCOVERY, f"{PREFIX}/volume", "e2e/probe"])
    try:
        probe.publish("e2e/probe", b"x")
        probe.wait_for(lambda: probe.on_topic("e2e/probe") != [], 30, "the probe")
        assert probe.on_topic(DISCOVERY) == [] and probe.on_topic(f"{PREFIX}/volume") == []
    finally:
        probe.close()


# --- helpers ---------------------------------------------------------------------------


def _said(rig: Rig, message: str) -> bytes | None:
    return next((p for p in rig.rec.on_topic(SAY) if message.encode() in p), None)


def _matches(state: str, template: str, telemetry: dict[str, Any]) -> bool:
    """Whether HA's `state` is what `template` makes of this telemetry snapshot."""
    rendered = jinja2.Environment().from_string(template).render(value_json=telemetry)
    if rendered == "None":
        return state == "unknown"
    try:
        return abs(float(state) - float(rendered)) < 1e-6
    except ValueError:
        return state == rendered
