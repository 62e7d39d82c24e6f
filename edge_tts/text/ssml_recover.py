"""LLM-style markup made XML, for SSML that expat refuses: what a language model or a
web page writes inside `<speak>` is HTML more often than XML.

    recovered("<speak>5&nbsp;km &mdash; Tom & Jerry, 1 < 2</speak>")
    # '<speak>5\\xa0km — Tom &amp; Jerry, 1 &lt; 2</speak>'

- an HTML5 named entity (`&nbsp;`, `&mdash;`, `&eacute;`: Python's html.entities.html5)
  becomes its character; the five XML entities stay as they are;
- a `&` that starts no entity or character reference becomes `&amp;`;
- a `<` that cannot start markup (not followed by a letter, `_`, `:`, `/`, `!`, `?`)
  becomes `&lt;`.
An unknown entity (`&bogus;`) and a `<` before a letter are left alone: those are
markup, written wrong, and stay refused.
"""

from __future__ import annotations

import re
from html.entities import html5
from typing import Final

_XML_ENTITIES: Final = frozenset({"amp", "lt", "gt", "quot", "apos"})
_ENTITY: Final = re.compile(r"&([A-Za-z][A-Za-z0-9]*);")
_RAW_AMPERSAND: Final = re.compile(r"&(?![A-Za-z][A-Za-z0-9]*;|#[0-9]+;|#x[0-9A-Fa-f]+;)")
_RAW_LESS: Final = re.compile(r"<(?![A-Za-z_:/!?])")


def recovered(text: str) -> str | None:
    """`text` with HTML entities and raw `&` and `<` made XML; None when it has none."""
    fixed = _ENTITY.sub(_character, text)
    fixed = _RAW_AMPERSAND.sub("&amp;", fixed)
    fixed = _RAW_LESS.sub("&lt;", fixed)
    return None if fixed == text else fixed


def _character(match: re.Match[str]) -> str:
    name = match[1]
    value = html5.get(name + ";")
    if name in _XML_ENTITIES or value is None:
        return match[0]
    return value.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
