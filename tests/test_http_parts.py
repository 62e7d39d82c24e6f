"""The HTTP door's own parts without a daemon: the /invoke pool's bounds, the request
tracker's bounds and waiters, the reporters' fan-out, the WAV header, the settings."""

from __future__ import annotations

import asyncio
import io
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edge_tts.config import ConfigError, settings_from_mapping
from edge_tts.core.telemetry import Telemetry
from edge_tts.daemon.app import FIGURES
from edge_tts.http.audio_out import wav_bytes, wav_header
from edge_tts.http.pool import AudioPool, PoolFull, TooLarge
from edge_tts.http.say_api import ORIGIN
from edge_tts.http.tracker import RequestTracker
from edge_tts.messages.events import FINAL_KINDS
from edge_tts.messages.request import SayRequest
from edge_tts.speech.jobs import Job
from edge_tts.speech.listeners import Listener, Reporters
from edge_tts.speech.outcome import Event, Kind
from edge_tts.voice.base import SpeechOptions

from .support.fakes import FakeVoice


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.unit
def test_the_pool_is_bounded_in_entries_bytes_and_age() -> None:
    clock = Clock()
    pool = AudioPool(max_entries=2, max_bytes=100, ttl=10, clock=clock)
    first = pool.put(pool.reserve(40), b"a" * 40)
    making = pool.reserve(10)
    with pytest.raises(PoolFull) as full:
        pool.reserve(10)  # one stored, one being made: no third place
    assert full.value.retry_after == 10
    second = pool.put(making, b"b" * 40)
    assert pool.take(first) == b"a" * 40 and pool.take(first) is None  # once
    with pytest.raises(PoolFull):
        pool.put(pool.reserve(10), b"c" * 61)  # 40 + 61 bytes would exceed 100; released
    clock.now = 10.0
    assert pool.take(second) is None  # expired
    assert pool.gauges() == {"entries": 0, "bytes": 0, "reserved": 0}
    pool.reserve(50)
    pool.reserve(50)  # both places free again


@pytest.mark.unit
def test_concurrent_reservations_cannot_overshoot_the_pool() -> None:
    pool = AudioPool(max_entries=10, max_bytes=100, ttl=10, clock=Clock())
    a, b = pool.reserve(40), pool.reserve(40)
    with pytest.raises(PoolFull):
        pool.reserve(30)  # 80 reserved: 30 more would pass 100 before any audio is stored
    pool.grow(a, 55)
    with pytest.raises(PoolFull):
        pool.grow(b, 50)  # 55 + 50: the second one's audio has no room; its place stays
    assert pool.gauges()["reserved"] == 95
    with pytest.raises(TooLarge):
        pool.grow(a, 101)  # can never fit, whatever is freed
    pool.release(a)
    pool.grow(b, 100)  # the whole pool, now that the first is gone
    assert pool.gauges()["reserved"] == 100


@pytest.mark.unit
def test_a_full_pool_says_when_there_will_be_room() -> None:
    clock = Clock()
    pool = AudioPool(max_entries=10, max_bytes=100, ttl=60, clock=clock)
    pool.put(pool.reserve(30), b"a" * 30)
    clock.now = 20.0
    pool.put(pool.reserve(30), b"b" * 30)
    clock.now = 30.0
    pool.put(pool.reserve(30), b"c" * 30)
    with pytest.raises(PoolFull) as full:
        pool.reserve(50)  # room only once the first two have expired, at 60 and 80
    assert full.value.retry_after == 50
    making = pool.reserve(10)
    assert making.size == 10
    with pytest.raises(PoolFull) as full:
        pool.reserve(100)  # the one being made holds room no expiry frees: a ttl at most
    assert full.value.retry_after == 60


def job(request_id: str, text: str = "Hello.") -> Job:
    request = SayRequest(id=request_id, text=text, key=f"{request_id}#{text}", origin=ORIGIN)
    return Job(request=request, deliveries=[], voice=FakeVoice(), options=SpeechOptions())


@pytest.mark.unit
def test_the_tracker_keeps_the_latest_event_of_a_bounded_number_of_requests() -> None:
    tracker = RequestTracker(max_requests=2)
    tracker.on_event(Event(Kind.QUEUED, job("a"), position=0))
    found = tracker.get("a")
    assert found is not None and found[0]["event"] == "queued" and not found[1]
    tracker.on_event(Event(Kind.REJECTED, job("a"), reason="queue full"))
    found = tracker.get("a")
    assert found is not None and found[0]["reason"] == "queue full" and found[1]
    tracker.on_event(Event(Kind.QUEUED, job("b"), position=0))
    tracker.on_event(Event(Kind.QUEUED, job("c"), position=1))
    assert tracker.get("a") is None  # the oldest went
    assert tracker.get("c") is not None


