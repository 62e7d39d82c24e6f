"""SSML into a `Document` (document.py): spans of text with how to read them, and breaks.

    parse('<speak>Gate <say-as interpret-as="characters">B12</say-as>.'
          '<break time="700ms"/>Boarding.</speak>', max_chars=2000)
    # (Span("Gate "), Span("B12", say_as=SayAs("characters")), Span("."),
    #  Break(0.7), Span("Boarding."))

Lenient as the W3C and every vendor are: an element or attribute we do not support is
no error; its content is read as if it were not there (`<mstts:express-as>`, `<par>`,
`<audio>`'s fallback), and a note says what was ignored (`parse_noted`, logged at debug,
shown by `edge-ttsd explain`). What is never said (`<desc>`, `<metadata>`) is dropped.
Markup that expat refuses is tried once more with LLM-style HTML made XML
(ssml_recover.py). Still refused, with where: XML that cannot be recovered, and
everything that makes XML dangerous: a document type declaration (so no entity can be
declared, no external entity, file or URL is ever read), processing instructions;
nesting is bounded by MAX_DEPTH and the size by the door's text limit.
docs/text.md lists the elements and attributes.
"""

from __future__ import annotations

import logging
import re
from typing import Final, NoReturn
from xml.parsers import expat

from .document import Document, Span, Style
from .ssml_elements import ENDS, STARTS, Elements, Frame, SsmlError
from .ssml_recover import recovered

__all__ = ["TEXT_FORMATS", "SsmlError", "looks_like_ssml", "parse", "parse_noted"]

log = logging.getLogger(__name__)

TEXT_FORMATS: Final = ("text", "ssml")  # what a request's text_format may say
MAX_DEPTH: Final = 32  # elements inside one another; real SSML is 3-5 deep
SSML_NAMESPACE: Final = "http://www.w3.org/2001/10/synthesis"

# An XML document whose root is <speak> (or <x:speak>): after a BOM, whitespace, a
# declaration, a comment or a DOCTYPE (which is then refused, not read aloud as tags).
_START: Final = re.compile(
    r"\ufeff?\s*(?:<\?xml[^>]*\?>\s*)?(?:<!DOCTYPE\s+speak\b|<!--|<(?:[\w.-]+:)?speak[\s/>])"
)
# Elements whose content is never said: a description, metadata, a lexicon's address.
_MUTED: Final = frozenset({"desc", "meta", "metadata", "lexicon", "amazon:breath"})
_TEXT_ONLY: Final = ("say-as", "sub", "phoneme", "break", "mark")


def looks_like_ssml(text: str) -> bool:
    """A text that starts with <speak (after a BOM, whitespace, an XML declaration, a
    comment or a DOCTYPE naming speak), the root's name with a prefix or not. Every door
    calls this one function."""
    return _START.match(text) is not None


def parse(text: str, *, max_chars: int) -> Document:
    """The document `text` describes; SsmlError says what is wrong and where."""
    document, notes = parse_noted(text, max_chars=max_chars)
    for note in notes:
        log.debug("%s", note)
    return document


def parse_noted(text: str, *, max_chars: int) -> tuple[Document, tuple[str, ...]]:
    """The document, and a note for each thing in it that was ignored or recovered."""
    if len(text) > max_chars:
        raise SsmlError(f"SSML is {len(text)} characters; the limit is {max_chars}")
    try:  # a lone surrogate (undecodable bytes, a JSON "\udce9") is no character
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise SsmlError(f"SSML is not valid UTF-8 text (character {err.start})") from None
    text = _without_prolog_space(text)
    if not text.lstrip().startswith("<"):
        raise SsmlError(f"SSML must be a <speak> element; the text starts {text[:20]!r}")
    try:
        return _Parser().run(text)
    except _NotWellFormed as first:
        fixed = recovered(text)
        if fixed is None:
            raise first.error from None
        try:
            document, notes = _Parser().run(fixed)
        except _NotWellFormed:
            raise first.error from None
        return document, ("SSML: HTML entities or a raw & or < read as text", *notes)


