"""Home Assistant discovery payloads, the stop and volume controls, and the saved volume.

What HA itself makes of the payloads is tests/test_homeassistant_e2e.py's (a real HA);
here: exact topics, stable ids, and every template rendered against the telemetry the
daemon really publishes (jinja2, the engine HA's templates are built on).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import pytest

from edge_tts import cli
from edge_tts.config import Settings, settings_from_mapping
from edge_tts.daemon.app import Daemon
from edge_tts.homeassistant.controls import Controls, optional_subscriptions
from edge_tts.homeassistant.discovery import (
    SENSORS,
    STOP_BY,
    DeviceInfo,
    Sensor,
    config_topic,
    discovery_payload,
    object_id,
)
from edge_tts.homeassistant.volume import VolumeStore, parse_volume
from edge_tts.messages.topics import Topics
from edge_tts.mqtt.envelope import Envelope, parse_say
from edge_tts.mqtt.link import Inbound

from .conftest import run_cli
from .support.broker import Broker, Recorder, free_port
from .support.fakes import FakeOutput

TOPICS = Topics("edge-tts", "kitchen-pi")
DEVICE = DeviceInfo("kitchen-pi", "0.1.0")
JINJA = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)


def render(template: str, **variables: object) -> str:
    return JINJA.from_string(template).render(**variables)


def components(device: DeviceInfo = DEVICE) -> dict[str, dict[str, Any]]:
    found = discovery_payload(TOPICS, device)["components"]
    assert isinstance(found, dict)
    return found


def settings(tmp_path: Path, **overrides: Any) -> Settings:
    data: dict[str, Any] = {
        "device_id": "kitchen-pi",
        "audio": {"sink": "wav-dir", "wav_dir": str(tmp_path / "wav")},
        "state_dir": str(tmp_path / "state"),
        "synthesis": {"preload": False},
    }
    data.update(overrides)
    return settings_from_mapping(data)


# --- discovery payload -------------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(
    ("prefix", "device_id", "topic"),
    [
        ("homeassistant", "kitchen-pi", "homeassistant/device/kitchen-pi/config"),
        ("ha/site-2", "van_07", "ha/site-2/device/van_07/config"),
        # HA ignores a config whose id level has other characters than [A-Za-z0-9_-].
        ("homeassistant", "pi.local", "homeassistant/device/pi_local/config"),
        ("homeassistant", "küche", "homeassistant/device/k_che/config"),
    ],
)
def test_discovery_topic(prefix: str, device_id: str, topic: str) -> None:
    assert config_topic(prefix, device_id) == topic
    assert object_id(device_id) == topic.split("/")[-2]


@pytest.mark.unit
def test_device_and_origin() -> None:
    device = DeviceInfo("kitchen-pi", "1.2.3", "Raspberry Pi 5", "https://example.org/help")
    payload = discovery_payload(TOPICS, device)
    assert payload["device"] == {
        "identifiers": ["edge-tts-kitchen-pi"],
        "name": "edge-tts kitchen-pi",
        "manufacturer": "edge-tts-daemon",
        "model": "Offline text-to-speech (Piper voices, MQTT)",
        "sw_version": "1.2.3",
        "hw_version": "Raspberry Pi 5",
    }
    assert payload["origin"] == {
        "name": "edge-tts-daemon",
        "sw_version": "1.2.3",
        "support_url": "https://example.org/help",
    }
    bare = json.loads(json.dumps(discovery_payload(TOPICS, DEVICE)))
    assert "hw_version" not in bare["device"] and "support_url" not in bare["origin"]


@pytest.mark.unit
def test_availability_is_the_daemons_own_topic() -> None:
    payload = discovery_payload(TOPICS, DEVICE)
    assert payload["availability_topic"] == "edge-tts/kitchen-pi/availability"
    assert (payload["payload_available"], payload["payload_not_available"]) == ("online", "offline")


@pytest.mark.unit
def test_unique_ids_come_from_the_device_id_alone() -> None:
    ids = {key: c["unique_id"] for key, c in components().items()}
    assert len(set(ids.values())) == len(ids)
    assert all(uid == f"edge-tts-kitchen-pi-{key}" for key, uid in ids.items())
    # An upgrade (another version) or another board keeps every entity.
    upgraded = DeviceInfo("kitchen-pi", "9.9.9", "Raspberry Pi 5", "https://example.org")
    assert {k: c["unique_id"] for k, c in components(upgraded).items()} == ids


@pytest.mark.unit
def test_the_entities_and_their_topics() -> None:
    found = components()
    platforms = {key: c["platform"] for key, c in found.items()}
    assert platforms == {
        "speak": "notify",
        "stop": "button",
        "volume": "number",
        **{sensor.key: "sensor" for sensor in SENSORS},
    }
    assert found["speak"]["command_topic"] == "edge-tts/kitchen-pi/say"
    assert found["stop"]["command_topic"] == "edge-tts/kitchen-pi/stop"
    assert found["stop"]["payload_press"] == STOP_BY
    assert found["volume"]["command_topic"] == "edge-tts/kitchen-pi/volume/set"
    assert found["volume"]["state_topic"] == "edge-tts/kitchen-pi/volume"
    for sensor in SENSORS:
        assert found[sensor.key]["state_topic"] == "edge-tts/kitchen-pi/telemetry"
    technical = {k for k, c in found.items() if c.get("entity_category") == "diagnostic"}
    assert technical == {
        "memory",
        "ttfa_p50",
        "ttfa_p95",
        "real_time_factor",
        "underruns",
        "soc_temperature",
    }


@pytest.mark.unit
@pytest.mark.parametrize(
    "message",
    ["Dinner is ready.", '{"text": "not a request"}', "[Alert] Door open", '"quoted"', "π ≈ 3.14"],
)
def test_notify_message_is_spoken_as_text_whatever_it_looks_like(message: str) -> None:
    payload = render(components()["speak"]["command_template"], value=message)
    request = parse_say(Envelope(TOPICS.say, payload.encode(), time.monotonic()), 2000)
    assert request.text == message


@pytest.mark.unit
@pytest.mark.parametrize(("percent", "gain"), [(0, 0.0), (35, 0.35), (100, 1.0), (200, 2.0)])
def test_volume_number_shows_percent_and_sends_the_gain(percent: int, gain: float) -> None:
    number = components()["volume"]
    sent = render(number["command_template"], value=percent)
    assert parse_volume(sent.encode()) == pytest.approx(gain)
    shown = render(number["value_template"], value=f"{gain:g}")
    assert float(shown) == percent
    assert number["min"] <= percent <= number["max"]


# --- every sensor against the telemetry the daemon publishes -----------------------------


@pytest.fixture(scope="module")
def telemetry_json(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The snapshot the real Daemon's telemetry publisher sends, after two requests."""
    daemon = Daemon(settings(tmp_path_factory.mktemp("daemon")))
    for ttfa, rtf in ((180.0, 0.2), (240.0, 0.3)):
        daemon.telemetry.observe("time_to_first_audio_ms", ttfa)
        daemon.telemetry.observe("real_time_factor", rtf)
        daemon.telemetry.count("played")
    # Through JSON, as it goes over MQTT: HA's value_json is what json.loads makes of it.
    yield json.loads(json.dumps(daemon.telemetry.snapshot(daemon.status.gauges())))


