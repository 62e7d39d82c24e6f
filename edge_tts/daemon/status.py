"""How the daemon is doing, read from its parts: the liveness checks that earn the systemd
watchdog's ping, the problems a user can act on, the one-line status, and the gauges the
telemetry publisher sends. The daemon (app.py) hands these to its health tick and its
telemetry publisher (notify.py, telemetry.py); nothing here runs a thread of its own.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..audio.output import AudioOutput
from ..core.telemetry import Telemetry
from ..messages.events import event
from ..messages.topics import Topics
from ..mqtt.link import MqttLink
from ..speech.cache_service import CacheService
from ..speech.dedupe import PlayedStore
from ..speech.pipeline import Pipeline
from ..voice.registry import Voices
from ..wyoming import WyomingServer

if TYPE_CHECKING:
    from ..http.door import HttpServer

_LOGGER = logging.getLogger(__name__)


@dataclass(eq=False)
class DaemonStatus:
    device_id: str
    link: MqttLink
    topics: Topics
    telemetry: Telemetry
    voices: Voices
    output: AudioOutput
    played: PlayedStore
    cache: CacheService
    pipeline: Pipeline
    wyoming: WyomingServer | None
    http: HttpServer | None = None
    _last_problems: list[str] = field(default_factory=list, init=False)

    def checks(self) -> dict[str, Callable[[], bool]]:
        # Liveness, not health: a broker outage or a missing card is reported in STATUS
        # and telemetry while the components retry; only a dead thread stops the pings.
        checks = {
            "mqtt": lambda: self.link.alive,
            "synthesis": self.pipeline.alive,
            "audio": lambda: self.output.alive,
        }
        if (wyoming := self.wyoming) is not None:
            checks["wyoming"] = lambda: wyoming.alive
        if (http := self.http) is not None:
            checks["http"] = lambda: http.alive
        return checks

    def problems(self) -> list[str]:
        """What is wrong now, in words a user can act on (empty when all is well)."""
        found = []
        if self.output.status != "ok":
            found.append(f"audio {self.output.status}")
        if self.played.problem is not None:
            found.append(f"state {self.played.problem}")
        if self.cache.problem is not None:
            found.append(f"cache {self.cache.problem}")
        if self.wyoming is not None and self.wyoming.problem is not None:
            found.append(f"wyoming {self.wyoming.problem}")
        if self.http is not None and self.http.problem is not None:
            found.append(f"http {self.http.problem}")
        return found

    def line(self) -> str:
        """The status line: systemd's STATUS, the Ready log and the telemetry's `status`."""
        return self._line(self.problems())

    def _line(self, problems: list[str]) -> str:
        link = "connected" if self.link.connected else "disconnected"
        voice = self.voices.default
        loaded = "loaded" if voice.loaded else "lazy"
        state = f"; state degraded: {self.played.problem}" if self.played.problem else ""
        state += f"; cache degraded: {self.cache.problem}" if self.cache.problem else ""
        line = (
            f"mqtt {link}; audio {self.output.status}; voice {voice.name} ({loaded}); "
            f"queue {self.pipeline.depth}{state}"
        )
        return f"degraded: {line}" if problems else line

    def tick(self) -> str:
        """The health tick's status step: retry what failed, say what changed."""
        self.output.recover()
        self.played.recover()
        self.cache.recover()
        problems = self.problems()
        if problems != self._last_problems:
            status = "degraded" if problems else "ok"
            if problems:
                _LOGGER.warning("Degraded: %s", "; ".join(problems))
            else:
                _LOGGER.info("Recovered: all is well again")
            self.link.publish(
                self.topics.events, event("status", None, status=status, problems=problems)
            )
        self._last_problems = problems
        return self._line(problems)

    def gauges(self) -> dict[str, object]:
        self.telemetry.set_counter("underruns", self.output.underruns)
        problems = self.problems()
        return {
            "device": self.device_id,
            "status": self._line(problems),
            "health": "degraded" if problems else "ok",
            "problems": problems,
            "audio": self.output.status,
            "queue_depth": self.pipeline.depth,
            "syntheses_in_flight": self.pipeline.in_flight,
            "mqtt_connected": self.link.connected,
            "cache": self.cache.gauges(),
            "wyoming_clients": self.wyoming.clients if self.wyoming is not None else None,
            **(self.http.gauges() if self.http is not None else {}),
            "voices": {
                n: {"loaded": v.loaded, "sha256": v.sha256, "build": v.build.as_dict()}
                for n, v in self.voices.all().items()
            },
        }

    def publish_telemetry(self, snapshot: dict[str, object]) -> None:
        self.link.publish(self.topics.telemetry, json.dumps(snapshot), qos=0, retain=True)