def _without_prolog_space(text: str) -> str:
    """A BOM dropped, and the whitespace before an XML declaration (which expat wants at
    the very start); whitespace before <speak> is XML's own and keeps line numbers."""
    text = text.removeprefix("\ufeff")
    stripped = text.lstrip()
    return stripped if stripped.startswith("<?xml") else text


class _NotWellFormed(Exception):
    def __init__(self, error: SsmlError) -> None:
        self.error = error


class _Parser(Elements):
    """expat, the nesting of the elements and their text; what each element does is in
    ssml_elements.py."""

    def __init__(self) -> None:
        super().__init__()
        self._stack: list[Frame] = []
        self._prefixes: set[str] = set()  # bound to the SSML namespace: <ssml:speak>
        self._seen_root = False
        parser = expat.ParserCreate()
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.buffer_text = True  # one call per run of text, not one per line
        parser.StartDoctypeDeclHandler = lambda *_: self._refuse("a DTD (<!DOCTYPE>) is refused")
        parser.EntityDeclHandler = lambda *_: self._refuse("entity declarations are refused")
        parser.ExternalEntityRefHandler = lambda *_: self._refuse("external entities are refused")
        parser.ProcessingInstructionHandler = lambda *_: self._refuse(
            "processing instructions are not supported"
        )
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.CharacterDataHandler = self._text
        self._parser = parser

    def run(self, text: str) -> tuple[Document, tuple[str, ...]]:
        try:
            self._parser.Parse(text, True)
        except expat.ExpatError as err:
            reason = expat.ErrorString(err.code)
            where = f"line {err.lineno}, column {err.offset + 1}"
            error = SsmlError(f"SSML is not well-formed XML: {reason} at {where}")
            raise _NotWellFormed(error) from None
        return tuple(self._pieces), tuple(self._notes)

    def _where(self) -> str:
        line, column = self._parser.CurrentLineNumber, self._parser.CurrentColumnNumber + 1
        return f"SSML line {line}, column {column}"

    def _refuse(self, reason: str) -> NoReturn:
        """Refuse what is at the parser's position."""
        self._fail(reason, self._where())

    # --- expat's handlers -----------------------------------------------------------------

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        where = self._where()
        if len(self._stack) >= MAX_DEPTH:
            self._refuse(f"elements nested more than {MAX_DEPTH} deep")
        self._prefixes.update(
            key[6:] for key, uri in attrs.items() if key[:6] == "xmlns:" and uri == SSML_NAMESPACE
        )
        name = self._local(name)
        parent = self._stack[-1] if self._stack else None
        self._check_place(name, parent)
        self._seen_root = True
        style = parent.style if parent is not None else Style()
        frame = Frame(name, style, where, attrs=dict(attrs), first_piece=len(self._pieces))
        if (parent is not None and parent.muted) or name in _MUTED:
            frame.muted = True
        elif name == "speak" and parent is not None:
            frame.ignored = True  # a document inside Google's <media>: its content is read
        else:
            STARTS.get(name, Elements._unknown)(self, frame)
        self._stack.append(frame)

    def _local(self, name: str) -> str:
        prefix, _, local = name.rpartition(":")
        return local if prefix in self._prefixes else name

    def _check_place(self, name: str, parent: Frame | None) -> None:
        if parent is None and (name != "speak" or self._seen_root):
            self._refuse(f"the document must be one <speak> element, not <{name}>")
        if parent is not None and name == "speak" and all(f.name != "media" for f in self._stack):
            self._refuse("<speak> inside <speak>")
        if parent is not None and parent.name in _TEXT_ONLY and not parent.ignored:
            self._refuse(f"<{parent.name}> may hold only text, not <{name}>")

    def _end(self, name: str) -> None:
        frame = self._stack.pop()
        finish = ENDS.get(frame.name)
        if finish is not None and not (frame.ignored or frame.muted):
            finish(self, frame)

    def _text(self, data: str) -> None:
        frame = self._stack[-1]
        if frame.muted:
            return
        if frame.content is not None:
            frame.content.append(data)
        elif frame.name in ("break", "mark") and not frame.ignored:
            if data.strip():
                self._refuse(f"<{frame.name}> must be empty")
        else:
            self._pieces.append(Span(data, frame.style, where=frame.where))