@pytest.mark.unit
def test_a_waiter_wakes_at_the_final_event_from_another_thread() -> None:
    tracker = RequestTracker()
    tracker.on_event(Event(Kind.QUEUED, job("a"), position=0))

    async def wait() -> Any:
        waiting = asyncio.create_task(tracker.wait_final("a", 30))
        await asyncio.sleep(0)  # one turn of the loop (not a wait for time): it registers
        await asyncio.to_thread(tracker.on_event, Event(Kind.EXPIRED, job("a")))
        return await waiting

    event, final = asyncio.run(wait())
    assert event["event"] == "expired" and final


class Broken(Listener):
    def on_finished(self, event: Event) -> None:
        raise RuntimeError("a listener's bug")


class Counting(Listener):
    def __init__(self) -> None:
        self.finished_ids: list[str] = []

    def on_finished(self, event: Event) -> None:
        self.finished_ids.append(event.job.request.id)


@pytest.mark.unit
def test_a_failing_listener_reaches_neither_the_engine_nor_the_others() -> None:
    primary, after = Counting(), Counting()
    reporters = Reporters(primary, [Broken(), after], telemetry=Telemetry(figures=FIGURES))
    reporters.report(Event(Kind.FINISHED, job("a")))
    reporters.report(Event(Kind.QUEUED, job("b"), position=0))  # defaults: nothing happens
    assert primary.finished_ids == ["a"] and after.finished_ids == ["a"]


@pytest.mark.unit
def test_every_kind_has_its_hook_and_only_a_final_one_concludes_the_job() -> None:
    details = {Kind.QUEUED: {"position": 0}, Kind.INTERRUPTED: {"by": "stop-button"}}
    details |= {kind: {"reason": "why"} for kind in (Kind.REJECTED, Kind.DUPLICATE)}
    # The defaults alone: every kind has its no-op.
    reporters = Reporters(Listener(), telemetry=Telemetry(figures=FIGURES))
    for kind in Kind:
        each = job(kind.value)
        reporters.report(Event(kind, each, **details.get(kind, {})))  # type: ignore[arg-type]
        assert each.concluded == (kind.value in FINAL_KINDS), kind
    with pytest.raises(ValueError, match="position"):
        Event(Kind.QUEUED, job("a"))  # a kind's detail is not left out


@pytest.mark.unit
def test_wav_headers_whole_and_streamed() -> None:
    pcm = np.arange(-50, 50, dtype=np.int16)
    with wave.open(io.BytesIO(wav_bytes(pcm, 16000))) as wav:
        assert (wav.getframerate(), wav.getnframes()) == (16000, 100)
        assert np.array_equal(np.frombuffer(wav.readframes(100), "<i2"), pcm)
    streamed = wav_header(22050) + pcm.astype("<i2").tobytes()
    with wave.open(io.BytesIO(streamed)) as wav:
        assert np.array_equal(np.frombuffer(wav.readframes(wav.getnframes()), "<i2"), pcm)


@pytest.mark.unit
def test_http_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CREDENTIALS_DIRECTORY", raising=False)
    lan = settings_from_mapping({"http": {"uri": "tcp://0.0.0.0:8380"}}).http
    assert not lan.loopback and lan.token() is None
    for uri in ("tcp://127.0.0.1:8380", "tcp://[::1]:8380", "tcp://localhost:1", "unix:///x"):
        assert settings_from_mapping({"http": {"uri": uri}}).http.loopback, uri
    (tmp_path / "http-token").write_text("s3cret-s3cret-s3cret\n")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    assert lan.token() == "s3cret-s3cret-s3cret"  # the systemd credential
    short = tmp_path / "short"
    short.write_text("abc")
    with pytest.raises(ConfigError, match="at least 16"):
        settings_from_mapping({"http": {"token_file": str(short)}}).http.token()
    with pytest.raises(ConfigError, match="cors_origins"):
        settings_from_mapping({"http": {"cors_origins": ["example.com"]}})


@pytest.mark.daemon
def test_a_daemon_without_http_does_not_load_aiohttp() -> None:
    """aiohttp and prometheus_client are ~12 MB of RSS: only a daemon that serves HTTP
    carries them (a Pi's daemon without `http.uri` must stay as small as before)."""
    import subprocess
    import sys

    probe = (
        "import sys, edge_tts.daemon.app, edge_tts.cli.daemon; "
        "print(sorted(m for m in ('aiohttp', 'prometheus_client') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
