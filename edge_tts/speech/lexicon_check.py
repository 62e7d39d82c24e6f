"""A lexicon's phonemes checked against the voices that would read them, before it is
used: an IPA entry with a symbol the voice has not (or a pinyin syllable the Mandarin
voice has not) passed `check-lexicon`, the daemon's start and SIGHUP, then refused every
announcement with the word. Now `check-lexicon` fails, the start is refused (exit 78)
and a reload keeps the entries in use, each saying which entry and why.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..text.languages import primary_language
from ..text.lexicon import Entry, LexiconError
from ..voice.base import SpeechVoice
from ..voice.registry import Voices


def check_readings(entries: Iterable[Entry], voices: Voices) -> None:
    """LexiconError naming the first entry whose phonemes a voice that reads them (its
    alphabet, in the entry's scope) cannot say."""
    for entry in entries:
        if entry.reading is None:
            continue
        for name, voice in voices.all().items():
            if voice.alphabet == entry.reading.alphabet and _in_scope(entry, name, voice):
                _check(entry, voice)


def _in_scope(entry: Entry, name: str, voice: SpeechVoice) -> bool:
    scope = entry.scope
    if scope is None or scope in (name, voice.name):
        return True
    return primary_language(scope) == primary_language(voice.language)


def _check(entry: Entry, voice: SpeechVoice) -> None:
    assert entry.reading is not None
    try:
        voice.ids(entry.reading.notation())
    except ValueError as err:
        raise LexiconError(f"{entry.where}: {entry.phrase!r}: {err}") from None
