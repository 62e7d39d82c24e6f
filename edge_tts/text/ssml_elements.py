"""The SSML elements we read, each as what it does to the document (ssml.py runs expat
and calls these); ssml_values.py reads their attributes' values."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, NoReturn

from . import say_as as say_as_text
from . import ssml_values as values
from .document import SAY_AS_KINDS, Audio, Break, Piece, SayAs, Span, Style
from .readings import ALPHABETS, Reading, reading
from .xsampa import to_ipa

GENDERS: Final = ("female", "male", "neutral")  # config.sections.GENDERS: text cannot import it
_LANGUAGE: Final = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*")
_TERMINATOR: Final = re.compile(r"[.!?;。！？；][\"')\]”’」』]*\s*$")


class SsmlError(ValueError):
    """Markup we cannot accept: the message says what is wrong and where."""


@dataclass
class Frame:
    name: str
    style: Style
    where: str
    content: list[str] | None = None  # text-only elements (say-as, sub, phoneme) collect it
    attrs: dict[str, str] = field(default_factory=dict)
    first_piece: int = 0  # where its pieces start (p and s end a sentence)
    ignored: bool = False  # read as its content (an element we do not support)
    muted: bool = False  # its content is not said


class Elements:
    """What each element does: its start checks its attributes and sets the style of its
    content, its end (for the text-only ones and sentences) adds the pieces."""

    def __init__(self) -> None:
        self._pieces: list[Piece] = []
        self._notes: list[str] = []

    def _fail(self, reason: str, where: str) -> NoReturn:
        raise SsmlError(f"{where}: {reason}")

    def _note(self, frame: Frame, what: str) -> None:
        self._notes.append(f"{frame.where}: {what}")

    def _unknown(self, frame: Frame) -> None:
        frame.ignored = True
        self._note(frame, f"<{frame.name}> is not supported: its content is read")

    def _attributes(self, frame: Frame, allowed: tuple[str, ...], required: int = 0) -> None:
        """Note attributes not in `allowed` (ignored); the first `required` must be there."""
        for key in frame.attrs:
            if key not in allowed and not _ignored_attribute(key):
                self._note(frame, f"attribute {key!r} of <{frame.name}> is ignored")
        for key in allowed[:required]:
            if not frame.attrs.get(key, "").strip():
                self._fail(f"<{frame.name}> needs a {key} attribute", frame.where)

    def _speak(self, frame: Frame) -> None:
        # xml:lang on <speak> is the document's language: it picks no voice here (the
        # request does), so Mandarin inside an en-US document still goes to its voice.
        self._attributes(frame, ("version", "xml:lang", "xml:base"))

    def _block(self, frame: Frame) -> None:
        self._attributes(frame, ("xml:lang",))
        if "xml:lang" in frame.attrs:
            self._lang(frame)

    def _lang(self, frame: Frame) -> None:
        self._attributes(frame, ("xml:lang",), required=1)
        language = frame.attrs["xml:lang"].strip()
        if not _LANGUAGE.fullmatch(language):
            self._fail(f"xml:lang {language!r} is not a language tag (en-US, zh-CN)", frame.where)
        frame.style = replace(frame.style, language=language, voice=None, languages=())

    def _voice(self, frame: Frame) -> None:
        """A voice by name (one not configured here: the router picks, by the language
        its name starts with or the text's writing system), or by its languages (the
        first one a voice speaks) and gender (voices.*.gender); age and variant choose
        nothing: there is no such data on our voices. The router says which wins."""
        self._attributes(frame, ("name", "languages", "xml:lang", "gender"))
        name = frame.attrs.get("name", "").strip()
        spoken = (frame.attrs.get("languages") or frame.attrs.get("xml:lang") or "").split()
        languages = tuple(code for code in spoken if _LANGUAGE.fullmatch(code))
        gender = frame.attrs.get("gender", "").strip().lower() or None
        if gender not in (None, *GENDERS):
            self._note(frame, f"voice gender {gender!r} is not female, male or neutral: ignored")
            gender = None
        if name:
            frame.style = replace(frame.style, voice=name, language=None, languages=())
        elif languages:
            frame.style = replace(
                frame.style, language=languages[0], languages=languages[1:], voice=None
            )
        if gender is not None:
            frame.style = replace(frame.style, gender=gender)

    def _prosody(self, frame: Frame) -> None:
        self._attributes(frame, ("rate", "volume"))  # pitch, range, contour, duration: noted
        style = frame.style
        if "rate" in frame.attrs:
            rate = self._scale(frame, "rate", values.RATES, values.RATE_RANGE, values.rate_value)
            style = replace(style, rate=style.rate * rate)
        if "volume" in frame.attrs:
            bounds, value_of = values.VOLUME_RANGE, values.volume_value
            volume = self._scale(frame, "volume", values.VOLUMES, bounds, value_of)
            style = replace(style, volume=style.volume * volume)
        frame.style = style

    def _scale(
        self,
        frame: Frame,
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

    def _emphasis(self, frame: Frame) -> None:
        self._attributes(frame, ("level",))
        level = frame.attrs.get("level", "moderate").strip()
        if level not in values.EMPHASIS:
            self._note(frame, f"emphasis level {level!r} is not known: read as moderate")
            level = "moderate"
        rate, volume = values.EMPHASIS[level]
        style = frame.style
        frame.style = replace(style, rate=style.rate * rate, volume=style.volume * volume)

    def _audio(self, frame: Frame) -> None:
        """A sound from the sounds directory, or its content (the router decides)."""
        self._attributes(frame, ("src",))  # clipBegin, soundLevel, repeatCount...: noted
        if not frame.attrs.get("src", "").strip():
            frame.ignored = True
            self._note(frame, "<audio> without a src: its content is read")

    def _break(self, frame: Frame) -> None:
        self._attributes(frame, ("time", "strength"))
        time, strength = frame.attrs.get("time"), frame.attrs.get("strength")
        if time is not None:  # W3C: time wins over strength
            seconds = self._seconds(time, frame.where)
        elif strength is not None:
            if strength.strip() not in values.BREAK_STRENGTHS:
                choices = ", ".join(values.BREAK_STRENGTHS)
                self._fail(f"break strength {strength!r} is not one of {choices}", frame.where)
            seconds = values.BREAK_STRENGTHS[strength.strip()]
        else:
            seconds = values.BREAK_STRENGTHS["medium"]
        self._pieces.append(Break(seconds, frame.where))

    def _seconds(self, text: str, where: str) -> float:
        seconds = values.seconds(text)
        if seconds is None:
            self._fail(f"break time {text!r} is not a duration like 500ms or 1.5s", where)
        if seconds > values.MAX_BREAK_S:
            self._fail(f"break time {text!r} is longer than {values.MAX_BREAK_S:g} s", where)
        return seconds

    def _say_as(self, frame: Frame) -> None:
        # language (Google's, on currency): the voice that reads the span decides.
        self._attributes(frame, ("interpret-as", "format", "detail", "language"), required=1)
        kind = frame.attrs["interpret-as"].strip()
        if kind not in SAY_AS_KINDS:
            frame.ignored = True
            self._note(frame, f"say-as interpret-as {kind!r} is not supported: read as text")
            return
        frame.content = []

    def _sub(self, frame: Frame) -> None:
        self._attributes(frame, ("alias",), required=1)
        frame.content = []

    def _phoneme(self, frame: Frame) -> None:
        self._attributes(frame, ("alphabet", "ph"), required=2)
        alphabet = frame.attrs["alphabet"].strip()
        if alphabet == "x-sampa":
            frame.attrs.update(alphabet="ipa", ph=to_ipa(frame.attrs["ph"]))
        elif alphabet not in ALPHABETS:
            frame.ignored = True
            self._note(frame, f"phoneme alphabet {alphabet!r} is not supported: text read")
            return
        frame.content = []

    def _mark(self, frame: Frame) -> None:
        self._attributes(frame, ("name",))  # ignored: we send no events at marks

    # --- ends -----------------------------------------------------------------------------------

    def _end_say_as(self, frame: Frame) -> None:
        text = "".join(frame.content or [])
        format_, detail = frame.attrs.get("format"), frame.attrs.get("detail")
        said = SayAs(
            frame.attrs["interpret-as"].strip(),
            format_.strip() if format_ else None,
            detail.strip() if detail else None,
        )
        try:
            say_as_text.check(said, text)
        except ValueError as err:
            self._fail(f"say-as {said.kind}: {err}", frame.where)
        self._pieces.append(Span(text, frame.style, say_as=said, where=frame.where))

    def _end_sub(self, frame: Frame) -> None:
        self._pieces.append(Span(frame.attrs["alias"], frame.style, where=frame.where))

    def _end_phoneme(self, frame: Frame) -> None:
        reading = self._reading(frame)
        written = "".join(frame.content or [])
        self._pieces.append(Span(written, frame.style, reading=reading, where=frame.where))

    def _reading(self, frame: Frame) -> Reading:
        try:
            return reading(frame.attrs["alphabet"].strip(), frame.attrs["ph"])
        except ValueError as err:
            self._fail(f"phoneme ph {err}", frame.where)

    def _end_audio(self, frame: Frame) -> None:
        """The pieces since its start become its fallback; an <audio> inside it is read
        as its own fallback (a sound instead of a sound is not worth the rules)."""
        fallback: list[Span | Break] = []
        for piece in self._pieces[frame.first_piece :]:
            fallback.extend(piece.fallback if isinstance(piece, Audio) else (piece,))
        del self._pieces[frame.first_piece :]
        self._pieces.append(Audio(frame.attrs["src"].strip(), tuple(fallback), frame.where))

    def _end_sentence(self, frame: Frame) -> None:
        """<p> and <s> end a sentence: a period where their text ends without a mark, and
        a space, so that the next one starts a word. Where an <audio>'s fallback ends
        it, the end goes into the fallback: said when the fallback is, as the same text
        outside <audio> would be (else it ran on into the next sentence)."""
        pieces = self._pieces
        for i in range(len(pieces) - 1, frame.first_piece - 1, -1):
            piece = pieces[i]
            if isinstance(piece, Audio) and (end := _sentence_end(piece.fallback)):
                pieces[i] = replace(piece, fallback=(*piece.fallback, end))
                return
            if isinstance(piece, Span) and _said(piece):
                break
        end = _sentence_end(pieces[frame.first_piece :])
        if end is not None:
            pieces.append(end)


def _said(span: Span) -> bool:
    return bool(span.text.strip()) or not span.plain


def _sentence_end(pieces: Sequence[Piece]) -> Span | None:
    """What ends a sentence of these pieces' spans: a period where their text ends
    without a mark, then a space; None when they say nothing."""
    said = [p for p in pieces if isinstance(p, Span) and _said(p)]
    if not said:
        return None
    ended = said[-1].plain and _TERMINATOR.search(said[-1].text)
    return Span(" " if ended else ". ", said[-1].style)


def _ignored_attribute(key: str) -> bool:
    """Namespace declarations, schema hints and ids: they change nothing here."""
    return key in ("xmlns", "xml:id") or key.startswith(("xmlns:", "xsi:"))


_Handler = Callable[[Elements, Frame], None]
STARTS: Final[Mapping[str, _Handler]] = {
    "speak": Elements._speak,
    "p": Elements._block,
    "s": Elements._block,
    "lang": Elements._lang,
    "voice": Elements._voice,
    "prosody": Elements._prosody,
    "emphasis": Elements._emphasis,
    "audio": Elements._audio,
    "break": Elements._break,
    "say-as": Elements._say_as,
    "sub": Elements._sub,
    "phoneme": Elements._phoneme,
    "mark": Elements._mark,
}
ENDS: Final[Mapping[str, _Handler]] = {
    "say-as": Elements._end_say_as,
    "sub": Elements._end_sub,
    "phoneme": Elements._end_phoneme,
    "audio": Elements._end_audio,
    "p": Elements._end_sentence,
    "s": Elements._end_sentence,
}
