"""A planned chunk: what the router (speech/routing.py) makes of a text, one value per
chunk, and what the phrase cache keys on (key.py). Frozen: the engine's runtime state of
a chunk (its pieces, its timings) is kept apart, by whoever renders it."""

from __future__ import annotations

from dataclasses import dataclass

from ..audio.sounds import PlacedSound
from ..voice.base import SpeechOptions, SpeechVoice


@dataclass(frozen=True)
class PlannedChunk:
    """One normalized text chunk and how it is spoken."""

    text: str
    voice: SpeechVoice  # the request's own, or the one for another writing system in it
    options: SpeechOptions
    # Exact silence before and after its speech, in seconds: SSML's breaks (routing.py).
    silence: tuple[float, float] = (0.0, 0.0)
    # Whether a break stands before / after it: then the break is the pause there, and the
    # voice's own silence at that end is trimmed (speech/synthesis.render).
    breaks: tuple[bool, bool] = (False, False)
    sounds: tuple[PlacedSound, ...] = ()  # SSML's <audio> beside it (speech/gaps.py)
