"""What makes two chunks sound the same: the key of a cache entry.

Everything that changes a chunk's audio before post-processing is in it: the voice the
request asked for (by digest, so a rebuilt voice never plays stale audio), the build
that rendered it (the voice itself, or its FP32 original), the speaker, the pace and
noise scales, and the chunk's input ids. Keying on the ids, not only on the text, covers
the whole text front-end and phonemizer: a change there that alters what the model reads
changes the key by itself, with no version number to remember to bump. Volume, leading
silence, pause gate and resampling come after the cache and are not in it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from ..voice.base import SpeechOptions, SpeechVoice
from .planned import PlannedChunk

# Bump when what an entry holds changes meaning (its layout, or the engine's output for
# the same ids, e.g. a decoder fix): every older entry then misses and ages out.
SCHEME = 1


@dataclass(frozen=True)
class ChunkKey:
    """One chunk, rendered by one build, for one voice; `digest` names its file."""

    digest: str
    voice_sha256: str
    build_sha256: str
    text: str
    sample_rate: int


@dataclass(frozen=True)
class ChunkInput:
    """A chunk as the voice reads it (computed once: a lookup and a synthesis share it)."""

    voice: SpeechVoice
    text: str
    options: SpeechOptions
    ids: list[list[int]]
    speaker: int | None

    @classmethod
    def of(cls, chunk: PlannedChunk) -> ChunkInput:
        """A planned chunk (the router's) as its voice reads it. Its silence and breaks
        are not in it: they come after the cache (synthesis.render)."""
        voice, text, options = chunk.voice, chunk.text, chunk.options
        voice.load()  # its digest is known once loaded (a no-op when preloaded)
        return cls(voice, text, options, voice.ids(text), voice.speaker_id(options.speaker))

    def key(self, build_sha256: str | None = None) -> ChunkKey:
        """The key of this chunk rendered by the build with `build_sha256` (default: the
        voice itself)."""
        voice_sha256 = self.voice.sha256
        if voice_sha256 is None:
            raise ValueError(f"voice {self.voice.name} has no digest: it is not loaded")
        build = build_sha256 or voice_sha256
        fields = {
            "scheme": SCHEME,
            "voice": voice_sha256,
            "build": build,
            "rate": self.voice.sample_rate,
            "speaker": self.speaker,
            "length_scale": _number(self.options.length_scale),
            "noise_scale": _number(self.options.noise_scale),
            "noise_w": _number(self.options.noise_w),
            "ids": self.ids,
            "text": self.text,
        }
        canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:40]
        return ChunkKey(digest, voice_sha256, build, self.text, self.voice.sample_rate)


def _number(value: float | None) -> float | None:
    # A speed of 1.1 reaches here as 1/1.1 computed at run time: rounded, the same request
    # gives the same key on every run.
    return None if value is None else round(float(value), 6)
