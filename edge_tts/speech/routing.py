"""Which voice speaks which part of a text, by writing system, and the chunks it makes
(the voice of each part: voice_pick.py).

"GPS信号丢失" with an English and a Mandarin voice is two segments, "GPS" for the
English voice and "信号丢失" for the Mandarin one, played in order on the one stream.
Digits, spaces and punctuation belong to the segment they stand in, so "请在3号门登机"
stays one Mandarin segment and its 3 is read in Mandarin.

A text may come as a `Document` (SSML, text/ssml.py): its spans may force a language or
a voice (which then wins over the writing system), a speed and a gain, a reading
(`<say-as>`, phonemes); its breaks become exact silence around the chunks beside them,
and its `<audio>` sounds (text.sounds_dir) play there, in order with the breaks (an
`<audio>` whose sound is not there is its fallback text).
Spans that read alike and nothing separates are one segment, so a document that says a
plain text makes the plain text's chunks, and shares their cached audio.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Final

from ..audio.sounds import Sound, Sounds
from ..cache.planned import PlannedChunk
from ..config import SynthesisSettings, TextSettings
from ..text import EmptyTextError
from ..text.document import PLAIN, Audio, Break, Document, Span, Style, plain_document
from ..text.frontend import split_chunks
from ..text.languages import primary_language
from ..text.lexicon import Lexicon
from ..text.markup import without_markup
from ..text.readings import restore
from ..text.scripts import script_of
from ..voice.base import SpeechOptions, SpeechVoice
from ..voice.registry import Voices
from .fitting import as_text, check_readings, fit, normalize_spans, plain
from .gaps import Gap, check_silence, ended, followed_by, with_sounds
from .voice_pick import Segment, VoicePicker

log = logging.getLogger(__name__)

_RATE_BOUNDS: Final = (0.1, 10.0)  # speed, as a request may ask for it
_VOLUME_MAX: Final = 2.0  # the engine's gain, as a request may ask for it


@dataclass
class _Item:
    """A span, or a run of one writing system of a plain span, with its voice (None until
    the spans beside it decide: it has no letters)."""

    span: Span
    voice: SpeechVoice | None


@dataclass
class _Group:
    """Items that become chunks together: one voice, one style, no break between them."""

    voice: SpeechVoice
    style: Style
    items: list[Span] = field(default_factory=list)
    silence_before: Gap | None = None  # breaks and sounds before it; None: none


class Router:
    """Splits a text into segments by writing system and plans their chunks."""

    def __init__(
        self,
        synthesis: SynthesisSettings,
        voices: Voices | None = None,
        lexicon: Lexicon | None = None,
        text: TextSettings | None = None,
    ):
        """Without `voices` (`edge-ttsd say`, tests of the pipeline) the voice asked for
        speaks everything. `lexicon`: the daemon's (text.lexicon), which it may replace.
        `text`: the settings' (text.strip_markup), else their defaults."""
        self._voices = voices
        self._pick = VoicePicker(voices)
        self._synthesis = synthesis
        self._lexicon = lexicon
        text = text or TextSettings()
        self._strip_markup, self._max_silence_s = text.strip_markup, text.max_silence_s
        self._sounds = Sounds(text.sounds_dir, text.max_silence_s)

    def plan(
        self,
        text: str | Document,
        voice: SpeechVoice,
        options: SpeechOptions,
        speed: float | None = None,
        notes: list[str] | None = None,
    ) -> list[PlannedChunk]:
        """The chunks of `text` (a plain text or a document), each with the voice and
        options that speak it: `voice` with `options`, or another voice for another
        writing system or a language a span names, with its own configured speaker and
        pace at `speed` and the same volume. Raises EmptyTextError when nothing is said
        or played, ValueError (UnsupportedScriptError) for text no configured voice reads
        or a span naming a voice or language there is not, with the reason. `notes`
        gets what was read otherwise than written (an <audio> without its sound, a
        reading the voice cannot say), each also logged at debug."""
        found: dict[str, Sound] = {}  # the sounds of its <audio>, by src
        said: list[str] = []
        if isinstance(text, str):
            document = plain_document(without_markup(text) if self._strip_markup else text)
        else:
            document, found = with_sounds(text, self._sounds, said)
        if self._lexicon is not None:
            document = self._lexicon.apply(document, lambda e, s: self._pick.applies(e, s, voice))
        document = self._fit_readings(document, voice, said)
        for note in said:
            log.debug("%s", note)
        if notes is not None:
            notes.extend(said)
        groups, trailing = self._groups(document, voice, found)
        chunks = self._chunks(groups, trailing, voice, options, speed)
        if not chunks:
            excerpt = text[:40] if isinstance(text, str) else _written(document)[:40]
            why = f" ({'; '.join(said)})" if said else ""  # e.g. an <audio> that did not play
            raise EmptyTextError(f"text has nothing speakable: {excerpt!r}{why}")
        check_silence(chunks, self._max_silence_s)
        return chunks

    def _fit_readings(self, document: Document, primary: SpeechVoice, notes: list[str]) -> Document:
        """Each reading as the voice that reads it says it (fitting.py); where no voice
        reads its alphabet, the span's written text."""
        pieces: list[Span | Break | Audio] = []
        for piece in document:
            if isinstance(piece, Span) and piece.reading is not None:
                try:
                    voice = self._pick.reading_voice(piece, piece.reading, primary)
                except ValueError as err:
                    notes.append(f"{err}; {as_text(piece)}")
                    piece = plain(piece)
                else:
                    piece = fit(piece, voice, notes)
            pieces.append(piece)
        return tuple(pieces)

    def _chunks(
        self,
        groups: list[_Group],
        trailing: Gap | None,
        voice: SpeechVoice,
        options: SpeechOptions,
        speed: float | None,
    ) -> list[PlannedChunk]:
        """Each group's chunks; the silence of a break (or a sound) before a group goes
        after the chunk before it, or before the first chunk of all; `trailing`, the
        breaks and sounds after the last group, after the last chunk (gaps.ended)."""
        chunks: list[PlannedChunk] = []
        pending: Gap | None = None  # the breaks and sounds since the last chunk
        for group in groups:
            if group.silence_before is not None:
                pending = pending or Gap()
                pending.add(group.silence_before)
            group_options = self._options(group, voice, options, speed)
            first_chars = self._synthesis.first_chunk_chars if not chunks else None
            for piece in self._chunk_texts(group, first_chars):
                if chunks and pending is not None:
                    chunks[-1] = followed_by(chunks[-1], after=pending)
                before = pending if pending is not None and not chunks else Gap()
                breaks = (pending is not None, False)
                silence = (before.seconds, 0.0)
                sounds = before.placed(after=False)
                chunk = PlannedChunk(piece, group.voice, group_options, silence, breaks, sounds)
                chunks.append(chunk)
                pending = None
        if trailing is not None:  # with those of groups that said nothing ("...") before
            pending = pending or Gap()
            pending.add(trailing)
        return ended(chunks, pending, voice, options)

    # --- which voice ---------------------------------------------------------------------

    def segments(self, text: str, primary: SpeechVoice) -> list[Segment]:
        """`text` in runs of one writing system, each with the voice that reads it."""
        return self._pick.segments(text, primary)

    def _groups(
        self, document: Document, primary: SpeechVoice, sounds: dict[str, Sound]
    ) -> tuple[list[_Group], Gap | None]:
        """The document's spans with their voices, in groups; and the breaks and sounds
        after the last one (None: none there). `sounds`: those of its <audio>, by src."""
        groups: list[_Group] = []
        pending: Gap | None = None
        last: _Group | None = None
        for item in _decided(self._items(document, primary), primary):
            if isinstance(item, Break | Audio):
                pending = pending or Gap()
                if isinstance(item, Break):
                    pending.seconds += item.seconds
                else:
                    pending.sounds.append((pending.seconds, sounds[item.src]))
                last = None
                continue
            assert item.voice is not None  # _decided gave every item one
            if last is None or last.voice is not item.voice or not _alike(last, item.span):
                last = _Group(item.voice, item.span.style, silence_before=pending)
                groups.append(last)
                pending = None
            last.items.append(item.span)
        return groups, pending

    def _items(self, document: Document, primary: SpeechVoice) -> Iterator[_Item | Break | Audio]:
        for item in self._voiced(document, primary):
            yield item if isinstance(item, Break | Audio) else self._gendered(item, primary)

    def _voiced(self, document: Document, primary: SpeechVoice) -> Iterator[_Item | Break | Audio]:
        for piece in document:
            if isinstance(piece, Break | Audio):
                yield piece
            elif piece.reading is not None:
                yield _Item(piece, self._pick.reading_voice(piece, piece.reading, primary))
            elif (forced := self._pick.forced_voice(piece, primary)) is not None:
                yield _Item(piece, forced)
            elif piece.say_as is not None:
                yield _Item(piece, self._pick.script_voice(piece.text, primary))
            else:
                yield from self._plain_items(piece, primary)

    def _plain_items(self, span: Span, primary: SpeechVoice) -> Iterator[_Item]:
        """A plain span by writing system. What comes before its first letter (". " after
        a word the lexicon replaced) goes with the span before it, as in a plain text."""
        text = span.text
        first = next((i for i, c in enumerate(text) if script_of(c)), len(text))
        if first:
            yield _Item(replace(span, text=text[:first]), None)
        if first < len(text):
            for segment in self._pick.segments(text[first:], primary):
                yield _Item(replace(span, text=segment.text), segment.voice)

    def _gendered(self, item: _Item, primary: SpeechVoice) -> _Item:
        """<voice gender>: after the name and the languages, the voice of that gender
        (voices.*.gender) among those of the language chosen; where none is known to be,
        the one chosen stays (the language's voice, or the default)."""
        style = item.span.style
        named = style.voice is not None and self._pick.named_voice(style.voice, primary) is not None
        if style.gender is None or item.voice is None or self._voices is None or named:
            return item
        ours = self._voices.name_of(item.voice) is not None
        if ours and self._voices.settings_for(item.voice).gender == style.gender:
            return item
        language = item.voice.language
        for asked in (style.language, *style.languages):  # its region, if it names one
            if asked and primary_language(asked) == primary_language(language):
                language = asked
                break
        match = self._voices.by_gender(language, style.gender)
        if match is not None and match.alphabet == item.voice.alphabet:
            item.voice = match
        return item

    # --- how ------------------------------------------------------------------------------

    def _options(
        self, group: _Group, voice: SpeechVoice, options: SpeechOptions, speed: float | None
    ) -> SpeechOptions:
        base = options
        if group.voice is not voice and self._voices is not None:
            base = self._voices.options_for(group.voice, speed=speed, volume=options.volume)
        if (group.style.rate, group.style.volume) == (PLAIN.rate, PLAIN.volume):
            return base
        low, high = _RATE_BOUNDS
        rate = min(max(group.style.rate, low), high)
        length_scale = (base.length_scale or group.voice.length_scale) / rate
        volume = min(base.volume * group.style.volume, _VOLUME_MAX)
        return replace(base, length_scale=length_scale, volume=volume)

    def _chunk_texts(self, group: _Group, first_chars: int | None) -> list[str]:
        """The group's text, normalized piece by piece and split into chunks; its readings
        checked with the voice that reads them."""
        language = group.voice.language
        normalized, readings = normalize_spans(group.items, language)
        limit = self._synthesis.max_chunk_chars
        try:
            pieces = split_chunks(
                normalized,
                language,
                max_chunk_chars=limit,
                first_chunk_chars=first_chars or limit,
                source=_written(group.items),
            )
        except EmptyTextError:
            return []  # a segment of punctuation between two others: its pause is enough
        texts = [restore(piece, readings) for piece in pieces]
        if readings:
            check_readings(texts, group.items, group.voice)
        return texts


def _alike(group: _Group, span: Span) -> bool:
    """Whether the span sounds as the group does: the language or voice it names chose
    its voice already."""
    style = span.style
    return (group.style.rate, group.style.volume) == (style.rate, style.volume)


def _decided(
    items: Iterator[_Item | Break | Audio], primary: SpeechVoice
) -> list[_Item | Break | Audio]:
    """Items without letters of their own (digits, punctuation, spaces) go with the item
    before them, else the first one after them, else the primary voice."""
    decided = list(items)
    last: SpeechVoice | None = None
    undecided: list[_Item] = []
    for item in decided:
        if isinstance(item, Break | Audio):
            continue
        if item.voice is None:
            if last is None:
                undecided.append(item)
            else:
                item.voice = last
            continue
        last = item.voice
        for waiting in undecided:
            waiting.voice = last
        undecided = []
    for waiting in undecided:
        waiting.voice = primary
    return decided


def _written(spans: Document | list[Span]) -> str:
    return "".join(piece.text for piece in spans if isinstance(piece, Span))
