"""Text → phonemes → ids, exactly as Piper builds them."""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Mapping, Sequence

from piper.config import PhonemeType, PiperConfig

from ..text.readings import Reading, has_readings, parts
from . import espeak

_LOGGER = logging.getLogger(__name__)

BOS, EOS, PAD = "^", "$", "_"
_MARKS = ".,;:!?"  # punctuation a Piper voice reads as phonemes
_LEADING = _MARKS + " \"')]"  # what may stand between a reading and the next word


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
    if has_readings(text):
        return [_with_readings(text, config)]
    sentences = espeak.sentences(config.espeak_voice, text, config.vowel_clusters)
    return [s for s in sentences if s]


def _with_readings(text: str, config: PiperConfig) -> list[str]:
    """A chunk with readings (text/readings.py) as one sentence: espeak-ng's phonemes for
    its text, each reading's own phonemes where it stands. ValueError for a reading in
    another alphabet, or with a phoneme the voice does not have (it would be skipped)."""
    phonemes: list[str] = []
    for part in parts(text):
        if isinstance(part, Reading):
            _extend(phonemes, _reading_phonemes(part, config))
            continue
        words = part.lstrip(_LEADING)
        # The marks right after a reading ("[ipa: ...], later"): espeak-ng drops those
        # that start a text, but the voice reads them, for pause and intonation.
        marks = [c for c in part[: len(part) - len(words)] if c in config.phoneme_id_map]
        marks = [c for c in marks if c in _MARKS]
        phonemes.extend(marks)
        if marks and marks[-1] in ",;:":
            phonemes.append(" ")  # as espeak.sentences puts after a clause mark
        if words.strip():
            sentences = espeak.sentences(config.espeak_voice, words, config.vowel_clusters)
            _extend(phonemes, [phoneme for sentence in sentences for phoneme in sentence])
    return phonemes


def _extend(phonemes: list[str], piece: list[str]) -> None:
    if phonemes and piece and phonemes[-1] != " " and piece[0] != " ":
        phonemes.append(" ")  # the word gap the text had around it
    phonemes.extend(piece)


def _reading_phonemes(reading: Reading, config: PiperConfig) -> list[str]:
    if reading.alphabet != "ipa":
        raise ValueError(f"this voice reads ipa phonemes, not {reading.alphabet}")
    clusters = set(config.vowel_clusters or ())
    phonemes = espeak.merge_clusters(list(unicodedata.normalize("NFD", reading.phonemes)), clusters)
    unknown = sorted({p for p in phonemes if p not in config.phoneme_id_map})
    if unknown:
        raise ValueError(
            f"phoneme(s) {' '.join(unknown)} in {reading.phonemes!r} are not in the voice's "
            "phoneme set (espeak-ng IPA: `edge-ttsd explain` shows a word's)"
        )
    return phonemes


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
