"""Which voice speaks which part of a text, by writing system, and the chunks it makes.

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
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Final

from ..audio.sounds import Sound, Sounds
from ..cache.planned import PlannedChunk
from ..config import SynthesisSettings, TextSettings
from ..text import EmptyTextError
from ..text.document import PLAIN, Audio, Break, Document, Span, Style, plain_document
from ..text.frontend import normalize, split_chunks
from ..text.languages import primary_language
from ..text.lexicon import Entry, Lexicon
from ..text.markup import without_markup
from ..text.readings import Reading, has_readings, placeholder, restore, without_private_use
from ..text.say_as import render as say_as_text
from ..text.scripts import native_scripts, script_of
from ..voice.base import SpeechOptions, SpeechVoice
from ..voice.registry import Voices
from .fitting import as_text, fit, plain
from .gaps import Gap, check_silence, followed_by, with_sounds

log = logging.getLogger(__name__)

_LATIN: Final = "LATIN"
# An Azure or Google voice's name starts with its language: en-US-JennyNeural, cmn-CN-…
_NAME_LANGUAGE: Final = re.compile(r"([a-z]{2,3}-[A-Z]{2})-")
_SCRIPT_LANGUAGE: Final = {"CJK": "zh", _LATIN: "en"}  # whose voice a run goes to first
_READING_LANGUAGE: Final = {"x-pinyin": "zh", "ipa": "en"}  # where a reading goes without one
_RATE_BOUNDS: Final = (0.1, 10.0)  # speed, as a request may ask for it
_VOLUME_MAX: Final = 2.0  # the engine's gain, as a request may ask for it


@dataclass(frozen=True)
class Segment:
    text: str
    voice: SpeechVoice


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
        pace at `speed` and the same volume. Raises EmptyTextError when nothing is
        speakable, ValueError (UnsupportedScriptError) for text no configured voice reads
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
            document = self._lexicon.apply(document, lambda e, s: self._applies(e, s, voice))
        document = self._fit_readings(document, voice, said)
        for note in said:
            log.debug("%s", note)
        if notes is not None:
            notes.extend(said)
        groups, trailing = self._groups(document, voice, found)
        chunks = self._chunks(groups, voice, options, speed)
        if not chunks:
            excerpt = text[:40] if isinstance(text, str) else _written(document)[:40]
            raise EmptyTextError(f"text has nothing speakable: {excerpt!r}")
        if trailing is not None:
            chunks[-1] = followed_by(chunks[-1], after=trailing)
        check_silence(chunks, self._max_silence_s)
        return chunks

    def _fit_readings(self, document: Document, primary: SpeechVoice, notes: list[str]) -> Document:
        """Each reading as the voice that reads it says it (fitting.py); where no voice
        reads its alphabet, the span's written text."""
        pieces: list[Span | Break | Audio] = []
        for piece in document:
            if isinstance(piece, Span) and piece.reading is not None:
                try:
                    voice = self._reading_voice(piece, piece.reading, primary)
                except ValueError as err:
                    notes.append(f"{err}; {as_text(piece)}")
                    piece = plain(piece)
                else:
                    piece = fit(piece, voice, notes)
            pieces.append(piece)
        return tuple(pieces)

    def _chunks(
        self, groups: list[_Group], voice: SpeechVoice, options: SpeechOptions, speed: float | None
    ) -> list[PlannedChunk]:
        """Each group's chunks; the silence of a break (or a sound) before a group goes
        after the chunk before it, or before the first chunk of all."""
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
        if chunks and pending is not None:  # breaks after the last group that said something
            chunks[-1] = followed_by(chunks[-1], after=pending)
        return chunks

    # --- which voice ---------------------------------------------------------------------

    def segments(self, text: str, primary: SpeechVoice) -> list[Segment]:
        """`text` in runs of one writing system, each with the voice that reads it natively
        (the primary voice where it does, or where no configured voice does: the text
        front-end then refuses it with the language named)."""
        if self._voices is None or (text.isascii() and _LATIN in native_scripts(primary.language)):
            return [Segment(text, primary)]  # most messages
        segments: list[Segment] = []
        for run, script in _runs(text):
            voice = self._voice_for(script, primary)
            if segments and segments[-1].voice is voice:
                segments[-1] = Segment(segments[-1].text + run, voice)
            else:
                segments.append(Segment(run, voice))
        return segments

    def _voice_for(self, script: str | None, primary: SpeechVoice) -> SpeechVoice:
        if script is None or script in native_scripts(primary.language):
            return primary
        language = _SCRIPT_LANGUAGE.get(script)
        voice = self._voices.for_language(language) if language and self._voices else None
        if voice is not None and script in native_scripts(voice.language):
            return voice
        return primary  # Latin in a Mandarin voice is spelled; others are refused later

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
                yield _Item(piece, self._reading_voice(piece, piece.reading, primary))
            elif (forced := self._forced_voice(piece, primary)) is not None:
                yield _Item(piece, forced)
            elif piece.say_as is not None:
                yield _Item(piece, self._script_voice(piece.text, primary))
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
            for segment in self.segments(text[first:], primary):
                yield _Item(replace(span, text=segment.text), segment.voice)

    def _script_voice(self, text: str, primary: SpeechVoice) -> SpeechVoice | None:
        """The voice of the first letters in `text`; None when it has none."""
        script = next((s for s in map(script_of, text) if s), None)
        return None if script is None else self._voice_for(script, primary)

    def _forced_voice(self, span: Span, primary: SpeechVoice) -> SpeechVoice | None:
        """The voice a span names, or the one for the language it names. A name or a
        language there is no voice for here is not an error (SSML's voice selection falls
        back; every Azure document names an Azure voice): a name that starts with a
        language tag ("en-US-JennyNeural") goes to that language's voice, else None: the
        span's writing system decides, as in a plain text."""
        style = span.style
        if style.voice is not None:
            voice = self._named_voice(style.voice, primary)
            if voice is not None:
                return voice
            language = _NAME_LANGUAGE.match(style.voice)
            return self._language_voice(language[1], primary) if language else None
        if style.language is None:
            return None
        voice = self._language_voice(style.language, primary)
        for other in style.languages:  # <voice languages="...">: the first one we speak
            voice = voice or self._language_voice(other, primary)
        if voice is None:
            log.debug("%sno voice for language %r: read as text", _at(span), style.language)
        return voice

    def _gendered(self, item: _Item, primary: SpeechVoice) -> _Item:
        """<voice gender>: after the name and the languages, the voice of that gender
        (voices.*.gender) among those of the language chosen; where none is known to be,
        the one chosen stays (the language's voice, or the default)."""
        style = item.span.style
        named = style.voice is not None and self._named_voice(style.voice, primary) is not None
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

    def _named_voice(self, name: str, primary: SpeechVoice) -> SpeechVoice | None:
        if self._voices is None:
            return primary if name in (primary.name, "default") else None
        try:
            return self._voices.get(name)
        except ValueError:
            return None

    def _language_voice(self, language: str, primary: SpeechVoice) -> SpeechVoice | None:
        if primary_language(primary.language) == primary_language(language):
            return primary
        return self._voices.for_language(language) if self._voices else None

    def _reading_voice(self, span: Span, reading: Reading, primary: SpeechVoice) -> SpeechVoice:
        """The voice that reads phonemes of the reading's alphabet: the span's own when it
        names one, else the one its writing system goes to, the primary, the language's."""
        candidates = self._reading_candidates(span, reading, primary)
        for voice in candidates:
            if voice is not None and voice.alphabet == reading.alphabet:
                return voice
        named = candidates[0]
        if len(candidates) == 1 and named is not None:
            reads = named.alphabet or "no"
            raise ValueError(
                f"{_at(span)}voice {named.name} reads {reads} phonemes, not {reading.alphabet}"
            )
        raise ValueError(f"{_at(span)}no configured voice reads {reading.alphabet} phonemes")

    def _reading_candidates(
        self, span: Span, reading: Reading, primary: SpeechVoice
    ) -> list[SpeechVoice | None]:
        forced = self._forced_voice(span, primary)
        if forced is not None:
            return [forced]
        language = _READING_LANGUAGE[reading.alphabet]
        return [
            self._script_voice(span.text, primary),
            primary,
            self._language_voice(language, primary),
            *(self._voices.all().values() if self._voices else ()),
        ]

    def _applies(self, entry: Entry, span: Span, primary: SpeechVoice) -> bool:
        """Whether a lexicon entry applies to `span`, the text it matched. An entry with a
        scope applies where a voice of its scope reads the text (and reads its phonemes);
        one without, wherever a voice reads its phonemes ("Huawei = pinyin: hua2 wei2"
        sends the word to the Mandarin voice) or, for an alias, anywhere."""
        try:
            if entry.scope is None and entry.reading is not None:
                return bool(self._reading_voice(span, entry.reading, primary))
            voice = (
                self._forced_voice(span, primary)
                or self._script_voice(span.text, primary)
                or primary
            )
        except ValueError:
            return False  # no voice for it: the entry does not apply (a forced one says so)
        if entry.reading is not None and voice.alphabet != entry.reading.alphabet:
            return False
        return entry.scope is None or self._in_scope(entry.scope, voice)

    def _in_scope(self, scope: str, voice: SpeechVoice) -> bool:
        if self._voices is not None and scope == self._voices.name_of(voice):
            return True
        return scope == voice.name or primary_language(scope) == primary_language(voice.language)

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
        normalized, readings = _normalized(group.items, language)
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
            _check_readings(texts, group)
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


def _normalized(spans: list[Span], language: str) -> tuple[str, list[Reading]]:
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


def _check_readings(texts: list[str], group: _Group) -> None:
    """A reading the voice cannot say (a phoneme it lacks, a pinyin syllable it has not)
    is refused now, with where it was written, not skipped at synthesis."""
    where = next((_at(span) for span in group.items if span.reading and span.where), "")
    for text in texts:
        if has_readings(text):
            try:
                group.voice.ids(text)
            except ValueError as err:
                raise ValueError(f"{where}{err}") from None


def _written(spans: Document | list[Span]) -> str:
    return "".join(piece.text for piece in spans if isinstance(piece, Span))


def _at(span: Span) -> str:
    return f"{span.where}: " if span.where else ""


def _runs(text: str) -> list[tuple[str, str | None]]:
    """Runs of letters of one script; other characters join the run they stand in (the
    one before them, or the first one when the text starts with them)."""
    runs: list[tuple[str, str | None]] = []
    start, current = 0, None
    for index, char in enumerate(text):
        script = script_of(char)
        if script is None or script == current:
            continue
        if current is not None:
            runs.append((text[start:index], current))
            start = index
        current = script
    if start < len(text):
        runs.append((text[start:], current))
    return runs
