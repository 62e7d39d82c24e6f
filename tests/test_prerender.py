"""The pre-renderer's passes, step by step, on fake voices: the test is its schedule, so
it takes and runs each step in its own thread and sees every transition in order: a
pass planned, looked through and done; another when woken (also during a pass); paused
by a request and resumed; ended by an unwritable cache, a failed step or a build that
does not load; one step at a time, none while a build loads or once stopped.
(test_cache_serving.py runs it under the real schedule and workers.)"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from edge_tts.cache import phrase_voice
from edge_tts.cache.key import ChunkInput, ChunkKey
from edge_tts.cache.planned import PlannedChunk
from edge_tts.cache.store import CacheStore
from edge_tts.config import default_settings
from edge_tts.speech.prerender import Prerenderer
from edge_tts.speech.routing import Router
from edge_tts.voice.base import SpeechOptions, SynthesisParams
from edge_tts.voice.registry import Voices

from .support.fakes import FakeVoice

pytestmark = pytest.mark.unit

TEXT = "The garage door is open."  # one chunk
WINDOWS = 3
MAX_STEPS = 100  # more than any test's passes take
RENDERING = "rendering 'The garage door is open.'"
PAUSED_LOG = "Pre-render paused for a request: 1 window(s) overlapped it"
RESUMED_LOG = "Pre-render resumed: the daemon is idle"
DONE_LOG = "Phrases pre-rendered: 1 of 1 chunks cached"


class WindowedBuild(FakeVoice):
    """The build that renders the phrases (as FP32 does our INT8 voice's): a chunk in
    WINDOWS windows; `fail_at`: that window raises; `gate`: its load waits for it (it
    takes a while); `load_error`: its load raises."""

    def __init__(self) -> None:
        super().__init__()
        self.windows = 0
        self.fail_at: int | None = None
        self.gate: threading.Event | None = None

    def load(self) -> None:
        if self.gate is not None:
            assert self.gate.wait(30), "the test never let the load finish"
        super().load()

    def stream(
        self, ids: list[int], params: SynthesisParams | None = None, first_frames: int | None = None
    ) -> Iterator[np.ndarray]:
        for n in range(WINDOWS):
            if n == self.fail_at:
                raise RuntimeError("the engine broke")
            self.windows += 1
            yield np.full(1000, 0.1, np.float32)


class Rig:
    """A pre-renderer of `phrases` and the test as its schedule."""

    def __init__(
        self,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        phrases: list[str],
        store_dir: Path | None = None,
    ) -> None:
        self.voice = FakeVoice()  # the default voice: the phrases are planned with it
        self.voice.sha256 = "d" * 64
        self.build = WindowedBuild()
        monkeypatch.setattr(phrase_voice, "open_best_build", lambda *_: self.build)
        settings = default_settings()
        voices = Voices(settings, made={"default": self.voice})
        self.store = CacheStore(store_dir or tmp_path / "cache", 2**20)
        self.store.open()
        self.request_since: float | None = None  # when a request came, if one is here
        self.pre = Prerenderer(
            phrases,
            self.store,
            voices,
            Router(settings.synthesis, voices),
            settings.synthesis,
            lambda: self.request_since,
        )
        self.store.on_change = self.pre.wake  # as the daemon wires them (cache_service.py)
        self.loaded = threading.Event()  # the loader thread said a step can be taken
        self.pre.attach(self._ready)

    def _ready(self) -> None:
        if threading.current_thread().name == "prerender-load":
            self.loaded.set()

    def step(self) -> bool:
        """Take and run the next step; False when none is given."""
        task = self.pre.take()
        if task is None:
            return False
        task.run()
        return True

    def steps(self) -> int:
        """Steps until none is given: how many ran (a pre-renderer that never stops
        taking steps fails here rather than hang)."""
        for count in range(MAX_STEPS):
            if not self.step():
                return count
        raise AssertionError(f"still taking steps after {MAX_STEPS}")

    def through_a_quiet_load(self) -> None:
        """Plan and look up to a build that loads in its own thread, no step taken until
        it is loaded; then let it load."""
        self.build.gate = gate = threading.Event()
        self.loaded.clear()
        try:
            assert self.steps() == 2  # planned; looked at: its build is not loaded
            assert self.pre.state == RENDERING and self.pre.take() is None
        finally:
            gate.set()
        assert self.loaded.wait(30), "the loader never said it was done"
        self.build.gate = None

    def key(self) -> ChunkKey:
        chunk = PlannedChunk(TEXT, self.voice, SpeechOptions(length_scale=1.0, volume=1.0))
        return ChunkInput.of(chunk).key()


@pytest.fixture()
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rig]:
    r = Rig(tmp_path, monkeypatch, [TEXT])
    try:
        yield r
    finally:
        r.pre.stop()


def messages(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(record.getMessage() == text for record in caplog.records)


@pytest.fixture(autouse=True)
def _log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="edge_tts.speech.prerender")


def test_a_pass_plans_looks_renders_window_by_window_and_is_done(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    rig.pre.prepare()  # the build loads here: no step waits for it
    assert rig.pre.state == "waiting for idle"
    assert rig.step() and rig.pre.chunks == 1 and rig.pre.cached == 0  # planned
    assert rig.pre.state == "waiting for idle"
    assert rig.step() and rig.pre.state == RENDERING and rig.build.windows == 0  # looked at
    for window in range(1, WINDOWS + 1):
        assert rig.step() and rig.build.windows == window
    assert not rig.store.contains(rig.key())
    assert rig.step() and rig.pre.state == "done"  # the stream's end: stored
    assert rig.store.contains(rig.key()) and rig.pre.cached == 1
    assert messages(caplog, DONE_LOG) == 1
    assert rig.pre.take() is None  # nothing more until a wake


def test_one_step_at_a_time(rig: Rig) -> None:
    rig.pre.prepare()
    task = rig.pre.take()
    assert task is not None and rig.pre.take() is None  # it runs in a worker now
    task.run()
    assert rig.pre.take() is not None


def test_a_wake_brings_another_pass_that_finds_its_chunks_cached(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    rig.pre.prepare()
    assert rig.steps() == 2 + WINDOWS + 1
    rig.pre.wake()
    rig.pre.wake()  # a pass is wanted already: still one
    assert rig.steps() == 2  # planned; the chunk looked at, cached: done
    assert messages(caplog, DONE_LOG) == 2 and rig.pre.state == "done"
    assert rig.build.windows == WINDOWS


def test_a_wake_during_a_pass_brings_another_after_it(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    rig.pre.prepare()
    assert rig.step() and rig.step() and rig.step()  # planned, looked at, a window
    rig.pre.wake()
    assert rig.steps() == WINDOWS + 2  # the rest of this pass, then a whole one
    assert messages(caplog, DONE_LOG) == 2 and rig.build.windows == WINDOWS


def test_an_entry_lost_after_its_pass_is_rendered_again(rig: Rig) -> None:
    rig.pre.prepare()
    rig.steps()
    rig.store.discard(rig.key().digest)  # a pinned entry lost: the store wakes it
    rig.through_a_quiet_load()  # its build was dropped after the pass
    assert rig.steps() == 1 + WINDOWS + 1
    assert rig.store.contains(rig.key()) and rig.build.windows == 2 * WINDOWS


def test_a_request_during_a_window_pauses_it_and_the_next_step_resumes(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    rig.pre.prepare()
    assert rig.step() and rig.step() and rig.step()
    rig.request_since = time.monotonic()  # came while that window ran
    assert rig.step() and rig.build.windows == 2
    assert rig.pre.state == "paused for requests" and messages(caplog, PAUSED_LOG) == 1
    assert rig.pre.pauses == 1 and rig.pre.max_overlap == 1
    rig.request_since = None  # the schedule gives the next step once it is idle again
    assert rig.step() and rig.build.windows == 3 and messages(caplog, RESUMED_LOG) == 1
    assert rig.pre.state == "paused for requests"  # telemetry: the last thing it said
    assert rig.steps() == 1 and rig.pre.state == "done"
    assert messages(caplog, RESUMED_LOG) == 1 and rig.pre.pauses == 1


def test_a_build_loads_in_its_own_thread_and_no_step_is_taken_meanwhile(rig: Rig) -> None:
    rig.through_a_quiet_load()  # no prepare(): the pass loads the build itself
    assert rig.steps() == 1 + WINDOWS + 1  # looked at again, rendered
    assert rig.pre.state == "done" and rig.build.loaded


def test_a_build_that_does_not_load_ends_the_pass_until_a_wake(rig: Rig) -> None:
    rig.build.load_error = RuntimeError("tampered")
    rig.pre.prepare()
    assert rig.pre.state == "failed (see the log)"
    rig.through_a_quiet_load()  # the first pass tries it again
    assert rig.pre.state == "failed (see the log)" and rig.pre.take() is None
    rig.build.load_error = None
    rig.pre.wake()
    rig.through_a_quiet_load()
    assert rig.steps() == 1 + WINDOWS + 1 and rig.pre.state == "done"


def test_a_failing_step_ends_the_pass_until_a_wake(rig: Rig) -> None:
    rig.pre.prepare()
    rig.build.fail_at = 1
    assert rig.steps() == 2 + 2  # planned, looked at, a window, the window that raises
    assert rig.pre.state == "failed (see the log)" and rig.pre.take() is None
    rig.build.fail_at = None
    rig.pre.wake()
    rig.through_a_quiet_load()  # its build was dropped with the pass
    assert rig.steps() == 1 + WINDOWS + 1 and rig.store.contains(rig.key())


def test_an_unwritable_cache_ends_the_pass_until_it_can_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("not a directory")
    rig = Rig(tmp_path, monkeypatch, [TEXT], store_dir=blocker / "cache")
    try:
        assert rig.store.problem is not None
        rig.pre.prepare()  # nothing loaded: nothing can be stored
        assert rig.steps() == 2 and rig.pre.state == "waiting: the cache cannot be written"
        assert rig.pre.take() is None
        blocker.unlink()
        rig.store.recover()  # writable again: the store wakes it
        assert rig.store.problem is None
        rig.through_a_quiet_load()
        assert rig.steps() == 1 + WINDOWS + 1 and rig.store.contains(rig.key())
    finally:
        rig.pre.stop()


def test_no_phrases_no_pass_until_a_wake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rig = Rig(tmp_path, monkeypatch, [])
    try:
        assert rig.pre.state == "no phrases" and rig.pre.take() is None
        rig.pre.wake()  # the store's: a pass that finds nothing to do
        assert rig.steps() == 1 and rig.pre.state == "done" and rig.pre.chunks == 0
    finally:
        rig.pre.stop()


def test_once_stopped_no_step_is_taken(rig: Rig) -> None:
    rig.pre.prepare()
    assert rig.step() and rig.step()
    task = rig.pre.take()
    assert task is not None
    rig.pre.stop()
    task.run()  # the step under way when it stopped ends
    assert rig.pre.take() is None
    rig.pre.wake()
    assert rig.pre.take() is None and rig.build.windows == 1
