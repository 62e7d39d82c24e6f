"""The configured phrases, rendered into the cache while the daemon has nothing to do.

The pre-renderer is the schedule's producer of `PRERENDER` tasks (speech/schedule.py):
a free synthesis worker takes its next step only when nothing is queued, playing or
running. A phrase is planned like a request with that text (same voices, chunks and
options), so its chunks have the keys a request's will look up; each chunk missing from
the cache is rendered with the voice's best build (phrase_voice.py: FP32 for our INT8
default voice) and stored pinned. One step is one step of the engine (the encoder run, or one
decoder window), so a request that comes shares the CPU with at most the one window that
was running when it arrived; `pauses` and `max_overlap_windows` count it, and tests hold
it to one. After a pass it waits until the store says a pinned entry was lost (a corrupt
one discarded) or the directory can be written again (`wake`). What it does next is one
`_Phase`, which each step hands on.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from ..cache.key import ChunkInput, ChunkKey
from ..cache.phrase_voice import PhraseBuilds, best_build_sha256
from ..cache.store import CacheStore
from ..config import SynthesisSettings
from ..text import EmptyTextError
from ..voice.chunk_audio import voice_audio
from ..voice.model import release_free_memory
from ..voice.registry import Voices
from .jobs import StepTask
from .routing import Router

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Item:
    chunk: ChunkInput
    key: ChunkKey  # what it is stored under: the best build's key
    own: ChunkKey  # the voice's own key: an entry there is superseded once this one lands


@dataclass
class _Rendering:
    """The chunk being rendered: its engine steps so far."""

    item: _Item
    stream: Iterator[np.ndarray]
    pieces: list[np.ndarray] = field(default_factory=list)


class _Phase(enum.Enum):
    """What the pre-renderer does next: the one value `take`, its steps and its loader go
    by. A step or the loader holds the turn (STEPPING, LOADING), and with it the pass's
    chunks, and hands it on with the phase that follows (`_move`); `wake` and `stop` are
    the other moves. A pass: WANTED, it is planned; LOOKING at each chunk in turn: one
    cached, the next; one missing, RENDERING it window by window (PAUSED after a window a
    request came during), or LOADING its build first; after the last chunk, or when the
    cache cannot be written or a step fails, IDLE (WANTED if a wake came since the plan)."""

    IDLE = "idle"  # no pass under way or wanted: a wake wants one
    WANTED = "wanted"  # a pass is to run: its first step plans the phrases
    LOOKING = "looking"  # the next step looks at the pass's next chunk
    RENDERING = "rendering"  # the next step runs the next window of the chunk (`_chunk`)
    PAUSED = "paused"  # the same, and says it resumed: a request came during the last
    LOADING = "loading"  # the next chunk's build loads in a thread of its own: no step
    STEPPING = "stepping"  # a worker runs a step: no other until it says what follows
    STOPPED = "stopped"  # the daemon stops: no step again


_STEP_PHASES = frozenset({_Phase.WANTED, _Phase.LOOKING, _Phase.RENDERING, _Phase.PAUSED})


class Prerenderer:
    def __init__(
        self,
        phrases: list[str],
        store: CacheStore,
        voices: Voices,
        router: Router,
        synthesis: SynthesisSettings,
        busy_since: Callable[[], float | None],
    ) -> None:
        self.phrases = phrases
        self._store = store
        self._voices = voices
        self._router = router
        self._synthesis = synthesis
        self._busy_since = busy_since  # the schedule's: when a request came, if one is here
        self._ready: Callable[[], None] = lambda: None  # the schedule's wake, once attached
        self._lock = threading.Lock()
        self._phase = _Phase.WANTED if phrases else _Phase.IDLE
        self._stale = False  # a wake came since this pass planned: another follows it
        self._todo: deque[_Item] = deque()  # this pass's chunks not looked at yet
        self._chunk: _Rendering | None = None  # the one being rendered: RENDERING, PAUSED
        self._builds = PhraseBuilds(synthesis)
        self._prepared: list[_Item] | None = None
        # What telemetry shows: the latest news (no move reads it; a wake does not change it).
        self.state = "waiting for idle" if phrases else "no phrases"
        self.chunks = 0  # chunks of the phrases (distinct keys)
        self.cached = 0  # of them in the cache now
        self.skipped = 0  # did not fit in cache.max_mb
        self.pauses = 0  # times it stopped for a request
        self.max_overlap = 0  # most windows that ran after a request had arrived

    def prepare(self) -> None:
        """At start, before the daemon takes requests (with `synthesis.preload`): plan the
        phrases and, when one is missing from the cache, load the build that renders it.
        That load (seconds for the FP32 model) is the one step that cannot pause for a
        request, so it is done while no request can come, and in this thread: a loader
        thread's glibc arena would keep ~28 MB of the load's freed memory for the
        daemon's life (malloc_trim gives back the main arena's top, no other's)."""
        if not self.phrases or not self._synthesis.preload:
            return
        try:
            self._prepared = plan_phrases(self.phrases, self._router, self._voices)
            for item in self._prepared:
                if self._store.problem is None and not self._store.contains(item.key):
                    self._builds.load(item.chunk.voice)
        except Exception:  # phrases are a nicety: the daemon starts without them
            _LOGGER.exception("Cannot prepare the phrases for pre-rendering")
            self.state = "failed (see the log)"

    def attach(self, ready: Callable[[], None]) -> None:
        """`ready` (the schedule's wake) is called whenever a step can be taken again."""
        self._ready = ready
        ready()

    def stop(self) -> None:
        with self._lock:
            self._phase = _Phase.STOPPED

    def wake(self) -> None:
        """Something was lost or can be stored again: run another pass (after the one
        under way, if one is: it may have looked at that chunk already)."""
        with self._lock:
            if self._phase is _Phase.IDLE:
                self._phase = _Phase.WANTED
            self._stale = True
        self._ready()

    def progress(self) -> dict[str, object]:
        return {
            "state": self.state,
            "phrases": len(self.phrases),
            "chunks": self.chunks,
            "cached": self.cached,
            "skipped": self.skipped,
            "pauses": self.pauses,
            "max_overlap_windows": self.max_overlap,
        }

    # --- for the schedule (under its lock) ----------------------------------------------

    def take(self) -> StepTask | None:
        with self._lock:
            phase = self._phase
            if phase not in _STEP_PHASES:
                return None
            self._phase = _Phase.STEPPING
        return StepTask("prerender", lambda: self._step(phase))

    # --- the phase's moves --------------------------------------------------------------

    def _move(self, holding: _Phase, to: _Phase) -> _Phase:
        """The holder of the turn (STEPPING: a step; LOADING: the loader) hands it on to
        `to`; a pass over (IDLE) is followed by another if a wake came since it planned.
        Once stopped, it stays stopped. Returns the phase now."""
        with self._lock:
            if self._phase is holding:
                self._phase = _Phase.WANTED if to is _Phase.IDLE and self._stale else to
            return self._phase

    def _step(self, phase: _Phase) -> None:
        after = phase  # not an Exception (the worker ends): the turn goes back unmoved
        try:
            after = self._step_from(phase)
        except Exception:  # a bug here must not take speech down: log, wait for a wake
            _LOGGER.exception("Pre-rendering the phrases failed")
            self.state = "failed (see the log)"
            after = self._end_pass()
        finally:
            if self._move(_Phase.STEPPING, after) is _Phase.LOADING:
                threading.Thread(target=self._load, name="prerender-load", daemon=True).start()
            self._ready()

    # --- in a synthesis worker: a step, and the phase that follows it ---------------------

    def _step_from(self, phase: _Phase) -> _Phase:
        if phase is _Phase.WANTED:
            return self._begin_pass()
        if phase is _Phase.LOOKING:
            return self._look(self._todo.popleft())
        assert self._chunk is not None, phase  # RENDERING or PAUSED
        if phase is _Phase.PAUSED:
            _LOGGER.info("Pre-render resumed: the daemon is idle")
        return self._next_window(self._chunk)

    def _begin_pass(self) -> _Phase:
        with self._lock:
            self._stale = False  # the plan made now sees what the wakes so far said
        items = (
            self._prepared
            if self._prepared is not None
            else plan_phrases(self.phrases, self._router, self._voices)
        )
        self._prepared = None
        self._store.pin(item.key.digest for item in items)
        self.chunks = len(items)
        self.cached = sum(self._store.contains(item.key) for item in items)
        self.skipped = 0
        self._todo = deque(items)
        return self._next_or_done()

    def _look(self, item: _Item) -> _Phase:
        if self._store.problem is not None:
            self.state = "waiting: the cache cannot be written"
            return self._end_pass()
        if self._store.contains(item.key):
            return self._next_or_done()
        self.state = f"rendering {item.chunk.text[:40]!r}"
        build = self._builds.get(item.chunk.voice)
        if build is None:
            self._todo.appendleft(item)  # looked at again once its build is loaded
            return _Phase.LOADING
        # first=True: windows of at least FIRST_WINDOW_FRAMES. The engine sizes windows
        # by the audio ahead of a listener; here there is none, and without a first
        # window size it would go on one frame at a time.
        stream = voice_audio(build, item.chunk.text, item.chunk.options, True, item.chunk.ids)
        self._chunk = _Rendering(item, iter(stream))
        return _Phase.RENDERING

    def _next_window(self, rendering: _Rendering) -> _Phase:
        piece = next(rendering.stream, None)
        if piece is not None:
            rendering.pieces.append(piece)
            return _Phase.RENDERING if self._busy_since() is None else self._pause()
        self._chunk = None
        if rendering.pieces:
            self._keep(rendering.item, np.concatenate(rendering.pieces))
        return self._next_or_done()

    def _pause(self) -> _Phase:
        """A request came while this window ran: the pre-render stops here until the
        daemon is idle again (the schedule gives it no step before)."""
        self.pauses += 1
        self.max_overlap = max(self.max_overlap, 1)
        self.state = "paused for requests"
        _LOGGER.info("Pre-render paused for a request: 1 window(s) overlapped it")
        return _Phase.PAUSED

    def _keep(self, item: _Item, audio: np.ndarray) -> None:
        if self._store.put(item.key, audio):
            self.cached += 1
            if item.own.digest != item.key.digest:
                self._store.discard(item.own.digest)
        elif self._store.problem is None:
            self.skipped += 1
            _LOGGER.warning(
                "Phrase chunk %r does not fit in cache.max_mb beside the others: not kept",
                item.chunk.text[:60],
            )

    def _next_or_done(self) -> _Phase:
        if self._todo:
            return _Phase.LOOKING
        self.state = "done"
        _LOGGER.info("Phrases pre-rendered: %d of %d chunks cached", self.cached, self.chunks)
        return self._end_pass()

    def _end_pass(self) -> _Phase:
        self._todo.clear()
        self._chunk = None
        self._builds.clear()  # the FP32 build's memory goes back until next time
        release_free_memory()
        return _Phase.IDLE

    # --- in a thread of its own ---------------------------------------------------------

    def _load(self) -> None:
        """Load the next chunk's build while the daemon serves requests: at nice 19, in a
        thread of its own (load_at_low_priority), so no worker waits seconds for it; the
        pass goes on when it is loaded."""
        after = _Phase.LOOKING
        try:
            self._builds.load(self._todo[0].chunk.voice, quietly=True)
        except Exception:
            _LOGGER.exception("Cannot load the build that renders the phrases")
            self.state = "failed (see the log)"
            after = self._end_pass()
        finally:
            self._move(_Phase.LOADING, after)
            self._ready()


def plan_phrases(phrases: list[str], router: Router, voices: Voices) -> list[_Item]:
    """Every phrase's chunks, as a request with that text would have them (in the default
    voice), once each."""
    items: dict[str, _Item] = {}
    for text in phrases:
        try:
            for item in _items(text, router, voices):
                items.setdefault(item.key.digest, item)
        except (EmptyTextError, ValueError) as err:
            _LOGGER.warning("Phrase %r cannot be spoken, not pre-rendered: %s", text[:60], err)
        except Exception:  # a voice that fails to load: the other phrases still go
            _LOGGER.exception("Phrase %r cannot be pre-rendered", text[:60])
    return list(items.values())


def _items(text: str, router: Router, voices: Voices) -> Iterator[_Item]:
    default = voices.default
    for chunk in router.plan(text, default, voices.options_for(default)):
        ci = ChunkInput.of(chunk)
        yield _Item(ci, ci.key(best_build_sha256(chunk.voice)), ci.key())
