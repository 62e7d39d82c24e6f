"""The engine's fan-out counts each request's fate, and measures each finished one, once,
whichever door it came in by and whichever listeners hear it."""

from __future__ import annotations

import json
import time
from typing import cast

import pytest

from edge_tts.core.telemetry import HistogramKey, Telemetry
from edge_tts.daemon.app import FIGURES
from edge_tts.http.metrics import exposition, registry_for
from edge_tts.http.tracker import RequestTracker
from edge_tts.messages.request import Origin, SayRequest
from edge_tts.messages.topics import Topics
from edge_tts.mqtt.envelope import Envelope, parse_say
from edge_tts.mqtt.link import MqttLink
from edge_tts.mqtt.reporter import MqttReporter
from edge_tts.speech.jobs import Job
from edge_tts.speech.listeners import Listener, Reporters
from edge_tts.speech.outcome import Event, Kind
from edge_tts.voice.base import SpeechOptions

from .support.fakes import FakeVoice

pytestmark = pytest.mark.unit

# Each kind once: the counters as the telemetry document and /metrics name them.
ONE_OF_EACH = {
    "received": 1,
    "played": 1,
    "rejected": 1,
    "expired": 1,
    "interrupted": 1,
    "duplicates": 1,
    "deferred": 1,
}
_DETAILS: dict[Kind, dict[str, object]] = {
    Kind.QUEUED: {"position": 0},
    Kind.INTERRUPTED: {"by": "stop-button"},
    Kind.REJECTED: {"reason": "why"},
    Kind.DUPLICATE: {"reason": "why"},
}


def job(request_id: str) -> Job:
    payload = json.dumps({"text": "Hello.", "id": request_id}).encode()
    request = parse_say(Envelope("t/pi/say", payload, time.monotonic()), 1000)
    return Job(request, [], FakeVoice(), SpeechOptions())


def every_kind() -> list[Event]:
    return [Event(kind, job(kind.value), **_DETAILS.get(kind, {})) for kind in Kind]  # type: ignore[arg-type]


def event_counters(telemetry: Telemetry) -> dict[str, int]:
    return {name: n for name, n in telemetry.counters().items() if name in ONE_OF_EACH}


class FakeLink:
    """What the MQTT reporter publishes through, recorded instead of sent."""

    def __init__(self) -> None:
        self.published: list[str] = []

    def publish(self, topic: str, payload: object, **_: object) -> None:
        self.published.append(topic)


def mqtt_reporter(telemetry: Telemetry) -> tuple[MqttReporter, FakeLink]:
    link = FakeLink()
    reporter = MqttReporter(cast(MqttLink, link), Topics("t", "pi"), telemetry)
    return reporter, link


class Raising(Listener):
    def on_event(self, event: Event) -> None:
        raise RuntimeError("the primary listener's bug")


def reported(primary: Listener, listeners: list[Listener] | None = None) -> Telemetry:
    """The engine's telemetry after one event of each kind through `Reporters`."""
    telemetry = Telemetry(figures=FIGURES)
    reporters = Reporters(primary, listeners or [], telemetry=telemetry)
    for event in every_kind():
        reporters.report(event)
    return telemetry


def test_a_non_mqtt_primary_gets_every_event_counted_once() -> None:
    telemetry = reported(Listener(), [RequestTracker(), Listener()])
    assert event_counters(telemetry) == ONE_OF_EACH


def test_an_event_is_counted_once_when_the_primary_listener_raises() -> None:
    telemetry = Telemetry(figures=FIGURES)
    reporters = Reporters(Raising(), telemetry=telemetry)
    for event in every_kind():
        with pytest.raises(RuntimeError):
            reporters.report(event)  # the engine handles it where it reports
    assert event_counters(telemetry) == ONE_OF_EACH


def test_the_mqtt_reporter_publishes_but_does_not_count() -> None:
    telemetry = Telemetry(figures=FIGURES)
    reporter, link = mqtt_reporter(telemetry)
    for event in every_kind():
        reporter.on_event(event)
    assert len(link.published) == len(Kind)  # each event on the events topic
    assert set(event_counters(telemetry).values()) == {0}


def test_the_daemon_fan_out_counts_once_with_the_mqtt_reporter_first() -> None:
    telemetry = Telemetry(figures=FIGURES)
    reporter, _ = mqtt_reporter(telemetry)
    reporters = Reporters(reporter, [RequestTracker()], telemetry=telemetry)
    for event in every_kind():
        reporters.report(event)
    assert event_counters(telemetry) == ONE_OF_EACH


