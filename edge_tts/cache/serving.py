"""The hook where a chunk's voice audio is made: from the cache when it holds the chunk,
else from the voice, stored on the way.

`PhraseCache.audio()` returns the chunk's float32 pieces at the voice's rate, the same
whichever way they came, and synthesis.render() does the rest (trim, gate, resampling,
volume) for both. A lookup prefers the entry of the voice's best build (rendered ahead
while idle, phrase_voice.py) over the voice's own. Two chunks with the same key at once (the
same sentence twice in a message, or in two messages in a row) are synthesized once: the
second waits for the first and is served its audio.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from ..core.telemetry import Telemetry
from ..voice.chunk_audio import voice_audio
from ..voice.windowed import FIRST_WINDOW_FRAMES
from .key import ChunkInput, ChunkKey
from .phrase_voice import best_build_sha256
from .planned import PlannedChunk
from .store import CacheStore

_LOGGER = logging.getLogger(__name__)

# A hit is cut into pieces as the decoder would make them: a first piece as long as the
# first decoder window (so the lead-in trim sees what it sees after synthesis), then
# pieces short enough that an interrupt never waits behind a long write.
_HOP = 256  # samples per latent frame of the usual Piper voices
HIT_FIRST_PIECE = FIRST_WINDOW_FRAMES * _HOP
HIT_PIECE = 8 * HIT_FIRST_PIECE


@dataclass(eq=False)
class _Flight:
    """A chunk being synthesized: others that want it wait for `done`."""

    done: threading.Event = field(default_factory=threading.Event)
    audio: np.ndarray | None = None  # the whole chunk, when its synthesis completed


class ChunkAudio:
    """A chunk's voice audio: iterate for the pieces; `cached` says whether they came
    without synthesis. close() releases a synthesis cut short (an interrupt)."""

    def __init__(
        self,
        pieces: Iterator[np.ndarray],
        cached: bool,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._pieces = pieces
        self.cached = cached
        self._on_close = on_close

    def __iter__(self) -> Iterator[np.ndarray]:
        return self._pieces

    def close(self) -> None:
        close = getattr(self._pieces, "close", None)
        if close is not None:
            close()
        if self._on_close is not None:  # also when the pieces were never asked for
            self._on_close()


class PhraseCache:
    def __init__(self, store: CacheStore, telemetry: Telemetry) -> None:
        self.store = store
        self._telemetry = telemetry
        self._lock = threading.Lock()
        self._flights: dict[str, _Flight] = {}

    def audio(self, planned: PlannedChunk, first: bool) -> ChunkAudio:
        chunk = ChunkInput.of(planned)
        best = best_build_sha256(chunk.voice)
        keys = [chunk.key(best)] if best else []
        own = chunk.key()
        for key in [*keys, own]:
            entry = self.store.get(key)
            if entry is not None:
                self._telemetry.count("cache_hits")
                return ChunkAudio(replay(entry.audio, first), cached=True)
        flight, owner = self._join(own)
        if not owner:
            served = self._await(flight)
            if served is not None:
                self._telemetry.count("cache_hits")
                return ChunkAudio(replay(served, first), cached=True)
            flight, owner = self._join(own)  # it failed: try it ourselves
        self._telemetry.count("cache_misses")
        if not owner:  # a third one took it over meanwhile: no waiting twice
            pieces = voice_audio(chunk.voice, chunk.text, chunk.options, first, chunk.ids)
            return ChunkAudio(pieces, cached=False)
        pieces = self._synthesize(chunk, own, flight, first)
        return ChunkAudio(pieces, cached=False, on_close=lambda: self._land(own, flight))

    def _join(self, key: ChunkKey) -> tuple[_Flight, bool]:
        """The flight of `key`, and whether we own it (must synthesize and land it)."""
        with self._lock:
            flight = self._flights.get(key.digest)
            if flight is not None:
                return flight, False
            flight = self._flights[key.digest] = _Flight()
            return flight, True

    def _await(self, flight: _Flight) -> np.ndarray | None:
        # As long as the owner's synthesis of one chunk: it lands however it ends (its
        # generator's finally, or ChunkAudio.close() when it was never iterated).
        flight.done.wait()
        return flight.audio

    def _synthesize(
        self, chunk: ChunkInput, key: ChunkKey, flight: _Flight, first: bool
    ) -> Iterator[np.ndarray]:
        pieces: list[np.ndarray] = []
        try:
            for piece in voice_audio(chunk.voice, chunk.text, chunk.options, first, chunk.ids):
                pieces.append(piece)
                yield piece
            audio = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
            flight.audio = audio
            if audio.size:
                self.store.put(key, audio)
        finally:  # completed, failed or closed half way: whoever waits goes on
            self._land(key, flight)

    def _land(self, key: ChunkKey, flight: _Flight) -> None:
        with self._lock:
            if self._flights.get(key.digest) is flight:
                del self._flights[key.digest]
        flight.done.set()

    def stats(self) -> dict[str, object]:
        problem = self.store.problem
        return {"status": f"degraded: {problem}" if problem else "ok", **self.store.stats()}


def cached_audio(
    cache: PhraseCache | None, chunk: PlannedChunk, first: bool, whose: str
) -> ChunkAudio | None:
    """A chunk's voice audio through the phrase cache, for every door that speaks (None
    without a cache: the voice's own). `whose` names the request in the log."""
    if cache is None:
        return None
    try:
        return cache.audio(chunk, first)
    except Exception:  # speaking matters more than caching: synthesize as without it
        _LOGGER.exception("Phrase cache lookup failed for %s", whose)
        return None


def replay(audio: np.ndarray, first: bool) -> Iterator[np.ndarray]:
    """A stored chunk in pieces, as `voice_audio` would yield them."""
    start = 0
    size = HIT_FIRST_PIECE if first else HIT_PIECE
    while start < audio.size:
        yield audio[start : start + size]
        start += size
        size = HIT_PIECE
