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


def primary_language(language: str) -> str:
    """ "en_US" / "en-us" / "EN" -> "en"."""
    return language.strip().replace("-", "_").partition("_")[0].lower()


def expander_for(language: str) -> Expander | None:
    """The expander for a language code, or None when only neutral cleaning applies."""
    return _EXPANDERS.get(primary_language(language))
