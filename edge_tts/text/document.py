"""A text with instructions for reading it: what SSML parses into (ssml.py) and the lexicon
rewrites (lexicon.py), and what the router turns into chunks (speech/routing.py).

A `Document` is a sequence of `Span`s, pieces of text each with how to read them,
`Break`s, exact silences, and `Audio`, a sound (or the text read instead). A plain text
is one span with no instructions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from .readings import Reading

SAY_AS_KINDS: Final = (
    "characters",
    "spell-out",
    "digits",
    "cardinal",
    "number",
    "ordinal",
    "date",
    "time",
    "telephone",
    "currency",
    # the vendors' (say_as_words.py)
    "verbatim",
    "fraction",
    "unit",
    "address",
    "name",
    "duration",
    "expletive",
    "bleep",
    "interjection",
)


@dataclass(frozen=True)
class Style:
    """How a span is read besides its words. `voice` (a configured voice's name) or
    `language` force who reads it, else the router goes by its writing system; `rate`
    multiplies the request's speed, `volume` its gain. `languages` and `gender` are a
    <voice>'s wishes (routing.py)."""

    language: str | None = None
    voice: str | None = None
    rate: float = 1.0
    volume: float = 1.0
    # <voice languages="zh-CN en-US" gender="female">: the languages after `language`,
    # tried in order where no voice speaks it; the voice of that gender among them.
    languages: tuple[str, ...] = ()
    gender: str | None = None


PLAIN: Final = Style()


@dataclass(frozen=True)
class SayAs:
    kind: str  # one of SAY_AS_KINDS
    format: str | None = None  # a date's field order: "mdy", "ymd", ...
    detail: str | None = None  # W3C's detail: for a date "1"/"2" (see say_as.py)


@dataclass(frozen=True)
class Span:
    """Text read one way. With `reading`, `text` is only what is written (for people) and
    the reading is said; with `say_as`, the text is read as that kind of thing."""

    text: str
    style: Style = PLAIN
    say_as: SayAs | None = None
    reading: Reading | None = None
    # Where it was written, for errors: "SSML line 3, column 5", "lexicon.txt line 7".
    where: str = field(default="", compare=False, repr=False)

    @property
    def plain(self) -> bool:
        return self.say_as is None and self.reading is None


@dataclass(frozen=True)
class Break:
    seconds: float
    where: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True)
class Audio:
    """SSML's `<audio src>`: the sound `src` names in the sounds directory (text.sounds_dir)
    when there is one, else its `fallback` content is read (the router decides)."""

    src: str
    fallback: tuple[Span | Break, ...] = ()
    where: str = field(default="", compare=False, repr=False)


Piece = Span | Break | Audio
Document = tuple[Piece, ...]


def plain_document(text: str) -> Document:
    return (Span(text),)


def spoken_digest(document: Document | str) -> str:
    """A digest of what is said: the same for a plain text and a document that says
    exactly it (`<speak>Door open.</speak>` and "Door open."), so a request's dedupe key
    follows the speech, not its markup."""
    return hashlib.sha256(_canonical(document).encode("utf-8")).hexdigest()


def _canonical(document: Document | str) -> str:
    if isinstance(document, str):
        return document
    if all(isinstance(p, Span) and p.plain and p.style == PLAIN for p in document):
        return "".join(p.text for p in document if isinstance(p, Span))
    return repr(_merged(document))


def _merged(document: Sequence[Piece]) -> list[Piece]:
    """Neighbouring plain spans of one style as one: the markup that split them (an
    element without effect, a comment) says nothing."""
    merged: list[Piece] = []
    for piece in document:
        last = merged[-1] if merged else None
        if (
            isinstance(piece, Span)
            and isinstance(last, Span)
            and piece.plain
            and last.plain
            and piece.style == last.style
        ):
            merged[-1] = Span(last.text + piece.text, last.style)
        else:
            merged.append(piece)
    return merged