def test_metrics_and_the_telemetry_document_carry_the_counts_by_their_names() -> None:
    telemetry = reported(Listener())
    published = telemetry.snapshot({})["counters"]  # the MQTT telemetry topic's
    assert isinstance(published, dict) and published.items() >= ONE_OF_EACH.items()
    text = exposition(registry_for(telemetry, dict)).decode()
    for name in ONE_OF_EACH:
        assert f"edge_tts_{name}_total 1.0" in text.splitlines()


# A finished request's figures as its stamps make them: 250 ms to first audio, RTF 0.25.
TTFA_MS, RTF = 250.0, 0.25


def finished(door: str) -> Event:
    """A request of `door` that played to its end."""
    request = SayRequest(id=door, text="Hello.", key=door, origin=Origin(door))
    done = Job(request, [], FakeVoice(), SpeechOptions())
    assert done.timing.received_at is not None
    done.timing.first_audio(done.timing.received_at + TTFA_MS / 1000)
    done.timing.audio_seconds, done.timing.synth_seconds = 2.0, 2.0 * RTF
    return Event(Kind.FINISHED, done)


def samples(telemetry: Telemetry) -> dict[HistogramKey, float]:
    """The sum of every latency figure's samples by (metric, door), what /metrics exposes
    (the telemetry topic's windows take the same samples), the empty ones left out."""
    return {key: total for key, (_, total, n) in telemetry.histograms().items() if n}


def counts(telemetry: Telemetry) -> set[int]:
    return {n for _, _, n in telemetry.histograms().values() if n}


@pytest.mark.parametrize("door", ["http_say", "mqtt"])
def test_a_non_mqtt_primary_gets_a_finished_request_measured_once_by_its_door(
    door: str,
) -> None:
    telemetry = Telemetry(figures=FIGURES)
    reporters = Reporters(Listener(), [RequestTracker(), Listener()], telemetry=telemetry)
    reporters.report(finished(door))
    # By its door, and in `latency` too, as it played here; queue_wait_ms is playback's.
    figures = {"time_to_first_audio_ms": TTFA_MS, "real_time_factor": RTF}
    expected = {(m, d): v for m, v in figures.items() for d in (door, None)}
    assert samples(telemetry) == pytest.approx(expected | {("synthesis_ms", None): 0.0})
    assert counts(telemetry) == {1}


def test_the_mqtt_reporter_measures_nothing_itself() -> None:
    telemetry = Telemetry(figures=FIGURES)
    reporter, link = mqtt_reporter(telemetry)
    reporter.on_event(finished("mqtt"))
    assert len(link.published) == 1  # the finished event, published
    assert samples(telemetry) == {}


def test_the_daemon_fan_out_measures_once_with_the_mqtt_reporter_first() -> None:
    telemetry = Telemetry(figures=FIGURES)
    reporter, _ = mqtt_reporter(telemetry)
    Reporters(reporter, [RequestTracker()], telemetry=telemetry).report(finished("mqtt"))
    assert ("time_to_first_audio_ms", "mqtt") in samples(telemetry)
    assert counts(telemetry) == {1}


def test_only_a_finished_request_is_measured() -> None:
    telemetry = Telemetry(figures=FIGURES)
    reporters = Reporters(Listener(), telemetry=telemetry)
    for event in every_kind():
        if event.kind is not Kind.FINISHED:
            reporters.report(event)
    assert samples(telemetry) == {}


def test_metrics_and_the_telemetry_document_carry_the_figures_by_their_names() -> None:
    telemetry = Telemetry(figures=FIGURES)
    Reporters(Listener(), telemetry=telemetry).report(finished("http_say"))
    document = json.loads(json.dumps(telemetry.snapshot({})))  # the MQTT telemetry topic's
    assert document["latency_by_door"]["http_say"]["real_time_factor"]["p50"] == RTF
    assert document["latency"]["time_to_first_audio_ms"]["count"] == 1  # it played here
    assert document["latency"]["synthesis_ms"]["count"] == 1
    lines = exposition(registry_for(telemetry, dict)).decode().splitlines()
    assert 'edge_tts_time_to_first_audio_seconds_count{door="http_say"} 1.0' in lines
    assert 'edge_tts_real_time_factor_sum{door="http_say"} 0.25' in lines
    assert "edge_tts_synthesis_seconds_count 1.0" in lines


class Heard(Listener):
    def __init__(self) -> None:
        self.events: list[Event] = []

    def on_event(self, event: Event) -> None:
        self.events.append(event)


def test_a_figure_that_cannot_be_recorded_still_lets_the_final_event_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A door no FIGURES declares is a bug to log, not a request whose caller waits forever
    (its job is concluded before it is recorded)."""
    primary = Heard()
    reporters = Reporters(primary, telemetry=Telemetry(figures=FIGURES))
    event = finished("a-door-nobody-declared")
    reporters.report(event)
    assert primary.events == [event]
    assert "Recording finished of" in caplog.text
