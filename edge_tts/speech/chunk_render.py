"""The one render path: a planned chunk into its pieces of audio, for every request.

A local request's chunk (pipeline.py: its pieces go to the playback thread) and a remote
response's (responses.py: its pieces go to the door) are rendered by this same code: the
voice audio through the phrase cache when the request allows it, then synthesis.render
(trim, pause gate, resampling, volume), with its timings stamped on the way. Only where
the pieces go and when to stop is the caller's (`deliver`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..cache.planned import PlannedChunk
from ..cache.serving import PhraseCache, cached_audio
from .synthesis import render

Deliver = Callable[[np.ndarray], bool]  # one piece to its consumer; False: stop rendering


@dataclass
class ChunkStats:
    """What rendering one chunk took; written by the one worker that renders it."""

    started_at: float | None = None  # monotonic: its rendering began
    first_audio_at: float | None = None  # its first piece of audio was ready
    synth_seconds: float = 0.0  # the worker's time making its audio
    cached: bool = False  # its audio came from the phrase cache, not the voice


class ChunkRenderer:
    """Renders planned chunks through the phrase cache (None: the voices' own audio)."""

    def __init__(self, cache: PhraseCache | None) -> None:
        self.cache = cache

    def render(
        self,
        chunk: PlannedChunk,
        first: bool,
        rate: int,
        deliver: Deliver,
        *,
        stats: ChunkStats,
        whose: str,
        use_cache: bool = True,
    ) -> None:
        """`chunk`'s int16 pieces at `rate`, each handed to `deliver` as it is made, until
        the last or until `deliver` says stop. `first`: the chunk opens its utterance.
        `whose` names the request in the log. A failing voice raises; `stats` holds
        what was done until then."""
        started = stats.started_at = time.monotonic()
        # A chunk of only breaks and sounds has no voice audio to look up: no miss counted.
        use_cache = use_cache and bool(chunk.text)
        audio = cached_audio(self.cache, chunk, first, whose) if use_cache else None
        stats.cached = audio is not None and audio.cached
        try:
            pieces = render(
                chunk.voice,
                chunk.text,
                chunk.options,
                first,
                rate,
                audio,
                silence=chunk.silence,
                breaks=chunk.breaks,
                sounds=chunk.sounds,
            )
            for pcm in pieces:
                if stats.first_audio_at is None:
                    stats.first_audio_at = time.monotonic()
                if not deliver(pcm):
                    break
        finally:
            if audio is not None:
                audio.close()  # a synthesis cut short: whoever waits for its chunk goes on
            stats.synth_seconds += time.monotonic() - started
