"""Text → phonemes → ids, exactly as Piper builds them."""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Mapping, Sequence

from piper.config import PhonemeType, PiperConfig

from . import espeak

_LOGGER = logging.getLogger(__name__)

BOS, EOS, PAD = "^", "$", "_"


class UnsupportedVoiceError(ValueError):
    """The voice needs a phonemizer this build does not carry."""


def phonemize(text: str, config: PiperConfig) -> list[list[str]]:
    """Phonemes grouped by sentence, as espeak-ng (Piper's fork) produces them."""
    if config.phoneme_type == PhonemeType.TEXT:
        return [list(unicodedata.normalize("NFD", text))]
    if config.phoneme_type != PhonemeType.ESPEAK:
        raise UnsupportedVoiceError(
            f"phoneme_type {config.phoneme_type.value!r} is not supported (espeak and text are)"
        )
    sentences = espeak.sentences(config.espeak_voice, text, config.vowel_clusters)
    return [s for s in sentences if s]


def phonemes_to_ids(phonemes: Sequence[str], id_map: Mapping[str, Sequence[int]]) -> list[int]:
    """BOS, then every id followed by PAD, then EOS; unknown phonemes are skipped."""
    pad = list(id_map[PAD])
    ids = [*id_map[BOS], *pad]
    for phoneme in phonemes:
        mapped = id_map.get(phoneme)
        if mapped is None:
            _LOGGER.debug("Phoneme %r is not in the voice's id map; skipped", phoneme)
            continue
        ids.extend(mapped)
        ids.extend(pad)
    ids.extend(id_map[EOS])
    return ids


def text_to_ids(text: str, config: PiperConfig, max_phonemes: int | None = None) -> list[list[int]]:
    """One id sequence per sentence espeak finds in `text`; with `max_phonemes`, a longer
    sentence is cut at word boundaries into sequences of at most that many phonemes."""
    return [
        phonemes_to_ids(piece, config.phoneme_id_map)
        for sentence in phonemize(text, config)
        for piece in bound_phonemes(sentence, max_phonemes)
    ]


def bound_phonemes(phonemes: list[str], limit: int | None) -> list[list[str]]:
    """Cut a phoneme list into pieces of at most `limit`, after a word gap (" ") when one
    lies in the second half of the piece, else at the limit itself.

    This is what bounds one encoder run's memory, which grows with the square of its
    input: the text front-end's character limit cannot, as one character may be a dozen
    phonemes (a CJK character in an English voice is "Chinese letter")."""
    if limit is None or len(phonemes) <= limit:
        return [phonemes]
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    pieces: list[list[str]] = []
    rest = phonemes
    while len(rest) > limit:
        gap = max((i for i in range(limit // 2, limit) if rest[i] == " "), default=None)
        cut = limit if gap is None else gap + 1
        pieces.append(rest[:cut])
        rest = rest[cut:]
    pieces.append(rest)
    return [piece for piece in pieces if any(p != " " for p in piece)]
