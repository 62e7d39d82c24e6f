"""Scheduling with fakes of the voice and the output: order, limits, interrupts, acks."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from edge_tts.config import QueueSettings, SynthesisSettings
from edge_tts.core.telemetry import Telemetry
from edge_tts.daemon.app import FIGURES
from edge_tts.messages.request import SayRequest
from edge_tts.mqtt.envelope import Envelope, parse_say
from edge_tts.speech.dedupe import PlayedStore
from edge_tts.speech.jobs import Job
from edge_tts.speech.outcome import Event, Kind
from edge_tts.speech.pipeline import Pipeline
from edge_tts.voice.base import SpeechOptions

from .support.fakes import FakeDelivery, FakeOutput, FakeReporter, FakeVoice
from .support.waiting import wait_until

pytestmark = pytest.mark.unit

LONG = "One two three four five. Six seven eight nine ten. Eleven twelve thirteen fourteen."


def request(text: str, **fields: object) -> SayRequest:
    payload = json.dumps({"text": text, **fields}).encode()
    return parse_say(Envelope("t/pi/say", payload, time.monotonic()), 1000)


class Harness:
    def __init__(self, tmp: Path, queue_size: int = 8, delay: float = 0.0, speedup: float = 20):
        self.voice = FakeVoice(delay)
        self.output = FakeOutput(speedup=speedup)
        self.reporter = FakeReporter()
        self.played = PlayedStore(tmp / "played.json")
        self.pipeline = Pipeline(
            SynthesisSettings(max_concurrent=2),
            QueueSettings(size=queue_size),
            output=self.output,
            output_rate=22050,
            reporter=self.reporter,
            telemetry=Telemetry(figures=FIGURES),
            played=self.played,
        )
        self.pipeline.start()

    def submit(self, text: str, delivery: str = "", **fields: object) -> Job:
        job = Job(
            request(text, **fields),
            [FakeDelivery(delivery)],
            self.voice,
            SpeechOptions(),
        )
        self.pipeline.submit(job)
        return job


@pytest.fixture()
def harness(tmp_path: Path) -> Iterator[Harness]:
    h = Harness(tmp_path)
    yield h
    h.pipeline.stop(2)


def test_plays_in_priority_order(harness: Harness) -> None:
    harness.submit(LONG, id="first")
    harness.reporter.wait("started", "first")
    harness.submit("Low.", id="low", priority="low")
    harness.submit("Normal.", id="normal")
    harness.submit("High.", id="high", priority="high")
    harness.reporter.wait("finished", "low")
    assert harness.reporter.of("finished") == ["first", "high", "normal", "low"]


def test_at_most_two_syntheses_at_once(tmp_path: Path) -> None:
    h = Harness(tmp_path, delay=0.05, speedup=1000)
    for i in range(5):
        h.submit(LONG, id=f"r{i}")
    h.reporter.wait("finished", "r4", timeout=30)
    h.pipeline.stop(2)
    assert h.voice.max_concurrent == 2


def test_first_chunk_has_the_cpu_to_itself(tmp_path: Path) -> None:
    h = Harness(tmp_path, delay=0.1, speedup=1000)
    h.submit(LONG, id="a")
    h.submit(LONG, id="b")
    h.reporter.wait("finished", "b", timeout=30)
    h.pipeline.stop(2)
    first = min(h.voice.intervals)
    others = [i for i in h.voice.intervals if i != first]
    assert all(end <= first[0] or start >= first[1] for start, end in others)
    assert h.voice.max_concurrent == 2  # later chunks still use both workers


def test_critical_interrupts_lower_priority(harness: Harness) -> None:
    harness.output.speedup = 2
    harness.submit(LONG, id="long")
    harness.reporter.wait("started", "long")
    harness.submit("Fire!", id="fire", priority="critical")
    harness.reporter.wait("finished", "fire")
    assert ("interrupted", "long", "fire") in harness.reporter.events
    assert "finished" not in [k for k, i, _ in harness.reporter.events if i == "long"]


def test_stop_fades_out_what_plays_and_the_queue_goes_on(harness: Harness) -> None:
    harness.output.speedup = 2
    assert harness.pipeline.stop_playing("idle-stop") is None  # nothing plays
    harness.submit(LONG, id="long")
    harness.reporter.wait("started", "long")
    harness.submit("Next.", id="next")
    interrupts = harness.output.interrupts
    assert harness.pipeline.stop_playing("ha-stop-button") == "long"
    assert harness.pipeline.stop_playing("again") is None  # already stopping
    harness.reporter.wait("finished", "next")
    assert ("interrupted", "long", "ha-stop-button") in harness.reporter.events
    assert harness.output.interrupts == interrupts + 1  # faded out, as an interrupt is


def test_interrupt_flag_does_not_preempt_higher_priority(harness: Harness) -> None:
    harness.output.speedup = 4
    harness.submit(LONG, id="high", priority="high")
    harness.reporter.wait("started", "high")
    harness.submit("Me first.", id="pushy", interrupt=True)
    harness.reporter.wait("finished", "pushy", timeout=20)
    assert harness.reporter.of("finished") == ["high", "pushy"]


def test_queue_full_rejects_without_blocking(tmp_path: Path) -> None:
    h = Harness(tmp_path, queue_size=1, speedup=0.25)  # "playing" lasts seconds
    h.submit(LONG, id="playing")
    h.reporter.wait("started", "playing")
    h.submit("Wait.", id="waiting")
    h.submit("No room.", id="no-room")
    # Not blocking: submit() returned with the rejection while "playing" still plays (a
    # blocking submit would have waited for it to finish and make room).
    assert "playing" not in h.reporter.of("finished")
    assert ("rejected", "no-room", "queue full (1 requests waiting)") in h.reporter.events
    h.pipeline.stop(2)


def test_already_played_redelivery_is_acked_not_played(harness: Harness) -> None:
    harness.submit("Once.", id="once")
    harness.reporter.wait("finished", "once")
    again = harness.submit("Once.", delivery="second-copy", id="once")
    assert again.deliveries[0] in harness.reporter.acked
    assert harness.reporter.of("finished") == ["once"]
    assert harness.reporter.of("duplicate") == ["once"]


def _delivery(text: str, packet_id: int, redelivered: bool) -> SayRequest:
    """A message without a sender id, as the broker delivers it at QoS 1."""
    env = Envelope("t/pi/say", text.encode(), time.monotonic(), packet_id=packet_id)
    return parse_say(dataclasses.replace(env, redelivered=redelivered), 1000)


def test_a_reused_packet_id_does_not_make_a_new_message_a_duplicate(tmp_path: Path) -> None:
    """Played long ago: "Dinner." with packet id 5. The broker, having lost its session,
    numbers from 1 again and delivers a new "Dinner." with packet id 5; the daemon dies
    before playing it. The broker's redelivery after the restart is that new message."""
    old = _delivery("Dinner.", 5, redelivered=False)
    PlayedStore(tmp_path / "played.json").add(old.key)
    first = Harness(tmp_path, speedup=0.25)
    first.submit(LONG, id="playing")  # holds the output, so the new message waits
    first.reporter.wait("started", "playing")
    new = Job(_delivery("Dinner.", 5, redelivered=False), [FakeDelivery("new")],
              first.voice, SpeechOptions())  # fmt: skip
    first.pipeline.submit(new)
    assert new.request.key == old.key  # what the collision is
    first.pipeline.stop(2)  # "dies" before playing it: unacknowledged
    assert FakeDelivery("new") not in first.reporter.acked

    after = Harness(tmp_path)
    try:
        again = Job(_delivery("Dinner.", 5, redelivered=True), [FakeDelivery("again")],
                    after.voice, SpeechOptions())  # fmt: skip
        after.pipeline.submit(again)
        after.reporter.wait("finished", again.request.id)
        assert after.reporter.of("duplicate") == []
    finally:
        after.pipeline.stop(2)


