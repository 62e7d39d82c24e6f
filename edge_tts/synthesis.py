"""Text → audio chunks: front-end chunks, phoneme ids, one voice inference per chunk.

Chunks are produced lazily so a caller can play the first while the next is synthesized.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .text import EmptyTextError, prepare
from .voice.model import SynthesisParams, Voice, to_pcm16
from .voice.phonemize import text_to_ids


@dataclass(frozen=True)
class SpeechOptions:
    speaker: int | str | None = None
    length_scale: float | None = None  # > 1 speaks slower
    volume: float = 1.0
    noise_scale: float | None = None
    noise_w: float | None = None

    def params(self) -> SynthesisParams:
        return SynthesisParams(
            speaker=self.speaker,
            length_scale=self.length_scale,
            noise_scale=self.noise_scale,
            noise_w=self.noise_w,
        )


@dataclass(frozen=True)
class AudioChunk:
    text: str
    pcm: np.ndarray  # int16, mono
    sample_rate: int
    synth_seconds: float

    @property
    def seconds(self) -> float:
        return len(self.pcm) / self.sample_rate

    @property
    def real_time_factor(self) -> float:
        return self.synth_seconds / self.seconds if len(self.pcm) else 0.0


class Synthesizer:
    def __init__(self, voice: Voice, max_chunk_chars: int = 200, first_chunk_chars: int = 40):
        self.voice = voice
        self.max_chunk_chars = max_chunk_chars
        self.first_chunk_chars = first_chunk_chars

    def plan(self, text: str) -> list[str]:
        """Normalized text chunks; raises EmptyTextError when nothing is speakable."""
        return prepare(
            text,
            language=self.voice.config.espeak_voice,
            max_chunk_chars=self.max_chunk_chars,
            first_chunk_chars=self.first_chunk_chars,
        )

    def chunks(self, text: str, options: SpeechOptions | None = None) -> Iterator[AudioChunk]:
        options = options or SpeechOptions()
        params = options.params()
        self.voice.speaker_id(options.speaker)  # a bad speaker fails before any audio
        produced = False
        for piece in self.plan(text):
            for ids in text_to_ids(piece, self.voice.config):
                started = time.monotonic()
                audio = self.voice.synthesize(ids, params)
                if not produced:
                    audio = trim_leading_silence(audio, self.voice.sample_rate)
                pcm = to_pcm16(audio, options.volume)
                elapsed = time.monotonic() - started
                produced = True
                yield AudioChunk(piece, pcm, self.voice.sample_rate, elapsed)
        if not produced:
            raise EmptyTextError(f"nothing speakable in {text[:40]!r}")


# VITS output starts with ~50 ms of near-silence: time the listener waits for nothing.
SILENCE_LEVEL = 0.005  # float amplitude, about -46 dBFS
KEEP_BEFORE_ONSET_S = 0.01


def trim_leading_silence(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    loud = np.flatnonzero(np.abs(audio) > SILENCE_LEVEL)
    if loud.size == 0:
        return audio
    start = max(0, int(loud[0]) - int(KEEP_BEFORE_ONSET_S * sample_rate))
    return audio[start:]
