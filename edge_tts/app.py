"""Wiring: start in dependency order, run until SIGTERM, stop in reverse.

MQTT message → request (messages) → pipeline (text front-end → synthesis workers →
ring buffer → ALSA), with telemetry, systemd notify and a health tick beside it.
"""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from .audio.player import AudioOutput, open_output
from .config import Settings, VoiceSettings
from .dedupe import PlayedStore
from .messages import (
    BadRequest,
    Envelope,
    Priority,
    SayRequest,
    Topics,
    event,
    hermes_error,
    hermes_finished,
    hermes_site,
    parse_hermes,
    parse_say,
    payload_id,
    valid_response_topic,
)
from .mqtt_link import Inbound, MqttLink
from .notify import HealthTick, Notifier
from .pipeline import Job, Pipeline
from .synthesis import SpeechOptions
from .telemetry import Telemetry, TelemetryPublisher
from .voice import files
from .voice.model import Voice

_LOGGER = logging.getLogger(__name__)

STOP_TIMEOUT_S = 5.0


class StartupRefused(RuntimeError):
    """Starting would be wrong (bad config, tampered model): exit without a restart loop."""


class Voices:
    """The configured voices, loaded lazily (the default one eagerly unless configured lazy)."""

    def __init__(self, settings: Settings):
        self._settings = settings
        self._voices: dict[str, Voice] = {}
        for name, voice_settings in settings.voices.items():
            self._voices[name] = self._make(voice_settings)

    def _make(self, vs: VoiceSettings) -> Voice:
        try:
            voice_files = files.from_model_path(vs.path) if vs.path else files.default_voice()
        except files.VoiceNotFoundError as err:
            raise StartupRefused(str(err)) from err
        synthesis = self._settings.synthesis
        return Voice(
            voice_files,
            pinned_sha256=vs.sha256,
            threads=synthesis.threads,
            max_phonemes=synthesis.max_phonemes,
        )

    @property
    def default(self) -> Voice:
        return self._voices[self._settings.default_voice]

    def get(self, name: str | None) -> Voice:
        if name is None:
            return self.default
        try:
            return self._voices[name]
        except KeyError:
            known = ", ".join(sorted(self._voices))
            raise BadRequest(f"unknown voice {name!r} (configured: {known})") from None

    def settings_for(self, voice: Voice) -> VoiceSettings:
        name = next(n for n, v in self._voices.items() if v is voice)
        return self._settings.voices[name]

    def all(self) -> Mapping[str, Voice]:
        return self._voices