@pytest.fixture(scope="module")
def fresh_telemetry_json(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Right after a start: no request yet, so the latency percentiles are null."""
    daemon = Daemon(settings(tmp_path_factory.mktemp("fresh")))
    snapshot = daemon.telemetry.snapshot(daemon.status.gauges())
    loaded: dict[str, Any] = json.loads(json.dumps(snapshot))
    return loaded


@pytest.mark.unit
@pytest.mark.parametrize("sensor", SENSORS, ids=[s.key for s in SENSORS])
def test_every_sensor_renders_a_state_from_real_telemetry(
    sensor: Sensor, telemetry_json: dict[str, Any]
) -> None:
    state = render(sensor.template, value_json=telemetry_json)
    if sensor.options:
        assert state in sensor.options
    elif sensor.key == "soc_temperature" and telemetry_json["process"]["soc_temp_c"] is None:
        assert state == "None"  # this machine has no sensor: HA shows "unknown"
    else:
        float(state)  # a number, as its state class requires
    if sensor.attributes:
        attributes = json.loads(render(sensor.attributes, value_json=telemetry_json))
        assert attributes["problems"] == telemetry_json["problems"]


@pytest.mark.unit
def test_the_values_are_the_telemetrys(telemetry_json: dict[str, Any]) -> None:
    by_key = {s.key: render(s.template, value_json=telemetry_json) for s in SENSORS}
    assert float(by_key["ttfa_p50"]) == pytest.approx(210.0)
    assert float(by_key["real_time_factor"]) == pytest.approx(0.25)
    assert int(by_key["requests_finished"]) == 2
    rss = telemetry_json["process"]["rss_bytes"]
    assert float(by_key["memory"]) == pytest.approx(rss / 2**20, abs=0.05)


@pytest.mark.unit
@pytest.mark.parametrize("sensor", SENSORS, ids=[s.key for s in SENSORS])
def test_a_null_value_renders_none_which_ha_shows_as_unknown(
    sensor: Sensor, fresh_telemetry_json: dict[str, Any]
) -> None:
    state = render(sensor.template, value_json=fresh_telemetry_json)
    assert state == "None" or (sensor.options and state in sensor.options) or float(state) >= 0
    if sensor.key.startswith("ttfa") or sensor.key == "real_time_factor":
        assert state == "None"


# --- controls ------------------------------------------------------------------------------


class FakeLink:
    def __init__(self) -> None:
        self.published: list[tuple[str, bytes | str, bool]] = []
        self.acked: list[Inbound] = []

    def publish(self, topic: str, payload: bytes | str, qos: int = 1, retain: bool = False) -> bool:
        self.published.append((topic, payload, retain))
        return True

    def ack(self, inbound: Inbound) -> bool:
        self.acked.append(inbound)
        return True

    def on(self, topic: str) -> list[bytes | str]:
        return [payload for t, payload, _ in self.published if t == topic]


class FakeStopper:
    def __init__(self, playing: str | None = "long") -> None:
        self.playing = playing
        self.stops: list[str] = []

    def stop_playing(self, by: str) -> str | None:
        self.stops.append(by)
        return self.playing


class Rig:
    def __init__(self, tmp_path: Path, **overrides: Any) -> None:
        self.settings = settings(tmp_path, **overrides)
        self.topics = Topics("edge-tts", "kitchen-pi")
        self.link = FakeLink()
        self.stopper = FakeStopper()
        self.output = FakeOutput()
        self.controls = Controls(self.settings, self.topics, self.link, self.stopper, self.output)
        self.controls.start()

    def send(self, topic: str, payload: bytes, retained: bool = False) -> bool:
        env = Envelope(topic, payload, time.monotonic(), retained=retained)
        return self.controls.take(Inbound(env, mid=1, qos=1, generation=1))

    @property
    def discovery_topic(self) -> str:
        return config_topic("homeassistant", "kitchen-pi")


@pytest.fixture()
def rig(tmp_path: Path) -> Iterator[Rig]:
    made = Rig(tmp_path)
    yield made
    made.controls.stop()


@pytest.mark.unit
def test_connect_publishes_retained_volume_and_discovery(rig: Rig) -> None:
    rig.controls.on_connected()
    assert (rig.topics.volume, "1", True) in rig.link.published
    [(topic, message, retain)] = [p for p in rig.link.published if "/device/" in p[0]]
    assert (topic, retain) == (rig.discovery_topic, True)
    assert isinstance(message, bytes)
    assert json.loads(message)["components"]["speak"]["command_topic"] == rig.topics.say


@pytest.mark.unit
def test_home_assistant_online_publishes_discovery_again(rig: Rig) -> None:
    assert rig.send("homeassistant/status", b"offline")
    assert rig.link.on(rig.discovery_topic) == []
    assert rig.send("homeassistant/status", b"online")
    assert len(rig.link.on(rig.discovery_topic)) == 1
    assert len(rig.link.acked) == 2


@pytest.mark.unit
def test_discovery_off_publishes_nothing_for_ha(tmp_path: Path) -> None:
    rig = Rig(tmp_path, homeassistant={"discovery": False})
    try:
        assert optional_subscriptions(rig.settings) == []
        rig.controls.on_connected()
        assert [t for t, _, _ in rig.link.published] == [rig.topics.volume]
        assert not rig.send("homeassistant/status", b"online")  # not ours: intake's
    finally:
        rig.controls.stop()


@pytest.mark.unit
def test_ha_status_subscription_follows_the_prefix(tmp_path: Path) -> None:
    custom = settings(tmp_path, homeassistant={"prefix": "ha/test"})
    assert optional_subscriptions(custom) == ["ha/test/status"]


@pytest.mark.unit
def test_stop_names_the_button_and_is_acknowledged(rig: Rig) -> None:
    assert rig.send(rig.topics.stop, STOP_BY.encode())
    assert rig.send(rig.topics.stop, b"")
    assert rig.stopper.stops == [STOP_BY, "stop"]
    assert len(rig.link.acked) == 2


@pytest.mark.unit
def test_a_retained_command_is_not_obeyed(rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert rig.send(rig.topics.stop, b"x", retained=True)
        assert rig.send(rig.topics.volume_set, b"0.1", retained=True)
    assert rig.stopper.stops == [] and rig.output.settings.volume == 1.0
    assert len(rig.link.acked) == 2 and "retained" in caplog.text


@pytest.mark.unit
def test_volume_applies_now_reports_and_survives_a_restart(rig: Rig, tmp_path: Path) -> None:
    assert rig.send(rig.topics.volume_set, b"0.35")
    assert rig.output.settings.volume == pytest.approx(0.35)
    assert rig.link.on(rig.topics.volume) == ["0.35"]
    rig.controls.stop()  # writes what is pending
    again = Rig(tmp_path)
    try:
        assert again.output.settings.volume == pytest.approx(0.35)
        again.controls.on_connected()
        assert again.link.on(again.topics.volume) == ["0.35"]
    finally:
        again.controls.stop()


@pytest.mark.unit
@pytest.mark.parametrize("payload", [b"loud", b"2.5", b"-0.1", b"nan", b"\xff"])
def test_a_bad_volume_is_ignored_and_the_real_one_reported(rig: Rig, payload: bytes) -> None:
    assert rig.send(rig.topics.volume_set, payload)
    assert rig.output.settings.volume == 1.0
    assert rig.link.on(rig.topics.volume) == ["1"]  # HA's slider snaps back


@pytest.mark.unit
def test_other_topics_go_to_intake(rig: Rig) -> None:
    assert not rig.send(rig.topics.say, b"hello")
    assert rig.link.acked == []


# --- the saved volume ---------------------------------------------------------------------


@pytest.mark.unit
def test_saved_volume_wins_while_the_config_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "volume.json"
    assert VolumeStore(path, 1.0).load() == 1.0  # nothing saved yet
    assert VolumeStore(path, 1.0).save(0.5)
    assert VolumeStore(path, 1.0).load() == 0.5
    assert [p.name for p in tmp_path.iterdir()] == ["volume.json"]  # no temporary left
    # An administrator who edits audio.volume means it.
    assert VolumeStore(path, 0.8).load() == 0.8


@pytest.mark.unit
@pytest.mark.parametrize(
    "content",
    ["", "{", "[]", '{"volume": "x", "configured": 1}', '{"volume": 7, "configured": 1}', "NaN"],
)
def test_a_corrupt_file_is_set_aside_with_a_warning(
    tmp_path: Path, content: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "volume.json"
    path.write_text(content)
    with caplog.at_level(logging.WARNING):
        assert VolumeStore(path, 0.9).load() == 0.9
    assert f"Unusable state file {path}" in caplog.text and not path.exists()


@pytest.mark.unit
def test_an_unwritable_state_directory_is_logged_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with caplog.at_level(logging.ERROR):
        assert not VolumeStore(blocker / "volume.json", 1.0).save(0.5)
    assert "Cannot save the volume" in caplog.text


@pytest.mark.unit
def test_save_soon_writes_the_latest_value_off_the_callers_thread(tmp_path: Path) -> None:
    store = VolumeStore(tmp_path / "volume.json", 1.0)
    store.start()
    for volume in (0.1, 0.2, 0.3):
        store.save_soon(volume)
    store.stop()
    assert VolumeStore(tmp_path / "volume.json", 1.0).load() == 0.3


# --- edge-ttsd homeassistant remove ----------------------------------------------------------


def write_config(root: Path, port: int) -> Path:
    path = root / "edge-tts.yaml"
    path.write_text(
        json.dumps({"device_id": "old-pi", "broker": {"host": "127.0.0.1", "port": port}})
    )
    return path


@pytest.mark.daemon
def test_remove_clears_the_retained_discovery_and_volume(workdir: Path, broker: Broker) -> None:
    discovery, volume = "homeassistant/device/old-pi/config", "edge-tts/old-pi/volume"
    setup = Recorder(broker.port, [])
    try:
        setup.publish(discovery, b"{}", retain=True)
        setup.publish(volume, b"0.4", retain=True)
    finally:
        setup.close()
    done = run_cli("homeassistant", "remove", "--config", str(write_config(workdir, broker.port)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"cleared {discovery}", f"cleared {volume}"]
    # The broker sends retained copies right after SUBACK, so before our own probe.
    probe = Recorder(broker.port, [discovery, volume, "probe"])
    try:
        probe.publish("probe", b"x")
        probe.wait_for(lambda: probe.on_topic("probe") != [], what="the probe")
        assert probe.on_topic(discovery) == [] and probe.on_topic(volume) == []
    finally:
        probe.close()


@pytest.mark.daemon
def test_remove_without_a_broker_times_out_with_1(workdir: Path) -> None:
    config = write_config(workdir, free_port())
    done = run_cli("homeassistant", "remove", "--config", str(config), "--timeout", "2")
    assert done.returncode == 1
    assert "not removed" in done.stderr


@pytest.mark.unit
def test_remove_with_a_bad_config_exits_78(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("homeassistant: {prefix: 'ha/#'}\n")
    assert cli.main(["homeassistant", "remove", "--config", str(bad)]) == 78
    assert "homeassistant.prefix" in capsys.readouterr().err
