"""Readings given as phonemes (SSML `<phoneme>`, a lexicon entry), carried inside a chunk's
text to the voice that reads them.

A chunk's text is what the cache keys, the logs show and the voice turns into ids, so a
reading travels in it, between Private Use Area marks: `clean()` drops every such
character from a request's text, so no text a user sends can contain one, and no plain
text is ever read as phonemes. While the front-end normalizes and splits a text
into chunks, each reading stands as a placeholder word (a letter and a private-use
character), so no rule reads into it and no cut falls inside it.

    "Turn onto \\ue000ˈkæstɹoʊ\\ue002 street."    an IPA reading (espeak-ng phonemes)
    "欢迎来到\\ue001chong2 qing4\\ue002"             a pinyin reading (the Mandarin voice)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

Alphabet = Literal["ipa", "x-pinyin"]
ALPHABETS: Final[tuple[Alphabet, ...]] = ("ipa", "x-pinyin")

_OPEN: Final[dict[Alphabet, str]] = {"ipa": "\ue000", "x-pinyin": "\ue001"}
_ALPHABET_OF: Final[dict[str, Alphabet]] = {mark: name for name, mark in _OPEN.items()}
_CLOSE: Final = "\ue002"
_NOTATION: Final = re.compile("([\ue000\ue001])([^\ue002]*)\ue002")
# Placeholders while a text is split: one character each, in the Supplementary Private
# Use Area-A, apart from the marks above.
_FIRST_PLACEHOLDER: Final = 0xF0000
_LAST_PLACEHOLDER: Final = 0xFFFFD
PLACEHOLDERS: Final = "\U000f0000-\U000ffffd"  # a character class's body
# A placeholder is a capital and a private-use character: a capitalized word to the
# normalizers ("Mr." before it is "Mister", a period before it ends a sentence), that no
# text a user sends can hold.
_LETTER: Final = "Q"  # in no rule of the expanders (units, symbols)
_PLACEHOLDER: Final = re.compile(f"{_LETTER}?[{PLACEHOLDERS}]")
PRIVATE_USE: Final = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
_PRIVATE: Final = re.compile(f"[{PRIVATE_USE}]")
# What no reading may hold: controls, and the private-use marks readings travel between.
_NOT_PHONEME: Final = re.compile(f"[\x00-\x1f\x7f{PRIVATE_USE}]")
_PINYIN: Final = re.compile(r"[a-zü]+[1-5]")
MAX_READINGS: Final = _LAST_PLACEHOLDER - _FIRST_PLACEHOLDER + 1


@dataclass(frozen=True)
class Reading:
    """How a word is said, in the alphabet of the voice that reads it: espeak-ng's IPA
    phonemes for a Piper voice, pinyin syllables with tone digits for the Mandarin voice."""

    alphabet: Alphabet
    phonemes: str

    def notation(self) -> str:
        return _OPEN[self.alphabet] + self.phonemes + _CLOSE


def reading(alphabet: str, phonemes: str) -> Reading:
    """A reading as a user writes it (SSML's `ph`, a lexicon entry), checked: ValueError
    says what is wrong. Whitespace runs become one space; pinyin is lowercased, v is ü."""
    if alphabet not in ALPHABETS:
        raise ValueError(f"alphabet {alphabet!r} is not one of {', '.join(ALPHABETS)}")
    phonemes = " ".join(phonemes.split())
    if not phonemes:
        raise ValueError("has no phonemes")
    if _NOT_PHONEME.search(phonemes):
        raise ValueError("holds control or private-use characters")
    if alphabet == "ipa":
        # A tie bar (t͡ʃ, d͡ʒ) joins two symbols; espeak-ng's IPA, which the voices read,
        # writes the pair without one. An ASCII colon is a length mark there, never a
        # pause (the voices read ":" as punctuation).
        untied = phonemes.replace("\u0361", "").replace("\u035c", "")
        return Reading("ipa", untied.replace(":", "ː"))
    phonemes = phonemes.lower()
    wrong = [s for s in phonemes.split() if not _PINYIN.fullmatch(s.replace("v", "ü"))]
    if wrong:
        raise ValueError(
            f"x-pinyin syllable {wrong[0]!r} is not pinyin with a tone digit 1-5 "
            "(5: neutral), e.g. chong2"
        )
    return Reading("x-pinyin", phonemes)


# What vendors' IPA writes for a symbol espeak-ng's IPA (the voices') writes otherwise:
# ASCII g for the IPA ɡ, the ligatures for the pairs, r-coloured vowels as espeak spells
# them. Tried only where the voice lacks what was written.
IPA_EQUIVALENTS: Final = (
    ("g", "ɡ"),
    ("ʧ", "tʃ"),
    ("ʤ", "dʒ"),
    ("ʦ", "ts"),
    ("ʣ", "dz"),
    ("ɝ", "ɜː"),
    ("\u02d0\u02d0", "\u02d0"),
)


def equivalent(reading: Reading) -> Reading:
    """An IPA reading with vendors' symbols as espeak-ng writes them (itself if none)."""
    if reading.alphabet != "ipa":
        return reading
    phonemes = reading.phonemes
    for written, espeak in IPA_EQUIVALENTS:
        phonemes = phonemes.replace(written, espeak)
    return Reading("ipa", phonemes)


def has_readings(text: str) -> bool:
    return _CLOSE in text


def parts(text: str) -> list[str | Reading]:
    """A chunk's text as its plain pieces and its readings, in order."""
    pieces: list[str | Reading] = []
    start = 0
    for match in _NOTATION.finditer(text):
        if match.start() > start:
            pieces.append(text[start : match.start()])
        pieces.append(Reading(_ALPHABET_OF[match[1]], match[2]))
        start = match.end()
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def readable(text: str) -> str:
    """A chunk's text for people: readings as [ipa: …] and [x-pinyin: …]."""
    return _NOTATION.sub(lambda m: f"[{_ALPHABET_OF[m[1]]}: {m[2]}]", text)


def placeholder(index: int) -> str:
    if not 0 <= index < MAX_READINGS:
        raise ValueError(f"at most {MAX_READINGS} readings in one text")
    return _LETTER + chr(_FIRST_PLACEHOLDER + index)


def restore(text: str, readings: list[Reading]) -> str:
    """`text` with each placeholder replaced by its reading's notation."""
    return _PLACEHOLDER.sub(lambda m: readings[ord(m[0][-1]) - _FIRST_PLACEHOLDER].notation(), text)


def without_private_use(text: str) -> str:
    """`text` with no private-use character: none can pass for a reading's marks."""
    return _PRIVATE.sub("", text)
