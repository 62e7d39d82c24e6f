"""Readings the voice that reads them cannot say, made lenient as the W3C and the vendors
are: a vendor's IPA symbol espeak-ng writes otherwise (ASCII g, ʧ, ɝ) is read as
espeak's (text/readings.IPA_EQUIVALENTS); a reading still not the voice's is dropped and
the element's text is read instead, by the voice of its writing system, with a note
(logged at debug, shown by `edge-ttsd explain`). Lexicon entries never get here unfit:
they are checked against every voice when the lexicon loads (lexicon_check.py). And a
group's text as its voice reads it: normalized, its readings held as placeholders, then
checked once more with the voice."""

from __future__ import annotations

from dataclasses import replace

from ..text.document import Span
from ..text.frontend import normalize
from ..text.readings import Reading, equivalent, has_readings, placeholder, without_private_use
from ..text.say_as import render as say_as_text
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


def normalize_spans(spans: list[Span], language: str) -> tuple[str, list[Reading]]:
    """The spans' text normalized for `language` as one text: a say-as span as the words
    it is read as, a reading as a placeholder (a word of its own)."""
    readings: list[Reading] = []
    raw: list[str] = []
    for span in spans:
        if span.reading is not None:
            raw.append(f" {placeholder(len(readings))} ")
            readings.append(span.reading)
        elif span.say_as is not None:
            raw.append(f" {without_private_use(say_as_text(span.say_as, span.text, language))} ")
        else:
            raw.append(without_private_use(span.text))
    return normalize("".join(raw), language, placeholders=True, units=True), readings


def check_readings(texts: list[str], spans: list[Span], voice: SpeechVoice) -> None:
    """A reading the voice cannot say (a phoneme it lacks, a pinyin syllable it has not)
    is refused now, with where it was written, not skipped at synthesis."""
    where = next((_at(span) for span in spans if span.reading and span.where), "")
    for text in texts:
        if has_readings(text):
            try:
                voice.ids(text)
            except ValueError as err:
                raise ValueError(f"{where}{err}") from None


def _at(span: Span) -> str:
    return f"{span.where}: " if span.where else ""


def _fault(voice: SpeechVoice, reading: Reading) -> str | None:
    """Why `voice` cannot say `reading` (None: it can)."""
    try:
        voice.ids(reading.notation())
    except ValueError as err:
        return str(err)
    return None
