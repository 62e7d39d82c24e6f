"""The device as Home Assistant's MQTT discovery describes it: one retained config on
`<prefix>/device/<object id>/config` (device-based discovery, HA 2024.11+) with the device,
its origin, its availability and every entity. Pure: payloads only, no I/O.

What HA does with a payload is not what the JSON says: it accepts unknown keys silently
and drops an entity with a bad value (an unknown device class, a unit its device class
does not allow) with one ERROR line in its log. So every key here is checked against a
real Home Assistant (tests/test_homeassistant_e2e.py), not only against this file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..messages.topics import Topics, discovery_topic

MANUFACTURER = "edge-tts-daemon"
MODEL = "Offline text-to-speech (Piper voices, MQTT)"
ORIGIN = "edge-tts-daemon"

# The stop button's payload: it names the button in the `interrupted` event's `by`.
STOP_BY = "ha-stop-button"
# HA shows the volume in percent of unity gain; on MQTT it is the gain, as in
# `audio.volume` and a request's `volume` (0-2), so one scale holds everywhere else.
VOLUME_MAX_PERCENT = 200

_OBJECT_ID = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class DeviceInfo:
    """What HA shows about the device itself."""

    device_id: str
    sw_version: str
    hw_version: str | None = None  # the board, e.g. "Raspberry Pi 4 Model B Rev 1.5"
    support_url: str | None = None


@dataclass(frozen=True)
class Sensor:
    """One value of the retained telemetry JSON as an HA sensor."""

    key: str  # stable: part of the unique id, never renamed
    name: str
    template: str  # renders the state from `value_json`; "None" (a JSON null) is unknown
    unit: str | None = None
    device_class: str | None = None
    state_class: str | None = None
    diagnostic: bool = False
    precision: int | None = None
    icon: str | None = None
    options: tuple[str, ...] = ()  # the states of an `enum` sensor
    attributes: str | None = None  # a template for its attributes, from the same JSON


def _latency(metric: str, quantile: str) -> str:
    return f"{{{{ value_json.latency.{metric}.{quantile} }}}}"


STATUS_ATTRIBUTES = (
    "{{ {'problems': value_json.problems, 'summary': value_json.status, "
    "'audio': value_json.audio} | tojson }}"
)

SENSORS: tuple[Sensor, ...] = (
    Sensor(
        "status",
        "Status",
        "{{ value_json.health }}",
        device_class="enum",
        options=("ok", "degraded"),  # the telemetry's `health`
        attributes=STATUS_ATTRIBUTES,
        icon="mdi:list-status",
    ),
    Sensor(
        "queue_depth",
        "Queue",
        "{{ value_json.queue_depth }}",
        state_class="measurement",
        icon="mdi:tray-full",
    ),
    Sensor(
        "requests_finished",
        "Requests finished",
        "{{ value_json.counters.played }}",
        state_class="total_increasing",
        icon="mdi:message-check",
    ),
    Sensor(
        "requests_rejected",
        "Requests rejected",
        "{{ value_json.counters.rejected }}",
        state_class="total_increasing",
        icon="mdi:message-alert",
    ),
    Sensor(
        "memory",
        "Memory",
        "{{ (value_json.process.rss_bytes / 1048576) | round(1) }}",
        unit="MiB",
        device_class="data_size",
        state_class="measurement",
        diagnostic=True,
        precision=1,
    ),
    Sensor(
        "ttfa_p50",
        "Time to first audio (median)",
        _latency("time_to_first_audio_ms", "p50"),
        unit="ms",
        device_class="duration",
        state_class="measurement",
        diagnostic=True,
        precision=0,
    ),
    Sensor(
        "ttfa_p95",
        "Time to first audio (95th percentile)",
        _latency("time_to_first_audio_ms", "p95"),
        unit="ms",
        device_class="duration",
        state_class="measurement",
        diagnostic=True,
        precision=0,
    ),
    Sensor(
        "real_time_factor",
        "Real-time factor",
        _latency("real_time_factor", "p50"),
        state_class="measurement",
        diagnostic=True,
        precision=3,
        icon="mdi:speedometer",
    ),
    Sensor(
        "underruns",
        "Underruns",
        "{{ value_json.counters.underruns }}",
        state_class="total_increasing",
        diagnostic=True,
        icon="mdi:waveform",
    ),
    Sensor(
        "soc_temperature",
        "SoC temperature",
        "{{ value_json.process.soc_temp_c }}",
        unit="°C",
        device_class="temperature",
        state_class="measurement",
        diagnostic=True,
        precision=1,
    ),
)


def object_id(device_id: str) -> str:
    """The discovery topic's id level: HA takes only [A-Za-z0-9_-] there and ignores a
    config on any other topic, so a host name like `pi.local` becomes `pi_local`."""
    return _OBJECT_ID.sub("_", device_id)


def unique_id(device_id: str, key: str) -> str:
    """Stable across restarts and upgrades: HA keeps an entity's id and settings by it."""
    return f"edge-tts-{device_id}-{key}"


