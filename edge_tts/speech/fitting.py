"""Readings the voice that reads them cannot say, made lenient as the W3C and the vendors
are: a vendor's IPA symbol espeak-ng writes otherwise (ASCII g, ʧ, ɝ) is read as
espeak's (text/readings.IPA_EQUIVALENTS); a reading still not the voice's is dropped and
the element's text is read instead, by the voice of its writing system, with a note
(logged at debug, shown by `edge-ttsd explain`). Lexicon entries never get here unfit:
they are checked against every voice when the lexicon loads (lexicon_check.py)."""

from __future__ import annotations

from dataclasses import replace

from ..text.document import Span
from ..text.readings import Reading, equivalent
from ..voice.base import SpeechVoice


def fit(span: Span, voice: SpeechVoice, notes: list[str]) -> Span:
    """`span`, its reading one `voice` says: as written, as its equivalent, or the span's
    written text instead; a note when it is not as written."""
    if span.reading is None or _fault(voice, span.reading) is None:
        return span
    written = f"{_at(span)}{span.reading.alphabet} {span.reading.phonemes!r}"
    other = equivalent(span.reading)
    if other != span.reading and _fault(voice, other) is None:
        notes.append(f"{written} read as {other.phonemes!r} (the voice's symbols)")
        return replace(span, reading=other)
    notes.append(f"{written}: {_fault(voice, span.reading)}; {as_text(span)}")
    return plain(span)


def plain(span: Span) -> Span:
    """The span as its written text."""
    return Span(span.text, span.style, where=span.where)


def as_text(span: Span) -> str:
    return f"its text {span.text!r} is read instead"


def _at(span: Span) -> str:
    return f"{span.where}: " if span.where else ""


def _fault(voice: SpeechVoice, reading: Reading) -> str | None:
    """Why `voice` cannot say `reading` (None: it can)."""
    try:
        voice.ids(reading.notation())
    except ValueError as err:
        return str(err)
    return None