class RecordedDelivery:
    def __init__(self) -> None:
        self.acks = 0

    def ack(self) -> None:
        self.acks += 1


def test_a_copy_that_comes_while_the_answer_goes_out_is_acknowledged(harness: Harness) -> None:
    """The broker's copy of a request arrives after the request's final event acknowledged
    its deliveries but before the player lets go of it: it must not ride on acks that
    already went out (it would wait for the next reconnect, unacknowledged)."""
    harness.output.speedup = 2
    copy = RecordedDelivery()
    answer = harness.reporter.on_event

    def interrupted_then_a_copy(event: Event) -> None:
        answer(event)  # the final event and its acks are out; the job still plays
        if event.kind is not Kind.INTERRUPTED:
            return
        payload = json.dumps({"text": LONG, "id": "long"}).encode()
        env = Envelope("t/pi/say", payload, time.monotonic(), redelivered=True, packet_id=7)
        harness.pipeline.submit(Job(parse_say(env, 1000), [copy], harness.voice, SpeechOptions()))

    harness.reporter.on_event = interrupted_then_a_copy  # type: ignore[method-assign]
    harness.submit(LONG, id="long")
    harness.reporter.wait("started", "long")
    harness.pipeline.stop_playing("stop-button")
    harness.reporter.wait("interrupted", "long")
    assert copy.acks == 1
    assert [kind for kind, rid, _ in harness.reporter.events if rid == "long"] == [
        "queued", "started", "interrupted"
    ]  # fmt: skip


