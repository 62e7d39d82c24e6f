"""The daemon's MQTT controls (stop, volume) and its Home Assistant announcement.

Runs on paho's thread, so it only parses and hands over: a stop goes to the pipeline (as
an interrupting request's does), a volume to the output (a float under its lock) and to
the saver thread, and the discovery config, built once at start, to paho's queue.
"""

from __future__ import annotations

import importlib.metadata
import logging
from pathlib import Path
from typing import Protocol

from .. import __version__
from ..audio.output import AudioOutput
from ..config import Settings
from ..messages.topics import Topics, ha_status_topic
from ..mqtt.link import Inbound
from .discovery import DeviceInfo, config_topic, discovery_message
from .volume import FILE_NAME as VOLUME_FILE
from .volume import VolumeStore, parse_volume

_LOGGER = logging.getLogger(__name__)

BOARD_MODEL = Path("/proc/device-tree/model")  # "Raspberry Pi 4 Model B Rev 1.5" on a Pi
DISTRIBUTION = "edge-tts-daemon"
STOP_BY_DEFAULT = "stop"  # `by` of a stop whose payload names nobody
_MAX_BY_CHARS = 64


class Link(Protocol):
    """What the controls use of `MqttLink`."""

    def publish(self, topic: str, payload: bytes | str, qos: int = 1, retain: bool = False) -> bool:
        """Queue a message; False (logged) when paho refuses it."""

    def ack(self, inbound: Inbound) -> bool:
        """Acknowledge a message on the connection that delivered it."""


class Stopper(Protocol):
    """What the controls use of `Pipeline`."""

    def stop_playing(self, by: str) -> str | None:
        """Fade out what plays; the id of the request stopped, or None."""


def optional_subscriptions(settings: Settings) -> list[str]:
    """What Home Assistant needs beyond the daemon's own topics: its `online` announcement.
    Optional: a broker ACL may confine the device to its own topics."""
    ha = settings.homeassistant
    return [ha_status_topic(ha.prefix)] if ha.discovery else []


class Controls:
    def __init__(
        self,
        settings: Settings,
        topics: Topics,
        link: Link,
        pipeline: Stopper,
        output: AudioOutput,
    ) -> None:
        self._topics = topics
        self._link = link
        self._pipeline = pipeline
        self._output = output
        state = settings.resolved_state_dir()
        self._store = VolumeStore(state / VOLUME_FILE, settings.audio.volume)
        self.volume = self._store.load()
        output.set_volume(self.volume)
        ha = settings.homeassistant
        self._commands = {topics.stop: self._stop, topics.volume_set: self._set_volume}
        self._handlers = dict(self._commands)
        self._discovery: tuple[str, bytes] | None = None
        if ha.discovery:
            device = this_device(settings.device_id)
            topic = config_topic(ha.prefix, settings.device_id)
            self._discovery = (topic, discovery_message(topics, device))
            self._handlers[ha_status_topic(ha.prefix)] = self._ha_status

    def start(self) -> None:
        self._store.start()

    def stop(self) -> None:
        self._store.stop()

    # --- paho's thread -------------------------------------------------------------

    def on_connected(self) -> None:
        """Retained state and discovery again at every connect: a broker restarted without
        persistence has lost them."""
        self._publish_volume()
        self._announce()

    def take(self, inbound: Inbound) -> bool:
        """Handle a control message and acknowledge it; False when it is not one."""
        env = inbound.envelope
        handler = self._handlers.get(env.topic)
        if handler is None:
            return False
        try:
            if env.retained and env.topic in self._commands:
                # A command is for when it is sent; MQTT 3.1.1 replays a retained one at
                # every subscribe (MQTT 5 is asked not to).
                _LOGGER.warning("Ignoring a retained command on %s", env.topic)
            else:
                handler(env.payload)
        finally:
            self._link.ack(inbound)
        return True

    def _ha_status(self, payload: bytes) -> None:
        if payload.strip() == b"online":  # HA (re)started and has forgotten us
            self._announce()

    def _stop(self, payload: bytes) -> None:
        by = _printable(payload) or STOP_BY_DEFAULT
        stopped = self._pipeline.stop_playing(by)
        if stopped is None:
            _LOGGER.info("Stop (by %s): nothing is playing", by)
        else:
            _LOGGER.info("Stopped %s (by %s)", stopped, by)

    def _set_volume(self, payload: bytes) -> None:
        try:
            volume = parse_volume(payload)
        except ValueError as err:
            _LOGGER.warning("Ignoring volume %s: %s", _printable(payload), err)
            self._publish_volume()  # a slider that moved snaps back to the real value
            return
        self._output.set_volume(volume)
        self.volume = volume
        self._publish_volume()
        self._store.save_soon(volume)
        _LOGGER.info("Volume set to %g", volume)

    def _publish_volume(self) -> None:
        self._link.publish(self._topics.volume, f"{self.volume:g}", retain=True)

    def _announce(self) -> None:
        if self._discovery is None:
            return
        topic, message = self._discovery
        if self._link.publish(topic, message, retain=True):
            _LOGGER.info("Published Home Assistant discovery on %s", topic)


def _printable(payload: bytes) -> str:
    text = payload.decode("utf-8", "replace").strip()[:_MAX_BY_CHARS]
    return "".join(c for c in text if c.isprintable())


def this_device(device_id: str) -> DeviceInfo:
    """The device as HA shows it: our version, the board (on a Pi), where to get help."""
    return DeviceInfo(device_id, __version__, _board_model(), _support_url())


def _board_model() -> str | None:
    try:
        return BOARD_MODEL.read_text("utf-8", "replace").strip("\0\n ") or None
    except OSError:
        return None


def _support_url() -> str | None:
    """The package's first Project-URL ([project.urls] in pyproject.toml), if it has one."""
    try:
        urls = importlib.metadata.metadata(DISTRIBUTION).get_all("Project-URL") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    return next((url.partition(",")[2].strip() for url in urls if "," in url), None)
