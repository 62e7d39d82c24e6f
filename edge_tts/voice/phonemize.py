"""Text → phonemes → ids, exactly as Piper builds them.

espeak-ng keeps global state (the current voice, its buffers), so every call into it
goes through one process-wide lock.
"""

from __future__ import annotations

import logging
import threading
import unicodedata
from collections.abc import Mapping, Sequence

from piper.config import PhonemeType, PiperConfig
from piper.phonemize_espeak import EspeakPhonemizer

_LOGGER = logging.getLogger(__name__)

BOS, EOS, PAD = "^", "$", "_"

_ESPEAK_LOCK = threading.Lock()
_espeak: EspeakPhonemizer | None = None


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
    global _espeak
    with _ESPEAK_LOCK:
        if _espeak is None:
            _espeak = EspeakPhonemizer()
        sentences = _espeak.phonemize(
            config.espeak_voice, text, vowel_clusters=config.vowel_clusters
        )
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


def text_to_ids(text: str, config: PiperConfig) -> list[list[int]]:
    """One id sequence per sentence espeak finds in `text`."""
    return [phonemes_to_ids(p, config.phoneme_id_map) for p in phonemize(text, config)]
