"""The phrase cache's hook and pre-renderer, on fake voices: a hit is the stored audio
through the same post-processing, a chunk wanted twice at once is synthesized once, and
the pre-renderer stops between two windows when a request comes; and, on the real voice,
where the pre-renderer's FP32 build is loaded and that it is dropped after its pass."""

from __future__ import annotations

import gc
import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import numpy as np
import pytest

from edge_tts.cache import serving
from edge_tts.cache.key import ChunkInput, ChunkKey
from edge_tts.cache.planned import PlannedChunk
from edge_tts.cache.store import CacheStore
from edge_tts.config import (
    ConfigError,
    QueueSettings,
    Settings,
    SynthesisSettings,
    default_settings,
    settings_from_mapping,
)
from edge_tts.core.telemetry import Telemetry
from edge_tts.daemon.app import FIGURES
from edge_tts.messages.request import BadRequest, Origin, SayRequest
from edge_tts.mqtt.envelope import Envelope, parse_say
from edge_tts.speech.cache_service import load_phrases
from edge_tts.speech.jobs import Job, StepTask
from edge_tts.speech.pipeline import Pipeline
from edge_tts.speech.prerender import Prerenderer
from edge_tts.speech.routing import Router
from edge_tts.speech.schedule import Schedule, TaskClass
from edge_tts.speech.synthesis import render
from edge_tts.voice import files
from edge_tts.voice.base import SpeechOptions, SynthesisParams
from edge_tts.voice.model import Voice
from edge_tts.voice.registry import Voices

from .support.fakes import FakeOutput, FakeReporter, FakeVoice
from .support.waiting import wait_until

TEXT = "The garage door is open."
OPTIONS = SpeechOptions(length_scale=1.0)


def fake_voice(delay: float = 0.0) -> FakeVoice:
    voice = FakeVoice(delay)
    voice.sha256 = "f" * 64
    return voice


@pytest.fixture()
def telemetry() -> Telemetry:
    return Telemetry(figures=FIGURES)


@pytest.fixture()
def cache(tmp_path: Path, telemetry: Telemetry) -> serving.PhraseCache:
    store = CacheStore(tmp_path / "cache", 2**20)
    store.open()
    return serving.PhraseCache(store, telemetry)


def spoken(
    cache: serving.PhraseCache, voice: FakeVoice, options: SpeechOptions = OPTIONS
) -> tuple[np.ndarray, bool]:
    """One chunk as the pipeline plays it: int16 after the cache and render()."""
    audio = cache.audio(PlannedChunk(TEXT, voice, options), first=True)
    try:
        pcm = list(render(voice, TEXT, options, True, None, audio))
    finally:
        audio.close()
    return np.concatenate(pcm), audio.cached


@pytest.mark.unit
def test_a_hit_is_the_stored_audio_through_the_same_steps(
    cache: serving.PhraseCache, telemetry: Telemetry
) -> None:
    voice = fake_voice()
    synthesized, cached = spoken(cache, voice)
    assert not cached and voice.calls == 1
    played, cached = spoken(cache, voice)
    assert cached and voice.calls == 1, "a hit ran the voice"
    assert np.array_equal(played, synthesized)
    assert np.array_equal(played, np.concatenate(list(render(voice, TEXT, OPTIONS, True))))
    counters = telemetry.snapshot({})["counters"]
    assert isinstance(counters, dict)
    assert (counters["cache_hits"], counters["cache_misses"]) == (1, 1)


