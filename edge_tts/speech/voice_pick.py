"""Which voice reads which part of a text: by writing system, by the voice or language
a span names, by the alphabet of a reading; and whether a lexicon entry applies where it
matched. The router (routing.py) asks, span by span."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Final

from ..text.document import Span
from ..text.languages import primary_language
from ..text.lexicon import Entry
from ..text.readings import Reading
from ..text.scripts import native_scripts, script_of
from ..voice.base import SpeechVoice
from ..voice.registry import Voices

log = logging.getLogger(__name__)

_LATIN: Final = "LATIN"
# An Azure or Google voice's name starts with its language: en-US-JennyNeural, cmn-CN-…
_NAME_LANGUAGE: Final = re.compile(r"([a-z]{2,3}-[A-Z]{2})-")
_SCRIPT_LANGUAGE: Final = {"CJK": "zh", _LATIN: "en"}  # whose voice a run goes to first
_READING_LANGUAGE: Final = {"x-pinyin": "zh", "ipa": "en"}  # where a reading goes without one


@dataclass(frozen=True)
class Segment:
    text: str
    voice: SpeechVoice


class VoicePicker:
    """The voices of `voices`; without them (`edge-ttsd say`, tests of the pipeline) the
    voice asked for speaks everything."""

    def __init__(self, voices: Voices | None) -> None:
        self._voices = voices

    def segments(self, text: str, primary: SpeechVoice) -> list[Segment]:
        """`text` in runs of one writing system, each with the voice that reads it natively
        (the primary voice where it does, or where no configured voice does: the text
        front-end then refuses it with the language named)."""
        if self._voices is None or (text.isascii() and _LATIN in native_scripts(primary.language)):
            return [Segment(text, primary)]  # most messages
        segments: list[Segment] = []
        for run, script in _runs(text):
            voice = self.voice_for(script, primary)
            if segments and segments[-1].voice is voice:
                segments[-1] = Segment(segments[-1].text + run, voice)
            else:
                segments.append(Segment(run, voice))
        return segments

    def voice_for(self, script: str | None, primary: SpeechVoice) -> SpeechVoice:
        if script is None or script in native_scripts(primary.language):
            return primary
        language = _SCRIPT_LANGUAGE.get(script)
        voice = self._voices.for_language(language) if language and self._voices else None
        if voice is not None and script in native_scripts(voice.language):
            return voice
        return primary  # Latin in a Mandarin voice is spelled; others are refused later

    def script_voice(self, text: str, primary: SpeechVoice) -> SpeechVoice | None:
        """The voice of the first letters in `text`; None when it has none."""
        script = next((s for s in map(script_of, text) if s), None)
        return None if script is None else self.voice_for(script, primary)

    def forced_voice(self, span: Span, primary: SpeechVoice) -> SpeechVoice | None:
        """The voice a span names, or the one for the language it names. A name or a
        language there is no voice for here is not an error (SSML's voice selection falls
        back; every Azure document names an Azure voice): a name that starts with a
        language tag ("en-US-JennyNeural") goes to that language's voice, else None: the
        span's writing system decides, as in a plain text."""
        style = span.style
        if style.voice is not None:
            voice = self.named_voice(style.voice, primary)
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
            log.debug("%sno voice for language %r: read as text", written_at(span), style.language)
        return voice

    def named_voice(self, name: str, primary: SpeechVoice) -> SpeechVoice | None:
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

    def reading_voice(self, span: Span, reading: Reading, primary: SpeechVoice) -> SpeechVoice:
        """The voice that reads phonemes of the reading's alphabet: the span's own when it
        names one, else the one its writing system goes to, the primary, the language's."""
        candidates = self._reading_candidates(span, reading, primary)
        for voice in candidates:
            if voice is not None and voice.alphabet == reading.alphabet:
                return voice
        named = candidates[0]
        if len(candidates) == 1 and named is not None:
            reads, wanted = named.alphabet or "no", reading.alphabet
            raise ValueError(
                f"{written_at(span)}voice {named.name} reads {reads} phonemes, not {wanted}"
            )
        raise ValueError(f"{written_at(span)}no configured voice reads {reading.alphabet} phonemes")

    def _reading_candidates(
        self, span: Span, reading: Reading, primary: SpeechVoice
    ) -> list[SpeechVoice | None]:
        forced = self.forced_voice(span, primary)
        if forced is not None:
            return [forced]
        language = _READING_LANGUAGE[reading.alphabet]
        return [
            self.script_voice(span.text, primary),
            primary,
            self._language_voice(language, primary),
            *(self._voices.all().values() if self._voices else ()),
        ]

    def applies(self, entry: Entry, span: Span, primary: SpeechVoice) -> bool:
        """Whether a lexicon entry applies to `span`, the text it matched. An entry with a
        scope applies where a voice of its scope reads the text (and reads its phonemes);
        one without, wherever a voice reads its phonemes ("Huawei = pinyin: hua2 wei2"
        sends the word to the Mandarin voice) or, for an alias, anywhere."""
        try:
            if entry.scope is None and entry.reading is not None:
                return bool(self.reading_voice(span, entry.reading, primary))
            voice = (
                self.forced_voice(span, primary) or self.script_voice(span.text, primary) or primary
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


def written_at(span: Span) -> str:
    """Where the span was written, for an error: "line 3: ", or nothing."""
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
