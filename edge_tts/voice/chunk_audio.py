"""One normalized text chunk to the voice's own audio, before any post-processing: what
the phrase cache keeps and what the engine renders (speech/synthesis.py)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .base import SpeechOptions, SpeechVoice
from .windowed import FIRST_WINDOW_FRAMES


def voice_audio(
    voice: SpeechVoice,
    text: str,
    options: SpeechOptions,
    first: bool,
    ids: list[list[int]] | None = None,
) -> Iterator[np.ndarray]:
    """One normalized text chunk → the voice's own float32 pieces at its rate, before any
    post-processing: what the phrase cache keeps. `ids`: the chunk's, when known already.

    The first chunk of an utterance starts with a short decoder window: it is about how
    soon the listener hears something.
    """
    params = options.params()
    opening = first
    for sequence in voice.ids(text) if ids is None else ids:
        for audio in voice.stream(sequence, params, FIRST_WINDOW_FRAMES if opening else None):
            opening = False
            yield audio