class Reporter:
    """A request's fate → events (own topic, response topic), Hermes replies, and the ack."""

    def __init__(self, link: MqttLink, topics: Topics, telemetry: Telemetry):
        self.link = link
        self.topics = topics
        self.telemetry = telemetry

    def _emit(self, job: Job, kind: str, final: bool, **fields: object) -> None:
        if final:
            # Acknowledged first: a sender that sees the final event knows the broker will
            # not deliver the request again (both go out in order on one connection).
            job.concluded = True
            for delivery in job.deliveries:
                assert isinstance(delivery, Inbound)
                self.link.ack(delivery)
        payload = event(kind, job.request, **fields)
        self.link.publish(self.topics.events, payload)
        request = job.request
        if final and request.response_topic:
            self.link.publish(
                request.response_topic, payload, correlation_data=request.correlation_data
            )

    def queued(self, job: Job, position: int) -> None:
        self.telemetry.count("received")
        self._emit(job, "queued", final=False, position=position, text_chars=len(job.request.text))

    def started(self, job: Job) -> None:
        wait = _ms(job.started_at, job.request.received_at)
        self._emit(job, "started", final=False, queue_wait_ms=wait)

    def finished(self, job: Job) -> None:
        utt = job.utterance
        ttfa = _ms(utt.first_sample_at if utt else None, job.request.received_at)
        rtf = job.synth_seconds / job.audio_seconds if job.audio_seconds else None
        self.telemetry.count("played")
        if ttfa is not None:
            self.telemetry.observe("time_to_first_audio_ms", ttfa)
        if rtf is not None:
            self.telemetry.observe("real_time_factor", rtf)
        self.telemetry.observe("synthesis_ms", job.synth_seconds * 1000)
        self._emit(
            job,
            "finished",
            final=True,
            time_to_first_audio_ms=ttfa,
            queue_wait_ms=_ms(job.started_at, job.request.received_at),
            audio_ms=round(job.audio_seconds * 1000),
            synthesis_ms=round(job.synth_seconds * 1000),
            real_time_factor=round(rtf, 4) if rtf is not None else None,
            chunks=len(job.chunks or []),
        )
        self._hermes_done(job)

    def rejected(self, job: Job, reason: str) -> None:
        self.telemetry.count("rejected")
        _LOGGER.warning("Rejected %s: %s", job.request.id, reason)
        self._emit(job, "rejected", final=True, reason=reason)
        self._hermes_done(job, error=reason)

    def expired(self, job: Job) -> None:
        self.telemetry.count("expired")
        self._emit(job, "expired", final=True)
        self._hermes_done(job, error="expired before it could be played")

    def interrupted(self, job: Job, by: str) -> None:
        self.telemetry.count("interrupted")
        self._emit(job, "interrupted", final=True, by=by, audio_ms=round(job.audio_seconds * 1000))
        self._hermes_done(job)

    def duplicate(self, job: Job, reason: str) -> None:
        """The same request again (same id and text, or a broker redelivery): not played
        twice, but answered, so a sender always learns what became of a message."""
        self.telemetry.count("duplicates")
        _LOGGER.info("Request %s is a duplicate (%s); not played again", job.request.id, reason)
        self._emit(job, "duplicate", final=True, reason=reason)
        self._hermes_done(job)

    def deferred(self, job: Job) -> None:
        """Not a final event: the daemon stops, and the broker delivers it again."""
        self.telemetry.count("deferred")
        self._emit(job, "deferred", final=False, reason="daemon stopping; plays after restart")

    def _hermes_done(self, job: Job, error: str | None = None) -> None:
        hermes = job.request.hermes
        if hermes is None:
            return
        if error is not None:
            self.link.publish(
                self.topics.hermes_error,
                hermes_error(hermes.site_id, hermes.session_id, error, job.request.text[:100]),
            )
        # Always answer: a Hermes dialogue manager waits for sayFinished to go on.
        self.link.publish(self.topics.hermes_finished, hermes_finished(job.request))

    def bad_payload(
        self, inbound: Inbound, reason: str, hermes: tuple[str, str | None] | None
    ) -> None:
        self.telemetry.count("rejected")
        _LOGGER.warning("Rejected a message on %s: %s", inbound.envelope.topic, reason)
        env = inbound.envelope
        sender_id = payload_id(env.payload)
        self.link.publish(
            self.topics.events,
            event("rejected", None, id=sender_id, reason=reason, topic=env.topic),
        )
        response_topic = valid_response_topic(env)
        if response_topic:
            self.link.publish(
                response_topic,
                event("rejected", None, id=sender_id, reason=reason),
                correlation_data=env.correlation_data,
            )
        if hermes is not None:
            self.link.publish(
                self.topics.hermes_error, hermes_error(hermes[0], hermes[1], reason, "")
            )
        self.link.ack(inbound)


def _ms(end: float | None, start: float) -> float | None:
    return None if end is None else round((end - start) * 1000, 1)


