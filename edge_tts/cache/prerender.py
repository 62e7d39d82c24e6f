"""The configured phrases, rendered into the cache while the daemon has nothing to do.

One thread (`prerender`). A phrase is planned like a request with that text (same
voices, chunks and options), so its chunks have the keys a request's will look up; each
chunk missing from the cache is rendered with the voice's best build (phrase_voice.py: FP32
for our INT8 default voice) and stored pinned. Between two steps of the engine (the
encoder run, then each decoder window) it asks the pipeline's schedule whether a request
has come; if one has, it stops there and resumes, with the same generator, once the
daemon is idle again. A request therefore shares the CPU with at most the one window
that was running when it arrived; the log says how many did ("N window(s) overlapped"),
and tests hold it to one. After a pass it sleeps until the store says a pinned entry was
lost (a corrupt one discarded) or the directory can be written again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..config import SynthesisSettings
from ..speech.routing import Router
from ..speech.schedule import Schedule
from ..speech.synthesis import voice_audio
from ..text import EmptyTextError
from ..voice.base import SpeechVoice
from ..voice.model import release_free_memory
from ..voice.registry import Voices
from .key import ChunkInput, ChunkKey
from .phrase_voice import best_build_sha256, load_quietly, open_best_build
from .store import CacheStore

_LOGGER = logging.getLogger(__name__)

_IDLE_POLL_S = 0.5  # how often a waiting pre-renderer re-checks the stop event


@dataclass(frozen=True)
class _Item:
    chunk: ChunkInput
    key: ChunkKey  # what it is stored under: the best build's key
    own: ChunkKey  # the voice's own key: an entry there is superseded once this one lands


class Prerenderer:
    def __init__(
        self,
        phrases: list[str],
        store: CacheStore,
        schedule: Schedule,
        voices: Voices,
        router: Router,
        synthesis: SynthesisSettings,
    ) -> None:
        self.phrases = phrases
        self._store = store
        self._schedule = schedule
        self._voices = voices
        self._router = router
        self._synthesis = synthesis
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="prerender", daemon=True)
        self._builds: dict[int, SpeechVoice] = {}
        self._prepared: list[_Item] | None = None
        self.state = "waiting for idle" if phrases else "no phrases"
        self.chunks = 0  # chunks of the phrases (distinct keys)
        self.cached = 0  # of them in the cache now
        self.skipped = 0  # did not fit in cache.max_mb
        self.pauses = 0  # times it stopped for a request
        self.max_overlap = 0  # most windows that ran after a request had arrived

    def prepare(self) -> None:
        """At start, before the daemon takes requests (with `synthesis.preload`): plan the
        phrases and, when one is missing from the cache, load the build that renders it.
        That load (seconds for the FP32 model) is the one step the pre-renderer cannot
        pause for a request, so it is done while no request can come, and in this thread:
        a loader thread's glibc arena would keep ~28 MB of the load's freed memory for the
        daemon's life (malloc_trim gives back the main arena's top, no other's)."""
        if not self.phrases or not self._synthesis.preload:
            return
        try:
            self._prepared = self._plan()
            for item in self._prepared:
                if self._store.problem is None and not self._store.contains(item.key):
                    self._build(item.chunk.voice, quietly=False)
        except Exception:  # phrases are a nicety: the daemon starts without them
            _LOGGER.exception("Cannot prepare the phrases for pre-rendering")
            self.state = "failed (see the log)"

    def start(self) -> None:
        if self.phrases:
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def wake(self) -> None:
        """Something was lost or can be stored again: run another pass."""
        self._wake.set()

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

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            try:
                self._pass()
            except Exception:  # a bug here must not take speech down: log, wait for a wake
                _LOGGER.exception("Pre-rendering the phrases failed")
                self.state = "failed (see the log)"
            finally:
                self._builds.clear()  # the FP32 build's memory goes back until next time
                release_free_memory()
            self._wake.wait()

    def _pass(self) -> None:
        if not self._wait_idle():
            return
        items = self._prepared if self._prepared is not None else self._plan()
        self._prepared = None
        self._store.pin(item.key.digest for item in items)
        self.chunks = len(items)
        self.cached = sum(self._store.contains(item.key) for item in items)
        self.skipped = 0
        for item in items:
            if self._stop.is_set():
                return
            if self._store.problem is not None:
                self.state = "waiting: the cache cannot be written"
                return
            if not self._store.contains(item.key):
                self._render_one(item)
        self.state = "done"
        _LOGGER.info("Phrases pre-rendered: %d of %d chunks cached", self.cached, self.chunks)

    def _plan(self) -> list[_Item]:
        """Every phrase's chunks, as a request with that text would have them."""
        items: dict[str, _Item] = {}
        for text in self.phrases:
            try:
                for item in self._items(text):
                    items.setdefault(item.key.digest, item)
            except (EmptyTextError, ValueError) as err:
                _LOGGER.warning("Phrase %r cannot be spoken, not pre-rendered: %s", text[:60], err)
            except Exception:  # a voice that fails to load: the other phrases still go
                _LOGGER.exception("Phrase %r cannot be pre-rendered", text[:60])
        return list(items.values())

    def _items(self, text: str) -> Iterator[_Item]:
        default = self._voices.default
        for chunk in self._router.plan(text, default, self._voices.options_for(default)):
            ci = ChunkInput.of(chunk.voice, chunk.text, chunk.options)
            yield _Item(ci, ci.key(best_build_sha256(chunk.voice)), ci.key())

    def _render_one(self, item: _Item) -> None:
        self.state = f"rendering {item.chunk.text[:40]!r}"
        audio = self._render(item.chunk)
        if audio is None or not audio.size:
            return
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

    def _render(self, chunk: ChunkInput) -> np.ndarray | None:
        """The chunk from its best build, pausing for requests; None when stopped."""
        ends: list[float] = []  # when each step of the engine finished (monotonic)
        if not self._pause_while_busy(ends, chunk):
            return None
        build = self._build(chunk.voice)
        pieces: list[np.ndarray] = []
        # first=True: windows of at least FIRST_WINDOW_FRAMES. The engine sizes windows by
        # the audio ahead of a listener; after a pause there is none, and without a first
        # window size it would go on one frame at a time.
        stream: Iterator[np.ndarray] = voice_audio(
            build, chunk.text, chunk.options, first=True, ids=chunk.ids
        )
        try:
            while True:
                if not self._pause_while_busy(ends, chunk):
                    return None
                piece = next(stream, None)
                if piece is None:
                    break
                ends.append(time.monotonic())
                pieces.append(piece)
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        return np.concatenate(pieces) if pieces else None

    def _pause_while_busy(self, ends: list[float], chunk: ChunkInput) -> bool:
        """Before each step of the engine: if a request has come, wait until the daemon is
        idle again. `ends`: when this chunk's steps so far finished, to count those that
        ran after the request arrived. False when stopping."""
        if self._schedule.idle():
            return not self._stop.is_set()
        since = self._schedule.busy_since()
        overlap = sum(1 for end in ends if since is not None and end > since)
        self.pauses += 1
        self.max_overlap = max(self.max_overlap, overlap)
        _LOGGER.info("Pre-render paused for a request: %d window(s) overlapped it", overlap)
        self.state = "paused for requests"
        if not self._wait_idle():
            return False
        _LOGGER.info("Pre-render resumed: the daemon is idle")
        self.state = f"rendering {chunk.text[:40]!r}"
        return True

    def _wait_idle(self) -> bool:
        """Until the daemon is idle (True) or stopping (False)."""
        while not self._stop.is_set():
            if self._schedule.wait_idle(_IDLE_POLL_S):
                return not self._stop.is_set()
        return False

    def _build(self, voice: SpeechVoice, quietly: bool = True) -> SpeechVoice:
        """The build that renders `voice`'s phrases, loaded; `quietly`: at nice 19, in a
        thread of its own (load_quietly), for a load while the daemon serves requests."""
        build = self._builds.get(id(voice))
        if build is None:
            synthesis = self._synthesis
            build = open_best_build(voice, synthesis.threads, synthesis.max_phonemes)
            if quietly:
                load_quietly(build)
            else:
                build.load()
            self._builds[id(voice)] = build
        return build
