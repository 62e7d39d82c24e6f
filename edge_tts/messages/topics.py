"""Topic names: what the daemon subscribes and publishes to, and which topics a reply may
be published to."""

from __future__ import annotations

from dataclasses import dataclass

MAX_TOPIC_BYTES = 65535  # MQTT's length prefix


@dataclass(frozen=True)
class Topics:
    prefix: str
    device: str
    hermes_enabled: bool = True

    @property
    def say(self) -> str:
        return f"{self.prefix}/{self.device}/say"

    @property
    def broadcast(self) -> str:
        return f"{self.prefix}/all/say"

    @property
    def events(self) -> str:
        return f"{self.prefix}/{self.device}/events"

    @property
    def availability(self) -> str:
        return f"{self.prefix}/{self.device}/availability"

    @property
    def telemetry(self) -> str:
        return f"{self.prefix}/{self.device}/telemetry"

    # Controls (Home Assistant's button and number use them; any client may).
    @property
    def stop(self) -> str:
        return f"{self.prefix}/{self.device}/stop"

    @property
    def volume_set(self) -> str:
        return f"{self.prefix}/{self.device}/volume/set"

    @property
    def volume(self) -> str:
        """Retained: the output volume now (a gain, 0-2)."""
        return f"{self.prefix}/{self.device}/volume"

    def controls(self) -> list[str]:
        return [self.stop, self.volume_set]

    hermes_say = "hermes/tts/say"
    hermes_finished = "hermes/tts/sayFinished"
    hermes_error = "hermes/error/tts"

    def subscriptions(self) -> list[str]:
        topics = [self.say, self.broadcast]
        return [*topics, self.hermes_say] if self.hermes_enabled else topics


def discovery_topic(ha_prefix: str, object_id: str) -> str:
    """Home Assistant's device-based discovery topic (HA 2024.11+)."""
    return f"{ha_prefix}/device/{object_id}/config"


def ha_status_topic(ha_prefix: str) -> str:
    """Where Home Assistant announces itself: `online` after each start."""
    return f"{ha_prefix}/status"


def publish_topic_problem(topic: str) -> str | None:
    """Why `topic` cannot be published to, or None when it can (MQTT 3.1.1 4.7, 5.0 4.7)."""
    if not topic:
        return "is empty"
    if "#" in topic or "+" in topic:
        return "contains a wildcard (# or +)"
    if "\0" in topic:
        return "contains a NUL character"
    if len(topic.encode("utf-8", "surrogatepass")) > MAX_TOPIC_BYTES:
        return f"is longer than {MAX_TOPIC_BYTES} bytes"
    return None
