"""Text → audio: front-end chunks, phoneme ids, then the voice's decoded pieces.

Audio is produced lazily, piece by piece, so a caller plays the first while the rest is
synthesized.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .audio.pause_gate import PauseGate
from .text import EmptyTextError, prepare
from .voice.model import FIRST_WINDOW_FRAMES, SynthesisParams, Voice, to_pcm16


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
        """Audio in playing order, as soon as each piece is decoded."""
        options = options or SpeechOptions()
        self.voice.speaker_id(options.speaker)  # a bad speaker fails before any audio
        produced = False
        for index, piece in enumerate(self.plan(text)):
            started = time.monotonic()
            for pcm in render(self.voice, piece, options, first=index == 0):
                produced = True
                yield AudioChunk(piece, pcm, self.voice.sample_rate, time.monotonic() - started)
                started = time.monotonic()
        if not produced:
            raise EmptyTextError(f"nothing speakable in {text[:40]!r}")


def render(
    voice: Voice, text: str, options: SpeechOptions, first: bool, rate: int | None = None
) -> Iterator[np.ndarray]:
    """One normalized text chunk → int16 pieces at `rate` (default: the voice's).

    The first chunk of an utterance starts with a short decoder window and loses its
    leading silence: both are about how soon the listener hears something. Pauses go
    through the pause gate (the quantized voice's noise floor).
    """
    params = options.params()
    opening = first
    gate = PauseGate()
    for ids in voice.ids(text):
        first_frames = FIRST_WINDOW_FRAMES if opening else None
        for audio in voice.stream(ids, params, first_frames):
            if opening:
                audio = trim_leading_silence(audio, voice.sample_rate)
                opening = False
            audio = gate.process(audio)
            yield to_pcm16(
                resample(audio, voice.sample_rate, rate or voice.sample_rate), options.volume
            )


def resample(audio: np.ndarray, rate: int, target: int) -> np.ndarray:
    """Linear resampling: enough for speech when a voice's rate differs from the output's."""
    if rate == target or audio.size == 0:
        return audio
    n = round(audio.size * target / rate)
    positions = np.linspace(0, audio.size - 1, n)
    resampled: np.ndarray = np.interp(positions, np.arange(audio.size), audio)
    return resampled.astype(np.float32)


# VITS output starts with ~50 ms of near-silence: time the listener waits for nothing.
SILENCE_LEVEL = 0.005  # float amplitude, about -46 dBFS
KEEP_BEFORE_ONSET_S = 0.01
# The first piece must outlast the decoding of the next one, or the player's ring runs
# dry: a sentence that starts with a stop ("Turn left ...") has its onset late in the
# first window, and trimmed to the onset it was 41 ms long (an underrun in the daemon
# benchmark). The next window takes ~40 ms here; the engine sizes it for half the audio
# it made, so 100 ms kept is enough wherever the first window was.
MIN_FIRST_PIECE_S = 0.1


def trim_leading_silence(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    loud = np.flatnonzero(np.abs(audio) > SILENCE_LEVEL)
    if loud.size == 0:
        return audio
    start = max(0, int(loud[0]) - int(KEEP_BEFORE_ONSET_S * sample_rate))
    start = min(start, max(0, audio.size - int(MIN_FIRST_PIECE_S * sample_rate)))
    return audio[start:]
