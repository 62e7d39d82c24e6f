"""Wiring: build every part up front, start them in dependency order, run until SIGTERM,
stop them in reverse.

MQTT message → intake (messages) → pipeline (text front-end → synthesis workers → audio
output), with the reporter, telemetry, systemd notify and a health tick beside it.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import cache, http, mqtt, speech, wyoming
from ..audio.sinks import open_output
from ..config import ConfigError, Settings, TextSettings
from ..core.lifecycle import Part, Parts, nothing
from ..core.telemetry import Telemetry, TelemetryPublisher
from ..homeassistant.controls import Controls, optional_subscriptions
from ..http.tracker import RequestTracker
from ..messages.topics import Topics
from ..mqtt.intake import Intake
from ..mqtt.link import Inbound, MqttLink
from ..mqtt.reporter import MqttReporter
from ..speech.cache_service import CacheService
from ..speech.dedupe import FILE_NAME as PLAYED_FILE
from ..speech.dedupe import PlayedStore
from ..speech.keepwarm import KeepWarm
from ..speech.lexicon_check import check_readings
from ..speech.pipeline import Pipeline
from ..speech.responses import Responses
from ..speech.routing import Router
from ..speech.schedule import TaskClass
from ..text import lexicon
from ..text.lexicon import Lexicon
from ..voice import files
from ..voice.base import SpeechVoice
from ..voice.integrity import ModelIntegrityError
from ..voice.registry import Voices
from ..voice.voice_dir import VoiceDirError
from ..wyoming import WyomingServer
from .notify import HealthTick, Notifier
from .periodic import Duty, Tick
from .status import DaemonStatus

if TYPE_CHECKING:
    from ..http.door import HttpServer

_LOGGER = logging.getLogger(__name__)

STOP_TIMEOUT_S = 5.0
HEALTH_INTERVAL_S = 5.0  # without a systemd watchdog to pace it
# What the telemetry counts: every part's own counters and doors, whether or not the part
# is enabled, so the published document has the same keys on every device.
FIGURES = (speech.FIGURES, cache.FIGURES, mqtt.FIGURES, wyoming.FIGURES, http.FIGURES)


class StartupRefused(RuntimeError):
    """Starting would be wrong (bad config, tampered model): exit without a restart loop."""


class Daemon:
    def __init__(
        self,
        settings: Settings,
        notifier: Notifier | None = None,
        reload: Callable[[], Settings] | None = None,
    ):
        """`reload` reads the settings again (SIGHUP: the lexicon is replaced with theirs)."""
        self.settings = settings
        s = settings
        self.notifier = notifier or Notifier()
        self._reload = reload
        self.stop_event = threading.Event()
        self.topics = Topics(s.topic_prefix, s.device_id, s.hermes.enabled)
        self.telemetry = Telemetry(figures=FIGURES)
        try:
            self.voices = Voices(s)
        except (files.VoiceNotFoundError, VoiceDirError) as err:
            raise StartupRefused(str(err)) from err
        try:  # after the voices: each entry's phonemes are checked against them
            self.lexicon = Lexicon(self._lexicon_entries(s.text))
        except lexicon.LexiconError as err:
            raise StartupRefused(str(err)) from err
        rate = self.voices.default.sample_rate
        self.output = open_output(s.audio, rate)
        # Created on the first save: an unwritable state directory degrades, not refuses.
        self.played = PlayedStore(s.resolved_state_dir() / PLAYED_FILE)
        subscriptions = [*self.topics.subscriptions(), *self.topics.controls()]
        self.link = MqttLink(
            s.broker,
            s.client_id,
            subscriptions,
            self.topics.availability,
            self._on_message,
            optional=optional_subscriptions(s),
        )
        self.link.on_connected = self._on_connected
        self.reporter = MqttReporter(self.link, self.topics, self.telemetry)
        self.tracker = RequestTracker() if s.http.uri is not None else None
        # Also under the state directory, and also degraded, not refused, when unwritable.
        self.cache = CacheService(s, self.telemetry)
        self.pipeline = Pipeline(
            s.synthesis,
            s.queue,
            output=self.output,
            output_rate=rate,
            # Every request's fate goes to MQTT, and to the HTTP server's /requests/{id}:
            # the tracker hears every door's, not only /say's, as GET /requests/{id}
            # answers for MQTT requests too (docs/http.md).
            reporter=self.reporter,
            telemetry=self.telemetry,
            played=self.played,
            router=Router(s.synthesis, self.voices, self.lexicon, s.text),
            cache=self.cache.lookup,
            listeners=[self.tracker] if self.tracker else [],
        )
        self.cache.attach(self.pipeline.schedule, self.voices, self.pipeline.router)
        # What a remote door (Wyoming, HTTP) asks for: the same workers, below local playback.
        self.responses = Responses(
            s.synthesis,
            self.voices,
            self.pipeline.schedule.wake,
            self.cache.lookup,
            self.lexicon,
            s.text,
        )
        schedule = self.pipeline.schedule
        schedule.add(TaskClass.REMOTE, self.responses)
        self.keep_warm = KeepWarm(self.voices, s.synthesis.keep_warm_s, schedule.idle_since)
        schedule.add(TaskClass.KEEP_WARM, self.keep_warm)
        self.intake = Intake(
            s, self.voices, self.link, self.reporter, self.pipeline, self.telemetry
        )
        # Stop and volume over MQTT, and Home Assistant's discovery of them.
        self.controls = Controls(s, self.topics, self.link, self.pipeline, self.output)
        # HA Assist's TTS over Wyoming.
        self.wyoming = (
            WyomingServer(s, self.voices, self.responses, self.telemetry)
            if s.wyoming.uri is not None
            else None
        )
        # Scripts, OpenAI- and Piper-compatible clients, /say and /metrics over HTTP.
        self.http = self._http_server() if self.tracker is not None else None
        self.status = DaemonStatus(
            device_id=s.device_id,
            link=self.link,
            topics=self.topics,
            telemetry=self.telemetry,
            voices=self.voices,
            output=self.output,
            played=self.played,
            cache=self.cache,
            pipeline=self.pipeline,
            wyoming=self.wyoming,
            http=self.http,
        )
        self.publisher = TelemetryPublisher(
            self.telemetry, self.status.gauges, self.status.publish_telemetry
        )
        self.health = HealthTick(self.notifier, self.status.checks(), self.status.tick)
        # Every periodic duty, on one thread. Health at once: the first watchdog ping comes
        # well inside WatchdogSec= after READY.
        health_every = self.notifier.watchdog_interval() or HEALTH_INTERVAL_S
        self.tick = Tick(
            [
                Duty("health", health_every, self.health.tick, at_start=True),
                Duty("telemetry", s.telemetry.interval, self.publisher.publish_once),
            ]
        )
        self.parts = Parts(self._parts())

    def _parts(self) -> list[Part]:
        """In dependency order: the pipeline reports through the link, so the link stops
        after it (the `deferred` events of a stop still go out); the Wyoming server hands
        its work to the pipeline's workers, so it stops before them (and so does the HTTP
        server)."""
        return [
            Part("voice", self._preload, nothing),
            Part("audio", self.output.start, self.output.close),
            Part("controls", self.controls.start, self.controls.stop),
            # Before MQTT: what cannot pause for a request (the FP32 build's load) is done.
            Part("cache", self.cache.start, self.cache.stop),
            Part("mqtt", self.link.start, self.link.stop),
            Part("pipeline", self.pipeline.start, self._stop_pipeline),
            *([Part("wyoming", self.wyoming.start, self.wyoming.stop)] if self.wyoming else []),
            *([Part("http", self.http.start, self.http.stop)] if self.http else []),
            Part("tick", self.tick.start, self.tick.stop),
        ]

    def _http_server(self) -> HttpServer:
        """Imported here: aiohttp and prometheus_client only where HTTP is on."""
        from ..http.door import HttpServer

        assert self.tracker is not None
        try:
            return HttpServer(
                self.settings,
                self.voices,
                self.responses,
                self.telemetry,
                self.tracker,
                self.pipeline.submit,
                problems=lambda: self.status.problems(),  # the status is made after it
                gauges=lambda: self.status.gauges(),
            )
        except ConfigError as err:  # beyond loopback without a token; an unreadable token
            raise StartupRefused(str(err)) from err

    # --- lifecycle -------------------------------------------------------------------

    def run(self) -> int:
        self._install_signals()
        try:
            self.parts.start()
            self._serve()
        finally:
            self.notifier.stopping(
                "stopping: fading out, leaving unplayed requests for the next start"
            )
            self.parts.stop()
        return 0

    def _preload(self) -> None:
        """Every voice, so a Mandarin message does not wait seconds for its voice to load.
        The default voice must load (ModelIntegrityError propagates: refuse to start);
        another that fails is reported, and requests for it are rejected with the reason."""
        if not self.settings.synthesis.preload:
            return
        default = self.voices.default
        self._warm(default)
        for name, voice in self.voices.all().items():
            if voice is default:
                continue
            try:
                self._warm(voice)
            except (ModelIntegrityError, VoiceDirError, OSError) as err:
                _LOGGER.error("Voice %s cannot be used: %s", name, err)

    def _warm(self, voice: SpeechVoice) -> None:
        self.notifier.status(f"loading voice {voice.name}")
        voice.load()
        self.notifier.status(f"warming up voice {voice.name}")
        started = time.monotonic()
        voice.warm_up(concurrent=self.settings.synthesis.max_concurrent)
        _LOGGER.info("Warmed up voice %s in %.2f s", voice.name, time.monotonic() - started)

    def _stop_pipeline(self) -> None:
        self.pipeline.stop(STOP_TIMEOUT_S)

    def _serve(self) -> None:
        broker = self.settings.broker
        while not self.stop_event.is_set():
            if self.link.wait_connected(0.5):
                break
            self.notifier.status(f"waiting for broker {broker.host}:{broker.port}")
        if not self.stop_event.is_set():
            self.notifier.ready(self.status.line())
            _LOGGER.info("Ready: %s", self.status.line())
        self.stop_event.wait()

    def _on_message(self, inbound: Inbound) -> None:
        if not self.controls.take(inbound):
            self.intake.on_message(inbound)

    def _on_connected(self) -> None:
        if self.link.connects > 1:
            self.telemetry.count("reconnects")
        self.controls.on_connected()

    def _install_signals(self) -> None:
        def handle(signum: int, _frame: object) -> None:
            _LOGGER.info("Received %s; stopping", signal.Signals(signum).name)
            self.stop_event.set()

        signal.signal(signal.SIGTERM, handle)
        signal.signal(signal.SIGINT, handle)
        signal.signal(signal.SIGHUP, lambda _signum, _frame: self.reload_lexicon())

    def _lexicon_entries(self, text: TextSettings) -> list[lexicon.Entry]:
        """The entries of the settings, each reading checked with the voices that read
        it; LexiconError names the first bad one."""
        entries = lexicon.load(text.lexicon, text.lexicon_file)
        check_readings(entries, self.voices)
        return entries

    def reload_lexicon(self) -> None:
        """The lexicon of the settings as they are now (their file, and the file it names),
        in place of the one in use; on any error the one in use stays, with the reason
        logged. Nothing else is reloaded."""
        if self._reload is None:
            _LOGGER.warning("Received SIGHUP; no settings file to reload the lexicon from")
            return
        try:
            entries = self._lexicon_entries(self._reload().text)
        except (ConfigError, lexicon.LexiconError) as err:
            _LOGGER.error(
                "Lexicon not reloaded (%d entries stay in use): %s", len(self.lexicon), err
            )
            return
        self.lexicon.replace(entries)
        _LOGGER.info("Lexicon reloaded: %d entries", len(entries))


__all__ = ["Daemon", "StartupRefused"]