@pytest.mark.unit
def test_volume_is_applied_after_the_cache(cache: serving.PhraseCache) -> None:
    voice = fake_voice()
    loud, _ = spoken(cache, voice)
    quiet, cached = spoken(cache, voice, SpeechOptions(length_scale=1.0, volume=0.5))
    assert cached and voice.calls == 1
    assert np.abs(quiet.astype(np.int32) - loud.astype(np.int32) // 2).max() <= 1


@pytest.mark.unit
def test_speed_is_part_of_the_key(cache: serving.PhraseCache) -> None:
    voice = fake_voice()
    spoken(cache, voice)
    _, cached = spoken(cache, voice, SpeechOptions(length_scale=0.8))
    assert not cached and voice.calls == 2


@pytest.mark.unit
def test_a_corrupt_entry_is_synthesized_again_and_replaced(
    cache: serving.PhraseCache, tmp_path: Path
) -> None:
    voice = fake_voice()
    spoken(cache, voice)
    (entry,) = (tmp_path / "cache").glob("*.pcm")
    entry.write_bytes(entry.read_bytes()[:-100])
    _, cached = spoken(cache, voice)
    assert not cached and voice.calls == 2
    assert cache.store.stats()["discarded"] == 1
    _, cached = spoken(cache, voice)
    assert cached and voice.calls == 2


@pytest.mark.unit
def test_the_best_builds_entry_is_preferred(
    cache: serving.PhraseCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    voice = fake_voice()
    monkeypatch.setattr(serving, "best_build_sha256", lambda v: "b" * 64)
    chunk = ChunkInput.of(PlannedChunk(TEXT, voice, OPTIONS))
    cache.store.put(chunk.key(), np.full(5000, 0.1, np.float32))
    cache.store.put(chunk.key("b" * 64), np.full(5000, 0.2, np.float32))
    audio = cache.audio(PlannedChunk(TEXT, voice, OPTIONS), first=False)
    assert audio.cached and np.allclose(np.concatenate(list(audio)), 0.2)


def two_at_once(cache: serving.PhraseCache, voice: FakeVoice, close_first: bool) -> bool:
    """Two workers want the same chunk; the first owns its synthesis. Whether the second
    was served without synthesis."""
    first = cache.audio(PlannedChunk(TEXT, voice, OPTIONS), first=True)
    assert not first.cached
    second: list[serving.ChunkAudio] = []
    waiter = threading.Thread(
        target=lambda: second.append(cache.audio(PlannedChunk(TEXT, voice, OPTIONS), first=False))
    )
    waiter.start()
    if close_first:
        first.close()  # interrupted before any audio: the waiter must not hang
    else:
        list(first)
        first.close()
    waiter.join(10)
    assert not waiter.is_alive()
    result = second[0]
    list(result)
    result.close()
    return result.cached


@pytest.mark.unit
def test_the_same_chunk_wanted_twice_at_once_is_synthesized_once(
    cache: serving.PhraseCache,
) -> None:
    voice = fake_voice(delay=0.2)
    assert two_at_once(cache, voice, close_first=False)
    assert voice.calls == 1


@pytest.mark.unit
def test_the_waiter_gets_the_audio_even_when_nothing_can_be_stored(
    tmp_path: Path, telemetry: Telemetry
) -> None:
    (tmp_path / "state").write_text("not a directory")
    store = CacheStore(tmp_path / "state" / "cache", 2**20)
    store.open()
    voice = fake_voice(delay=0.2)
    assert two_at_once(serving.PhraseCache(store, telemetry), voice, close_first=False)
    assert voice.calls == 1 and store.problem is not None


@pytest.mark.unit
def test_a_synthesis_cut_short_lets_the_waiter_synthesize(cache: serving.PhraseCache) -> None:
    voice = fake_voice()
    assert not two_at_once(cache, voice, close_first=True)
    assert voice.calls == 1  # the waiter's own; the first never ran


class SteppedVoice(FakeVoice):
    """A fake whose windows each wait for a permit: the test decides when one runs."""

    def __init__(self) -> None:
        super().__init__()
        self.sha256 = "e" * 64
        self.permits = threading.Semaphore(0)
        self.windows = 0

    def stream(
        self, ids: list[int], params: SynthesisParams | None = None, first_frames: int | None = None
    ) -> Iterator[np.ndarray]:
        for _ in range(6):
            self.permits.acquire()
            self.windows += 1
            yield np.full(1000, 0.1, np.float32)


class Worker:
    """A synthesis worker of `schedule` that runs producers' steps; a local request's
    tasks are taken and dropped (the request then waits in the queue, keeping it busy)."""

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self.thread = threading.Thread(target=self._run, name="test-worker", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (task := self.schedule.next_task()) is not None:
            try:
                if isinstance(task, StepTask):
                    task.run()
            finally:
                self.schedule.task_done()

    def stop(self) -> None:
        self.schedule.stop()
        self.thread.join(10)
        assert not self.thread.is_alive()


def prerenderer(
    voices: Voices, store: CacheStore, schedule: Schedule, settings: Settings
) -> Prerenderer:
    router = Router(settings.synthesis, voices)
    return Prerenderer([TEXT], store, voices, router, settings.synthesis, schedule.busy_since)


def run(pre: Prerenderer, schedule: Schedule) -> Worker:
    schedule.add(TaskClass.PRERENDER, pre)
    pre.attach(schedule.wake)
    return Worker(schedule)


@pytest.mark.unit
def test_the_pre_renderer_stops_between_windows_for_a_request(tmp_path: Path) -> None:
    voice = SteppedVoice()
    settings = default_settings()
    voices = Voices(settings, made={"default": voice})
    schedule = Schedule(4, FakeOutput(), threading.Event())
    store = CacheStore(tmp_path / "cache", 2**20)
    store.open()
    pre = prerenderer(voices, store, schedule, settings)
    worker = run(pre, schedule)
    try:
        voice.permits.release(2)
        wait_until(lambda: voice.windows == 2, what="two windows")
        request = SayRequest(id="now", text="Now.", key="now", origin=Origin("mqtt"))
        schedule.enqueue(Job(request, [], voice, OPTIONS))
        voice.permits.release(20)  # as many windows as it likes, if it does not stop
        wait_until(lambda: pre.pauses == 1, what="the pre-renderer to pause")
        assert voice.windows <= 3, "it went on decoding after the request came"
        assert pre.max_overlap <= 1 and not store.contains(pre_key(voice))
        schedule.next_job()
        schedule.job_done()  # the request is done: idle again
        wait_until(lambda: pre.state == "done", what="the pre-render to finish")
        assert voice.windows == 6 and store.contains(pre_key(voice))
        assert store.stats()["phrase_entries"] == 1
    finally:
        pre.stop()
        worker.stop()


def fp32_builds() -> int:
    """Live Voice objects of the packaged FP32 model: the pre-renderer's build."""
    model = files.packaged_fp32().model
    return sum(isinstance(o, Voice) and o.files.model == model for o in gc.get_objects())


@pytest.mark.model
def test_the_fp32_build_loads_in_the_starting_thread_and_is_dropped_after_the_pass(
    tmp_path: Path,
) -> None:
    """At start the build loads in the thread that starts the daemon: a loader thread's
    glibc arena kept ~28 MB of the load's freed memory for the daemon's life."""
    settings = default_settings()
    voices = Voices(settings)  # the default voice: our INT8 build, rendered ahead by FP32
    store = CacheStore(tmp_path / "cache", 2**20)
    store.open()
    schedule = Schedule(4, FakeOutput(), threading.Event())
    pre = prerenderer(voices, store, schedule, settings)
    others = fp32_builds()  # another test's FP32 voice, say
    loaders: set[str] = set()  # the threads that load a voice's sessions

    def watch(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call" and frame.f_code is Voice._create_engine.__code__:
            loaders.add(threading.current_thread().name)

    threading.setprofile(watch)  # threads started from now on
    sys.setprofile(watch)  # this one
    try:
        pre.prepare()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    assert loaders == {threading.current_thread().name}
    assert fp32_builds() == others + 1
    worker = run(pre, schedule)
    try:
        wait_until(lambda: pre.state == "done", 300, "the pre-render pass")
        assert store.stats()["phrase_entries"] == 1
        wait_until(lambda: fp32_builds() == others, 60, "the FP32 build to be dropped")
    finally:
        pre.stop()
        worker.stop()


def pre_key(voice: FakeVoice) -> ChunkKey:
    return ChunkInput.of(
        PlannedChunk(TEXT, voice, SpeechOptions(length_scale=1.0, volume=1.0))
    ).key()


def say(text: str, **fields: object) -> SayRequest:
    payload = json.dumps({"text": text, **fields}).encode()
    return parse_say(Envelope("edge-tts/pi/say", payload, time.monotonic()), 1000)


@pytest.mark.unit
def test_a_request_may_opt_out_and_must_say_so_with_a_boolean() -> None:
    assert say(TEXT).cache and not say(TEXT, cache=False).cache
    with pytest.raises(BadRequest, match="'cache' must be a bool"):
        say(TEXT, cache="no")


@pytest.mark.unit
def test_the_pipeline_serves_hits_and_honours_the_opt_out(
    cache: serving.PhraseCache, tmp_path: Path
) -> None:
    voice, output, reporter = fake_voice(), FakeOutput(speedup=1000), FakeReporter()
    pipeline = Pipeline(
        SynthesisSettings(),
        QueueSettings(),
        output=output,
        output_rate=22050,
        reporter=reporter,
        telemetry=Telemetry(figures=FIGURES),
        played=set(),
        cache=cache,
    )
    pipeline.start()
    jobs = []
    try:
        for n, fields in enumerate([{}, {}, {"cache": False}]):
            jobs.append(Job(say(f"Attention. {TEXT}", id=f"r{n}", **fields), [], voice, OPTIONS))
            pipeline.submit(jobs[-1])
            reporter.wait("finished", f"r{n}")
    finally:
        pipeline.stop(2)
    assert [job.cached_chunks for job in jobs] == [0, 2, 0]
    assert voice.calls == 4  # two chunks, then both from the cache, then two again
    assert np.array_equal(output.recorded["r0"], output.recorded["r1"])


@pytest.mark.unit
def test_phrases_come_from_the_list_and_the_file(tmp_path: Path) -> None:
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("# door phrases\nThe garage door is open.\n\n  Low fuel.  \n", "utf-8")
    settings = settings_from_mapping(
        {"cache": {"phrases": ["Low fuel.", "Seat belt."], "phrases_file": str(phrases)}}
    )
    assert load_phrases(settings.cache) == ["Low fuel.", "Seat belt.", "The garage door is open."]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("value", "message"),
    [("Low fuel.", "must be a list of texts"), (["Low fuel.", ""], "item 2 must be non-empty")],
)
def test_a_phrase_list_is_checked(value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=f"cache.phrases: {message}"):
        settings_from_mapping({"cache": {"phrases": value}})