def config_topic(ha_prefix: str, device_id: str) -> str:
    return discovery_topic(ha_prefix, object_id(device_id))


def discovery_payload(topics: Topics, device: DeviceInfo) -> dict[str, object]:
    """The whole discovery config; availability and origin apply to every component."""
    components: dict[str, dict[str, object]] = {
        "speak": _notify(topics, device.device_id),
        "stop": _button(topics, device.device_id),
        "volume": _number(topics, device.device_id),
    }
    for sensor in SENSORS:
        components[sensor.key] = _sensor(topics, device.device_id, sensor)
    return {
        "device": _device(device),
        "origin": _origin(device),
        "availability_topic": topics.availability,
        "payload_available": "online",
        "payload_not_available": "offline",
        "components": components,
    }


def discovery_message(topics: Topics, device: DeviceInfo) -> bytes:
    return json.dumps(discovery_payload(topics, device), separators=(",", ":")).encode()


def _device(device: DeviceInfo) -> dict[str, object]:
    info: dict[str, object] = {
        "identifiers": [f"edge-tts-{device.device_id}"],
        "name": f"edge-tts {device.device_id}",
        "manufacturer": MANUFACTURER,
        "model": MODEL,
        "sw_version": device.sw_version,
    }
    if device.hw_version:
        info["hw_version"] = device.hw_version
    return info


def _origin(device: DeviceInfo) -> dict[str, object]:
    origin: dict[str, object] = {"name": ORIGIN, "sw_version": device.sw_version}
    if device.support_url:
        origin["support_url"] = device.support_url
    return origin


def _notify(topics: Topics, device_id: str) -> dict[str, object]:
    # As JSON, so any message is read as text: a plain payload starting with "{" or "["
    # would be parsed as a JSON request and rejected.
    return {
        "platform": "notify",
        "unique_id": unique_id(device_id, "speak"),
        "name": "Speak",
        "icon": "mdi:account-voice",
        "command_topic": topics.say,
        "command_template": "{{ {'text': value} | tojson }}",
        "qos": 1,  # kept in the daemon's session if it reconnects just then
    }


def _button(topics: Topics, device_id: str) -> dict[str, object]:
    return {
        "platform": "button",
        "unique_id": unique_id(device_id, "stop"),
        "name": "Stop speaking",
        "icon": "mdi:stop",
        "command_topic": topics.stop,
        "payload_press": STOP_BY,
        "qos": 0,  # a press is for now: never delivered late, after a reconnect
    }


def _number(topics: Topics, device_id: str) -> dict[str, object]:
    return {
        "platform": "number",
        "unique_id": unique_id(device_id, "volume"),
        "name": "Volume",
        "icon": "mdi:volume-high",
        "command_topic": topics.volume_set,
        "command_template": "{{ value / 100 }}",
        "state_topic": topics.volume,
        # round(1), not round(0): HA's round(0) makes an int, jinja's a float.
        "value_template": "{{ (value | float * 100) | round(1) }}",
        "min": 0,
        "max": VOLUME_MAX_PERCENT,
        "step": 1,
        "mode": "slider",
        "unit_of_measurement": "%",
        "qos": 1,
    }


def _sensor(topics: Topics, device_id: str, sensor: Sensor) -> dict[str, object]:
    config: dict[str, object] = {
        "platform": "sensor",
        "unique_id": unique_id(device_id, sensor.key),
        "name": sensor.name,
        "state_topic": topics.telemetry,
        "value_template": sensor.template,
    }
    optional = {
        "unit_of_measurement": sensor.unit,
        "device_class": sensor.device_class,
        "state_class": sensor.state_class,
        "suggested_display_precision": sensor.precision,
        "icon": sensor.icon,
        "entity_category": "diagnostic" if sensor.diagnostic else None,
    }
    config.update({k: v for k, v in optional.items() if v is not None})
    if sensor.options:
        config["options"] = list(sensor.options)
    if sensor.attributes:
        config["json_attributes_topic"] = topics.telemetry
        config["json_attributes_template"] = sensor.attributes
    return config