class Daemon:
    def __init__(self, settings: Settings, notifier: Notifier | None = None):
        self.settings = settings
        self.notifier = notifier or Notifier()
        self.stop_event = threading.Event()
        self.topics = Topics(settings.topic_prefix, settings.device_id, settings.hermes.enabled)
        self.site_id = settings.hermes.site_id or settings.device_id
        self.telemetry = Telemetry()
        self.voices = Voices(settings)
        self.output: AudioOutput | None = None
        self.pipeline: Pipeline | None = None
        self.link: MqttLink | None = None
        self.reporter: Reporter | None = None
        self._retained_warned: set[str] = set()
        self.played: PlayedStore | None = None
        self._last_problems: list[str] = []

    # --- intake (paho's thread): parse and enqueue, nothing more -------------------

    def on_message(self, inbound: Inbound) -> None:
        assert self.reporter is not None and self.pipeline is not None and self.link is not None
        env = inbound.envelope
        hermes = env.topic == Topics.hermes_say
        if hermes and hermes_site(env.payload) not in (self.site_id, None):
            self.link.ack(inbound)  # addressed to another satellite
            return
        if env.retained:
            self._skip_retained_copy(inbound)
            return
        site = (self.site_id, _session(env.payload)) if hermes else None
        try:
            request = self._parse(env, hermes)
            job = self._job(request, inbound)
        except BadRequest as err:
            self.reporter.bad_payload(inbound, str(err), site)
            return
        except Exception as err:  # a bug must still answer the sender, never drop silently
            _LOGGER.exception("Could not take a message on %s", env.topic)
            self.reporter.bad_payload(inbound, f"internal error: {err}", site)
            return
        self.pipeline.submit(job)

    def _skip_retained_copy(self, inbound: Inbound) -> None:
        """A retained request plays once, when it is published (it reaches us live, without
        the retain flag). The broker's stored copy, which MQTT 3.1.1 replays at every
        subscribe (MQTT 5 is asked not to), is not a new request: acknowledge and skip it."""
        assert self.link is not None
        self.link.ack(inbound)
        topic = inbound.envelope.topic
        self.telemetry.count("retained_skipped")
        if topic not in self._retained_warned:
            self._retained_warned.add(topic)
            _LOGGER.warning(
                "Skipping the broker's retained copy on %s (it played when published); "
                "clear it with: mosquitto_pub -r -n -t '%s'",
                topic,
                topic,
            )

    def _parse(self, env: Envelope, hermes: bool) -> SayRequest:
        q = self.settings.queue
        if hermes:
            return parse_hermes(env, q.max_text_chars)
        return parse_say(env, q.max_text_chars, q.default_ttl)

    def _job(self, request: SayRequest, inbound: Inbound) -> Job:
        voice = self.voices.get(request.voice)
        vs = self.voices.settings_for(voice)
        base = vs.length_scale or voice.config.length_scale
        options = SpeechOptions(
            speaker=request.speaker if request.speaker is not None else vs.speaker,
            length_scale=base / (request.speed or 1.0),
            volume=request.volume if request.volume is not None else 1.0,
        )
        return Job(request=request, deliveries=[inbound], voice=voice, options=options)

    # --- lifecycle -------------------------------------------------------------------

    def run(self) -> int:
        self._install_signals()
        try:
            self._start()
            self._serve()
        finally:
            self._stop()
        return 0

    def _start(self) -> None:
        s = self.settings
        default = self.voices.default
        if s.synthesis.preload:
            self.notifier.status(f"loading voice {default.name}")
            default.load()  # ModelIntegrityError propagates: refuse to start
            self.notifier.status(f"warming up voice {default.name}")
            started = time.monotonic()
            default.warm_up(concurrent=s.synthesis.max_concurrent)
            _LOGGER.info("Warmed up voice %s in %.2f s", default.name, time.monotonic() - started)
        self.output = open_output(
            s.audio.sink,
            default.sample_rate,
            s.audio.device,
            s.audio.wav_dir,
            s.audio.volume,
            s.audio.ring_buffer_seconds,
            s.audio.fade_ms,
            s.audio.block_frames,
            s.audio.latency_ms / 1000,
        )
        self.output.start()
        # Created on the first save: an unwritable state directory degrades, not refuses.
        self.played = PlayedStore(s.resolved_state_dir() / "played.json")
        client_id = s.broker.client_id or f"edge-tts-{s.device_id}"
        self.link = MqttLink(
            s.broker,
            client_id,
            self.topics.subscriptions(),
            self.topics.availability,
            self.on_message,
        )
        self.reporter = Reporter(self.link, self.topics, self.telemetry)
        self.pipeline = Pipeline(
            self.output,
            default.sample_rate,
            self.reporter,
            self.telemetry,
            self.played,
            queue_size=s.queue.size,
            max_concurrent=s.synthesis.max_concurrent,
            max_chunk_chars=s.synthesis.max_chunk_chars,
            first_chunk_chars=s.synthesis.first_chunk_chars,
            fade_ms=s.audio.fade_ms,
        )
        self.pipeline.start()
        self.link.on_connected = self._on_connected
        self.link.start()
        self.publisher = TelemetryPublisher(
            self.telemetry, s.telemetry.interval, self.gauges, self._publish_telemetry
        )
        self.publisher.start()
        self.health = HealthTick(
            self.notifier, self.checks(), self.notifier.watchdog_interval() or 5.0, self._tick
        )
        self.health.start()

    def _serve(self) -> None:
        assert self.link is not None
        while not self.stop_event.is_set():
            if self.link.wait_connected(0.5):
                break
            self.notifier.status(
                f"waiting for broker {self.settings.broker.host}:{self.settings.broker.port}"
            )
        if not self.stop_event.is_set():
            self.notifier.ready(self.status_line())
            _LOGGER.info("Ready: %s", self.status_line())
        self.stop_event.wait()

    def _on_connected(self) -> None:
        assert self.link is not None
        if self.link.connects > 1:
            self.telemetry.count("reconnects")

    def _stop(self) -> None:
        self.notifier.stopping("stopping: fading out, leaving unplayed requests for the next start")
        for name in ("health", "publisher"):
            component = getattr(self, name, None)
            if component is not None:
                component.stop()
        if self.pipeline is not None:
            self.pipeline.stop(STOP_TIMEOUT_S)
        if self.link is not None:
            self.link.stop()
        if self.output is not None:
            self.output.close()

    def _install_signals(self) -> None:
        def handle(signum: int, _frame: object) -> None:
            _LOGGER.info("Received %s; stopping", signal.Signals(signum).name)
            self.stop_event.set()

        signal.signal(signal.SIGTERM, handle)
        signal.signal(signal.SIGINT, handle)

    # --- health and telemetry ------------------------------------------------------

    def checks(self) -> dict[str, Callable[[], bool]]:
        # Liveness, not health: a broker outage or a missing card is reported in STATUS
        # and telemetry while the components retry; only a dead thread stops the pings.
        return {
            "mqtt": lambda: self.link is not None and self.link.alive,
            "synthesis": lambda: self.pipeline is not None and self.pipeline.alive(),
            "audio": lambda: self.output is not None and self.output.alive,
        }

    def problems(self) -> list[str]:
        """What is wrong now, in words a user can act on (empty when all is well)."""
        found = []
        if self.output is not None and self.output.status != "ok":
            found.append(f"audio {self.output.status}")
        if self.played is not None and self.played.problem is not None:
            found.append(f"state {self.played.problem}")
        return found

    def status_line(self) -> str:
        link = "connected" if self.link and self.link.connected else "disconnected"
        audio = self.output.status if self.output else "not started"
        depth = self.pipeline.depth if self.pipeline else 0
        voice = self.voices.default
        loaded = "loaded" if voice.loaded else "lazy"
        state = (
            f"; state degraded: {self.played.problem}"
            if self.played and self.played.problem
            else ""
        )
        line = f"mqtt {link}; audio {audio}; voice {voice.name} ({loaded}); queue {depth}{state}"
        return f"degraded: {line}" if self.problems() else line

    def _tick(self) -> str:
        """The health tick's status step: retry what failed, say what changed."""
        if self.output is not None:
            self.output.recover()
        if self.played is not None:
            self.played.recover()
        problems = self.problems()
        if problems != self._last_problems and self.link is not None:
            status = "degraded" if problems else "ok"
            if problems:
                _LOGGER.warning("Degraded: %s", "; ".join(problems))
            else:
                _LOGGER.info("Recovered: all is well again")
            self.link.publish(
                self.topics.events, event("status", None, status=status, problems=problems)
            )
        self._last_problems = problems
        return self.status_line()

    def gauges(self) -> dict[str, object]:
        self.telemetry.set_counter("underruns", self.output.underruns if self.output else 0)
        return {
            "device": self.settings.device_id,
            "status": self.status_line(),
            "health": "degraded" if self.problems() else "ok",
            "problems": self.problems(),
            "audio": self.output.status if self.output else None,
            "queue_depth": self.pipeline.depth if self.pipeline else 0,
            "syntheses_in_flight": self.pipeline.in_flight if self.pipeline else 0,
            "mqtt_connected": bool(self.link and self.link.connected),
            "voices": {
                n: {"loaded": v.loaded, "sha256": v.sha256} for n, v in self.voices.all().items()
            },
        }

    def _publish_telemetry(self, snapshot: dict[str, object]) -> None:
        if self.link is not None:
            self.link.publish(self.topics.telemetry, json.dumps(snapshot), qos=0, retain=True)


def _session(payload: bytes) -> str | None:
    try:
        value = json.loads(payload).get("sessionId")
    except (ValueError, AttributeError, RecursionError):
        return None
    return value if isinstance(value, str) else None


__all__ = ["Daemon", "Path", "Priority", "StartupRefused", "time"]