def test_a_copy_that_comes_as_the_request_finishes_gets_no_event_of_its_own(
    harness: Harness,
) -> None:
    """The request's key is in the played store a moment before its `finished` goes out:
    the broker's copy arriving then is the request still held, acknowledged with its
    final event, not a second final event (`duplicate`) for the same request."""
    copy = RecordedDelivery()
    played = harness.pipeline.played
    add = played.add

    def added_then_a_copy(key: str) -> None:
        add(key)  # `finished` is still to go out
        payload = json.dumps({"text": "Twice.", "id": "twice"}).encode()
        env = Envelope("t/pi/say", payload, time.monotonic(), redelivered=True, packet_id=9)
        harness.pipeline.submit(Job(parse_say(env, 1000), [copy], harness.voice, SpeechOptions()))

    played.add = added_then_a_copy  # type: ignore[method-assign]
    harness.submit("Twice.", id="twice")
    harness.reporter.wait("finished", "twice")
    assert [kind for kind, rid, _ in harness.reporter.events if rid == "twice"] == [
        "queued", "started", "finished"
    ]  # fmt: skip
    assert copy.acks == 1


def test_redelivery_while_queued_is_merged(harness: Harness) -> None:
    harness.output.speedup = 2
    harness.submit(LONG, id="long")
    harness.reporter.wait("started", "long")
    harness.submit("Twice.", delivery="copy-1", id="twice")
    harness.submit("Twice.", delivery="copy-2", id="twice")
    harness.reporter.wait("finished", "twice", timeout=20)
    assert harness.reporter.of("finished").count("twice") == 1
    assert {FakeDelivery("copy-1"), FakeDelivery("copy-2")} <= set(harness.reporter.acked)


def test_expired_request_is_not_played(harness: Harness) -> None:
    harness.output.speedup = 2
    harness.submit(LONG, id="long")
    harness.reporter.wait("started", "long")
    harness.submit("Too late.", id="late", ttl=0.2)
    harness.reporter.wait("expired", "late", timeout=20)
    assert "late" not in harness.reporter.of("finished")


def test_audio_unavailable_rejects_with_reason(harness: Harness) -> None:
    harness.output.available = False
    harness.submit("Hello.", id="nodev")
    harness.reporter.wait("rejected", "nodev")
    assert any("unplugged" in d for k, i, d in harness.reporter.events if i == "nodev")


def test_unspeakable_text_is_rejected(harness: Harness) -> None:
    harness.submit("?!", id="empty")
    harness.reporter.wait("rejected", "empty")
    # Rejected for what it is, not by an internal error on the way.
    reasons = [d for k, i, d in harness.reporter.events if k == "rejected" and i == "empty"]
    assert len(reasons) == 1 and reasons[0].startswith("text has nothing speakable"), reasons
    assert "internal error" not in reasons[0]
    assert "empty" not in harness.reporter.of("finished")


def test_stop_leaves_unplayed_requests_unacknowledged(tmp_path: Path) -> None:
    h = Harness(tmp_path, speedup=1)
    h.submit(LONG, delivery="playing-delivery", id="playing")
    h.submit("Queued.", delivery="queued-delivery", id="queued")
    h.reporter.wait("started", "playing")
    h.pipeline.stop(2)
    assert h.reporter.acked == []
    assert "playing" not in PlayedStore(tmp_path / "played.json")


def test_played_store_survives_restart_and_is_bounded(tmp_path: Path) -> None:
    store = PlayedStore(tmp_path / "p.json", capacity=3)
    for key in "abcd":
        store.add(key)
    again = PlayedStore(tmp_path / "p.json", capacity=3)
    assert "a" not in again and all(k in again for k in "bcd")


