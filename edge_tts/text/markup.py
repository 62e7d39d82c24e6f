"""Plain text as language models and chat tools write it, without the markup a listener
should not hear: markdown emphasis, headings, list bullets, quotes, rules, code fences,
links, and inline HTML tags. Without this, "**Warning:** door open" was read "asterisk
asterisk warning colon", "<b>garage</b>" "b garage slash b".

    without_markup("## Summary\\n- **Front** door: *open*\\n- see [the log](http://x)")
    # 'Summary.\\nFront door: open.\\nsee the log.'

A heading or a list item is a line of its own, so it ends a sentence: a period is added
where it ends without one. Only plain text is stripped, never SSML; `text.strip_markup`
(config/sections.py) off keeps it all literal.
"""

from __future__ import annotations

import re
from html.entities import html5
from typing import Final

# HTML elements an LLM or a web page puts in text; another name in <...> is not a tag
# here ("x<y and z>w" is a comparison).
_HTML_NAMES: Final = (
    "a|abbr|b|big|blockquote|br|center|code|del|div|em|font|h[1-6]|hr|i|img|ins|kbd|li|"
    "mark|ol|p|pre|q|s|samp|small|span|strike|strong|sub|sup|table|tbody|td|th|thead|"
    "tr|tt|u|ul|var"
)
_TAG: Final = re.compile(rf"</?(?:{_HTML_NAMES})(?:\s[^<>]*)?/?>", re.IGNORECASE)
_ENTITY: Final = re.compile(r"&([A-Za-z][A-Za-z0-9]*;)")
_FENCE: Final = re.compile(r"^[ \t]*(?:```|~~~)[^\n]*$", re.MULTILINE)
_RULE: Final = re.compile(r"^[ \t]*(?:[-*_][ \t]*){3,}$", re.MULTILINE)
# A line that is a heading, a bullet item or a quote: its mark, and its text.
# Not "- 5 degrees" nor "> 5 min": a sign before a number is the number's.
_LINE_MARK: Final = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]+|[-*+•][ \t]+(?![\d.])|>[ \t]?(?![\d\s=.-]))(?=\S)(.*)$", re.M
)
_TERMINATED: Final = re.compile(r"[.!?;:。！？；：,，]\W*$")
_IMAGE_OR_LINK: Final = re.compile(r"!?\[([^\]\n]*)\]\([^)\s]*\)")
_EMPHASIS: Final = (
    re.compile(r"(?<![\w*])(\*\*|__)(?!\s)(.+?)(?<!\s)\1(?![\w*])"),  # **bold**, __bold__
    re.compile(r"(?<![\w*])([*_])(?![\s*_])(.+?)(?<![\s*_])\1(?![\w*])"),  # *it*, _it_
    re.compile(r"(~~)(?!\s)(.+?)(?<!\s)~~"),  # ~~struck~~
    re.compile(r"(`+)(?!\s)(.+?)(?<!\s)\1"),  # `code`
)


def without_markup(text: str) -> str:
    """`text` with its markdown and HTML markup dropped and its words kept."""
    text = _TAG.sub(lambda m: " " if m[0][1:3].lower() in ("br", "p>", "p ") else "", text)
    text = _ENTITY.sub(lambda m: html5.get(m[1], m[0]), text)
    text = _FENCE.sub("", text)
    text = _RULE.sub("", text)
    text = _LINE_MARK.sub(_line, text)
    text = _IMAGE_OR_LINK.sub(r"\1", text)
    for pattern in _EMPHASIS:
        text = pattern.sub(r"\2", text)
    return text


def _line(match: re.Match[str]) -> str:
    """A heading or an item's text, ended as a sentence."""
    line = match[1].rstrip()
    return line if _TERMINATED.search(line) else line + "."
