"""Text → audio in the calling thread, along a request's own path: the router plans the
chunks (each writing system to its voice) and each chunk renders as a synthesis worker
renders it, without the queue, the phrase cache or playback. What `edge-ttsd tune`,
tests and benchmarks measure, so they measure what a request gets."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..config import SynthesisSettings
from ..text import EmptyTextError
from ..voice.base import SpeechOptions, SpeechVoice
from ..voice.registry import Voices
from .routing import Router
from .synthesis import render


@dataclass(frozen=True)
class AudioChunk:
    text: str  # the chunk's normalized text
    pcm: np.ndarray  # int16, mono, at the request's voice's rate
    sample_rate: int
    synth_seconds: float  # making this piece took

    @property
    def seconds(self) -> float:
        return len(self.pcm) / self.sample_rate

    @property
    def real_time_factor(self) -> float:
        return self.synth_seconds / self.seconds if len(self.pcm) else 0.0


def speak(
    text: str,
    voice: SpeechVoice,
    options: SpeechOptions | None = None,
    synthesis: SynthesisSettings | None = None,
    voices: Voices | None = None,
) -> Iterator[AudioChunk]:
    """`text` in `voice` (other writing systems in their `voices`), piece by piece as the
    decoder makes them. EmptyTextError when nothing is speakable; ValueError for a
    speaker the voice does not have, before any audio."""
    options = options or SpeechOptions()
    voice.speaker_id(options.speaker)
    router = Router(synthesis or SynthesisSettings(), voices)
    produced = False
    for index, chunk in enumerate(router.plan(text, voice, options)):
        started = time.monotonic()
        pieces = render(
            chunk.voice,
            chunk.text,
            chunk.options,
            index == 0,
            voice.sample_rate,
            silence=chunk.silence,
            breaks=chunk.breaks,
            sounds=chunk.sounds,
        )
        for pcm in pieces:
            produced = True
            yield AudioChunk(chunk.text, pcm, voice.sample_rate, time.monotonic() - started)
            started = time.monotonic()
    if not produced:
        raise EmptyTextError(f"nothing speakable in {text[:40]!r}")