def test_stop_defers_every_unplayed_request_with_an_event(tmp_path: Path) -> None:
    h = Harness(tmp_path, speedup=1)
    h.submit(LONG, id="playing")
    h.submit("Queued.", id="queued")
    h.reporter.wait("started", "playing")
    h.pipeline.stop(2)
    assert sorted(h.reporter.of("deferred")) == ["playing", "queued"]
    assert not [k for k, i, _ in h.reporter.events if k in ("finished", "rejected")]
    h.submit("After the stop.", id="late")  # the broker is still connected for a moment
    assert h.reporter.of("deferred")[-1] == "late"


def test_the_brokers_copy_of_a_queued_message_without_an_id_rides_on_it(
    harness: Harness,
) -> None:
    harness.output.speedup = 2
    harness.submit(LONG, id="long")
    harness.reporter.wait("started", "long")
    first = Envelope("t/pi/say", b"Doorbell.", time.monotonic(), packet_id=5)
    copy = Envelope("t/pi/say", b"Doorbell.", time.monotonic(), packet_id=5, redelivered=True)
    other = Envelope("t/pi/say", b"Doorbell.", time.monotonic(), packet_id=6)
    jobs = [
        Job(parse_say(env, 1000), [FakeDelivery(name)], harness.voice, SpeechOptions())
        for env, name in ((first, "first"), (copy, "copy"), (other, "other"))
    ]
    for job in jobs:
        harness.pipeline.submit(job)
    harness.reporter.wait("finished", jobs[2].request.id, timeout=30)
    # The copy (after a reconnect) got no event of its own and is acknowledged with the
    # first; the same text in another message is another request, with another id.
    assert harness.reporter.of("finished") == ["long", jobs[0].request.id, jobs[2].request.id]
    assert not harness.reporter.of("duplicate")
    assert {FakeDelivery(name) for name in ("first", "copy", "other")} <= set(
        harness.reporter.acked
    )


def test_a_repeat_while_queued_is_answered_at_once(harness: Harness) -> None:
    harness.output.speedup = 2
    harness.submit(LONG, id="long")
    harness.reporter.wait("started", "long")
    harness.submit("Twice.", id="twice")
    harness.submit("Twice.", id="twice")
    assert ("duplicate", "twice", "already queued") in harness.reporter.events


def test_a_worker_that_fails_on_one_job_goes_on(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = {"n": 0}
    real = harness.voice.ids

    def ids_failing_once(text: str) -> list[list[int]]:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("a bug that one request triggers")
        return real(text)

    monkeypatch.setattr(harness.voice, "ids", ids_failing_once)
    harness.submit("First.", id="bad")
    harness.reporter.wait("rejected", "bad")
    harness.submit("Second.", id="good")
    harness.reporter.wait("finished", "good")
    assert harness.pipeline.alive()


def test_a_failing_reporter_does_not_kill_the_playback_thread(harness: Harness) -> None:
    real_on_event = harness.reporter.on_event

    def started_once_failing(event: Event) -> None:
        if event.kind is not Kind.STARTED:
            return real_on_event(event)
        harness.reporter.on_event = real_on_event  # type: ignore[method-assign]
        raise ValueError("Publish topic cannot contain wildcards")

    harness.reporter.on_event = started_once_failing  # type: ignore[method-assign]
    harness.submit("First.", id="odd")
    harness.reporter.wait("rejected", "odd")
    harness.submit("Second.", id="next")
    harness.reporter.wait("finished", "next")
    assert harness.pipeline.alive()


def test_played_store_degrades_when_it_cannot_save_and_recovers(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the state directory should be")
    store = PlayedStore(blocker / "played.json")
    store.add("a")
    assert store.problem is not None and "a" in store
    blocker.unlink()
    store.recover()
    assert store.problem is None
    assert "a" in PlayedStore(blocker / "played.json")


def test_a_request_interrupted_before_it_was_planned_does_not_stall_the_queue(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by bench/fuzz.py: the interrupted job was never planned (workers skip
    # interrupted jobs) while playback waited for its plan: nothing played again.
    gate = threading.Event()
    schedule = harness.pipeline.schedule
    pick = schedule._pick_task
    monkeypatch.setattr(schedule, "_pick_task", lambda: pick() if gate.is_set() else None)
    harness.submit(LONG, id="unplanned")
    wait_until(lambda: schedule.playing is not None, what="playback to take it")
    harness.submit("Alarm.", id="alarm", priority="critical")
    gate.set()
    harness.reporter.wait("finished", "alarm", timeout=30)
    assert ("interrupted", "unplanned", "alarm") in harness.reporter.events
