"""Registry of language-specific expanders.

Adding a language is one module with an ``expand(text: str) -> str`` function and one entry
in _EXPANDERS. Languages without an entry get the language-neutral cleaning only.
"""

from collections.abc import Callable, Mapping
from typing import Final

from edge_tts.text import chinese, english

Expander = Callable[[str], str]

# Keyed by the primary language subtag: "en" serves "en", "en_US", "en-gb", ...
_EXPANDERS: Final[Mapping[str, Expander]] = {
    "en": english.expand,
    "zh": chinese.expand,
}


# How much speech one character carries, against English text (what the chunk limits,
# synthesis.*_chunk_chars, are counted in): a Han character is a syllable, ~0.2 s; an
# English letter ~0.07 s. Text in such a language is cut at limit / weight, so a Chinese
# first chunk lasts about as long as an English one: its acoustic model renders the whole
# chunk before the first audio, so TTFA grows with it (a 33-character first chunk: 250 ms
# here; 13 characters: 132 ms; docs/benchmarks.md, "Mandarin voice").
_CHAR_WEIGHTS: Final[Mapping[str, float]] = {"zh": 2.5}


def chunk_limit(limit: int, language: str) -> int:
    """A chunk limit in English characters, as characters of `language`."""
    return max(1, round(limit / _CHAR_WEIGHTS.get(primary_language(language), 1.0)))


def primary_language(language: str) -> str:
    """ "en_US" / "en-us" / "EN" -> "en"."""
    return language.strip().replace("-", "_").partition("_")[0].lower()


def expander_for(language: str) -> Expander | None:
    """The expander for a language code, or None when only neutral cleaning applies."""
    return _EXPANDERS.get(primary_language(language))
