"""SSML, the subset we read, into a `Document` (document.py): spans of text with how to
read them, and breaks.

    parse('<speak>Gate <say-as interpret-as="characters">B12</say-as>.'
          '<break time="700ms"/>Boarding.</speak>', max_chars=2000)
    # (Span("Gate "), Span("B12", say_as=SayAs("characters")), Span("."),
    #  Break(0.7), Span("Boarding."))

The parser is expat (the standard library's) with everything that makes XML dangerous
refused before it can act: a document type declaration (so no entity can be declared:
no "billion laughs", no external entity, no file or URL is ever read), processing
instructions; nesting is bounded by MAX_DEPTH and the size by the door's text limit.
Markup we do not support is refused with what and where, never spoken as tags and never
dropped in silence; `<mark>` (no sound, no events to send) is the one element ignored.
docs/text.md lists the elements and attributes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final, NoReturn
from xml.parsers import expat

from . import say_as as say_as_text
from .document import SAY_AS_KINDS, Break, Document, Piece, SayAs, Span, Style
from .readings import ALPHABETS, Reading, reading

TEXT_FORMATS: Final = ("text", "ssml")  # what a request's text_format may say
MAX_DEPTH: Final = 32  # elements inside one another; real SSML is 3-5 deep
MAX_BREAK_S: Final = 10.0
# <break strength>, in seconds; W3C leaves the durations to the engine (these are Azure's).
BREAK_STRENGTHS: Final[Mapping[str, float]] = {
    "none": 0.0,
    "x-weak": 0.25,
    "weak": 0.5,
    "medium": 0.75,
    "strong": 1.0,
    "x-strong": 1.25,
}
RATES: Final[Mapping[str, float]] = {
    "x-slow": 0.5,
    "slow": 0.75,
    "medium": 1.0,
    "default": 1.0,
    "fast": 1.25,
    "x-fast": 1.5,
}
VOLUMES: Final[Mapping[str, float]] = {
    "silent": 0.0,
    "x-soft": 0.25,
    "soft": 0.5,
    "medium": 1.0,
    "default": 1.0,
    "loud": 1.5,
    "x-loud": 2.0,
}
RATE_RANGE: Final = (0.2, 5.0)  # one <prosody rate>, as a multiplier
VOLUME_RANGE: Final = (0.0, 4.0)  # one <prosody volume>, as a gain

# An XML document whose root is <speak>: after a declaration, a comment or a DOCTYPE (which
# is then refused, not read aloud as tags).
_START: Final = re.compile(r"\s*(?:<\?xml[^>]*\?>\s*)?(?:<!DOCTYPE\s+speak\b|<!--|<speak[\s/>])")
_TIME: Final = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*(ms|s)\s*")
_PERCENT: Final = re.compile(r"\s*([+-]?)(\d+(?:\.\d+)?)\s*%\s*")
_NUMBER: Final = re.compile(r"\s*(\d+(?:\.\d+)?)\s*")
_DECIBELS: Final = re.compile(r"\s*([+-]?\d+(?:\.\d+)?)\s*dB\s*")
_LANGUAGE: Final = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*")
_TERMINATOR: Final = re.compile(r"[.!?;。！？；][\"')\]”’」』]*\s*$")
_ELEMENTS: Final = (
    "speak, p, s, break, say-as, sub, prosody (rate, volume), lang, voice, phoneme, mark"
)


class SsmlError(ValueError):
    """Markup we cannot accept: the message says what is wrong and where."""


def looks_like_ssml(text: str) -> bool:
    """A text that starts with <speak (after an XML declaration, a comment or a DOCTYPE
    naming speak)."""
    return _START.match(text) is not None


def parse(text: str, *, max_chars: int) -> Document:
    """The document `text` describes; SsmlError says what is wrong and where."""
    if len(text) > max_chars:
        raise SsmlError(f"SSML is {len(text)} characters; the limit is {max_chars}")
    if not text.lstrip().startswith("<"):
        raise SsmlError(f"SSML must be a <speak> element; the text starts {text[:20]!r}")
    return _Parser().run(text)


@dataclass
class _Frame:
    name: str
    style: Style
    where: str
    content: list[str] | None = None  # text-only elements (say-as, sub, phoneme) collect it
    attrs: dict[str, str] = field(default_factory=dict)
    first_piece: int = 0  # where its pieces start (p and s end a sentence)


_TEXT_ONLY: Final = ("say-as", "sub", "phoneme", "break", "mark")


class _Parser:
    def __init__(self) -> None:
        self._pieces: list[Piece] = []
        self._stack: list[_Frame] = []
        self._seen_root = False
        parser = expat.ParserCreate()
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.buffer_text = True  # one call per run of text, not one per line
        parser.StartDoctypeDeclHandler = lambda *_: self._fail("a DTD (<!DOCTYPE>) is refused")
        parser.EntityDeclHandler = lambda *_: self._fail("entity declarations are refused")
        parser.ExternalEntityRefHandler = lambda *_: self._fail("external entities are refused")
        parser.ProcessingInstructionHandler = lambda *_: self._fail(
            "processing instructions are not supported"
        )
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.CharacterDataHandler = self._text
        self._parser = parser

    def run(self, text: str) -> Document:
        try:
            self._parser.Parse(text, True)
        except expat.ExpatError as err:
            reason = expat.ErrorString(err.code)
            raise SsmlError(
                f"SSML is not well-formed XML: {reason} at line {err.lineno}, "
                f"column {err.offset + 1}"
            ) from None
        return tuple(self._pieces)

    # --- positions and errors ---------------------------------------------------------

    def _where(self) -> str:
        line, column = self._parser.CurrentLineNumber, self._parser.CurrentColumnNumber + 1
        return f"SSML line {line}, column {column}"

    def _fail(self, reason: str, where: str | None = None) -> NoReturn:
        raise SsmlError(f"{where or self._where()}: {reason}")

    # --- expat's handlers -----------------------------------------------------------------

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        where = self._where()
        if len(self._stack) >= MAX_DEPTH:
            self._fail(f"elements nested more than {MAX_DEPTH} deep")
        parent = self._stack[-1] if self._stack else None
        if parent is None and (name != "speak" or self._seen_root):
            self._fail(f"the document must be one <speak> element, not <{name}>")
        if parent is not None and name == "speak":
            self._fail("<speak> inside <speak>")
        if parent is not None and parent.name in _TEXT_ONLY:
            self._fail(f"<{parent.name}> may hold only text, not <{name}>")
        self._seen_root = True
        style = parent.style if parent is not None else Style()
        start = _STARTS.get(name)
        if start is None:
            self._refuse(name)
        frame = _Frame(name, style, where, attrs=dict(attrs), first_piece=len(self._pieces))
        start(self, frame)
        self._stack.append(frame)

    def _refuse(self, name: str) -> NoReturn:
        if name == "audio":
            self._fail("<audio> is not supported: no sound file or URL is ever fetched")
        self._fail(f"<{name}> is not supported (supported: {_ELEMENTS})")

    def _end(self, name: str) -> None:
        frame = self._stack.pop()
        finish = _ENDS.get(name)
        if finish is not None:
            finish(self, frame)

    def _text(self, data: str) -> None:
        frame = self._stack[-1]
        if frame.content is not None:
            frame.content.append(data)
        elif frame.name in ("break", "mark"):
            if data.strip():
                self._fail(f"<{frame.name}> must be empty")
        else:
            self._pieces.append(Span(data, frame.style, where=frame.where))

    # --- elements ---------------------------------------------------------------------------

    def _attributes(self, frame: _Frame, allowed: tuple[str, ...], required: int = 0) -> None:
        """Refuse attributes not in `allowed`; the first `required` of them must be there."""
        for key in frame.attrs:
            if key not in allowed and not _ignored_attribute(frame.name, key):
                what = f"attribute {key!r} of <{frame.name}>"
                expected = ", ".join(allowed) if allowed else "none"
                self._fail(f"{what} is not supported (supported: {expected})", frame.where)
        for key in allowed[:required]:
            if not frame.attrs.get(key, "").strip():
                self._fail(f"<{frame.name}> needs a {key} attribute", frame.where)

    def _speak(self, frame: _Frame) -> None:
        # xml:lang on <speak> is the document's language: it picks no voice here (the
        # request does), so Mandarin inside an en-US document still goes to its voice.
        self._attributes(frame, ("version", "xml:lang", "xml:base"))

    def _block(self, frame: _Frame) -> None:
        self._attributes(frame, ("xml:lang",))
        if "xml:lang" in frame.attrs:
            self._lang(frame)

    def _lang(self, frame: _Frame) -> None:
        self._attributes(frame, ("xml:lang",), required=1)
        language = frame.attrs["xml:lang"].strip()
        if not _LANGUAGE.fullmatch(language):
            self._fail(f"xml:lang {language!r} is not a language tag (en-US, zh-CN)", frame.where)
        frame.style = replace(frame.style, language=language, voice=None)

    def _voice(self, frame: _Frame) -> None:
        self._attributes(frame, ("name",), required=1)
        frame.style = replace(frame.style, voice=frame.attrs["name"].strip(), language=None)

    def _prosody(self, frame: _Frame) -> None:
        for key in ("pitch", "range", "contour", "duration"):
            if key in frame.attrs:
                self._fail(f"prosody {key} is not supported (only rate and volume)", frame.where)
        self._attributes(frame, ("rate", "volume"))
        style = frame.style
        if "rate" in frame.attrs:
            rate = self._scale(frame, "rate", RATES, RATE_RANGE, _rate_value)
            style = replace(style, rate=style.rate * rate)
        if "volume" in frame.attrs:
            volume = self._scale(frame, "volume", VOLUMES, VOLUME_RANGE, _volume_value)
            style = replace(style, volume=style.volume * volume)
        frame.style = style

    def _scale(
        self,
        frame: _Frame,
        key: str,
        names: Mapping[str, float],
        bounds: tuple[float, float],
        value_of: Callable[[str], float | None],
    ) -> float:
        text = frame.attrs[key].strip()
        value = names.get(text)
        if value is None:
            value = value_of(text)
        if value is None:
            forms = "80%, +20%, 1.5" if key == "rate" else "+6dB, -3dB, 50%"
            choices = f"{', '.join(names)}, or {forms}"
            self._fail(f"prosody {key} {text!r} is not one of {choices}", frame.where)
        low, high = bounds
        if not low <= value <= high:
            self._fail(f"prosody {key} {text!r} is outside {low:g}-{high:g} times", frame.where)
        return value

    def _break(self, frame: _Frame) -> None:
        self._attributes(frame, ("time", "strength"))
        time, strength = frame.attrs.get("time"), frame.attrs.get("strength")
        if time is not None:  # W3C: time wins over strength
            seconds = self._seconds(time, frame.where)
        elif strength is not None:
            if strength.strip() not in BREAK_STRENGTHS:
                choices = ", ".join(BREAK_STRENGTHS)
                self._fail(f"break strength {strength!r} is not one of {choices}", frame.where)
            seconds = BREAK_STRENGTHS[strength.strip()]
        else:
            seconds = BREAK_STRENGTHS["medium"]
        self._pieces.append(Break(seconds, frame.where))

    def _seconds(self, text: str, where: str) -> float:
        match = _TIME.fullmatch(text)
        if match is None:
            self._fail(f"break time {text!r} is not a duration like 500ms or 1.5s", where)
        seconds = float(match[1]) / (1000 if match[2] == "ms" else 1)
        if seconds > MAX_BREAK_S:
            self._fail(f"break time {text!r} is longer than {MAX_BREAK_S:g} s", where)
        return seconds

    def _say_as(self, frame: _Frame) -> None:
        self._attributes(frame, ("interpret-as", "format"), required=1)
        kind = frame.attrs["interpret-as"].strip()
        if kind not in SAY_AS_KINDS:
            choices = ", ".join(SAY_AS_KINDS)
            self._fail(f"say-as interpret-as {kind!r} is not one of {choices}", frame.where)
        frame.content = []

    def _sub(self, frame: _Frame) -> None:
        self._attributes(frame, ("alias",), required=1)
        frame.content = []

    def _phoneme(self, frame: _Frame) -> None:
        self._attributes(frame, ("alphabet", "ph"), required=2)
        alphabet = frame.attrs["alphabet"].strip()
        if alphabet not in ALPHABETS:
            choices = ", ".join(ALPHABETS)
            self._fail(f"phoneme alphabet {alphabet!r} is not one of {choices}", frame.where)
        frame.content = []

    def _mark(self, frame: _Frame) -> None:
        self._attributes(frame, ("name",))  # ignored: we send no events at marks

    # --- ends -----------------------------------------------------------------------------------

    def _end_say_as(self, frame: _Frame) -> None:
        text = "".join(frame.content or [])
        format_ = frame.attrs.get("format")
        said = SayAs(frame.attrs["interpret-as"].strip(), format_.strip() if format_ else None)
        try:
            say_as_text.check(said, text)
        except ValueError as err:
            self._fail(f"say-as {said.kind}: {err}", frame.where)
        self._pieces.append(Span(text, frame.style, say_as=said, where=frame.where))

    def _end_sub(self, frame: _Frame) -> None:
        self._pieces.append(Span(frame.attrs["alias"], frame.style, where=frame.where))

    def _end_phoneme(self, frame: _Frame) -> None:
        reading = self._reading(frame)
        written = "".join(frame.content or [])
        self._pieces.append(Span(written, frame.style, reading=reading, where=frame.where))

    def _reading(self, frame: _Frame) -> Reading:
        try:
            return reading(frame.attrs["alphabet"].strip(), frame.attrs["ph"])
        except ValueError as err:
            self._fail(f"phoneme ph {err}", frame.where)

    def _end_sentence(self, frame: _Frame) -> None:
        """<p> and <s> end a sentence: a period where their text ends without a mark, and
        a space, so that the next one starts a word."""
        spans = [p for p in self._pieces[frame.first_piece :] if isinstance(p, Span)]
        said = [s for s in spans if s.text.strip() or not s.plain]
        if not said:
            return
        ended = said[-1].plain and _TERMINATOR.search(said[-1].text)
        self._pieces.append(Span(" " if ended else ". ", said[-1].style))


def _ignored_attribute(element: str, key: str) -> bool:
    """Namespace declarations and schema hints on <speak>: they change nothing here."""
    namespaced = key == "xmlns" or key.startswith(("xmlns:", "xsi:"))
    return element == "speak" and namespaced


def _rate_value(text: str) -> float | None:
    percent = _percent(text)
    if percent is not None:
        return percent
    number = _NUMBER.fullmatch(text)
    return None if number is None else float(number[1])


def _percent(text: str) -> float | None:
    """ "80%" -> 0.8, "+20%" -> 1.2, "-20%" -> 0.8."""
    match = _PERCENT.fullmatch(text)
    if match is None:
        return None
    sign, share = match[1], float(match[2]) / 100
    return 1 + share if sign == "+" else 1 - share if sign == "-" else share


def _volume_value(text: str) -> float | None:
    decibels = _DECIBELS.fullmatch(text)
    if decibels is not None:
        return float(10 ** (float(decibels[1]) / 20))
    return _percent(text)


_Handler = Callable[[_Parser, _Frame], None]
_STARTS: Final[Mapping[str, _Handler]] = {
    "speak": _Parser._speak,
    "p": _Parser._block,
    "s": _Parser._block,
    "lang": _Parser._lang,
    "voice": _Parser._voice,
    "prosody": _Parser._prosody,
    "break": _Parser._break,
    "say-as": _Parser._say_as,
    "sub": _Parser._sub,
    "phoneme": _Parser._phoneme,
    "mark": _Parser._mark,
}
_ENDS: Final[Mapping[str, _Handler]] = {
    "say-as": _Parser._end_say_as,
    "sub": _Parser._end_sub,
    "phoneme": _Parser._end_phoneme,
    "p": _Parser._end_sentence,
    "s": _Parser._end_sentence,
}
