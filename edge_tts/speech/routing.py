"""Which voice speaks which part of a text, by writing system, and the chunks it makes.

"GPS信号丢失" with an English and a Mandarin voice is two segments, "GPS" for the
English voice and "信号丢失" for the Mandarin one, played in order on the one stream.
Digits, spaces and punctuation belong to the segment they stand in, so "请在3号门登机"
stays one Mandarin segment and its 3 is read in Mandarin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ..config import SynthesisSettings
from ..text import EmptyTextError, prepare
from ..text.scripts import native_scripts, script_of
from ..voice.base import SpeechOptions, SpeechVoice
from ..voice.registry import Voices
from .jobs import Chunk

_LATIN: Final = "LATIN"
_SCRIPT_LANGUAGE: Final = {"CJK": "zh", _LATIN: "en"}  # whose voice a run goes to first


@dataclass(frozen=True)
class Segment:
    text: str
    voice: SpeechVoice


class Router:
    """Splits a text into segments by writing system and plans their chunks."""

    def __init__(self, synthesis: SynthesisSettings, voices: Voices | None = None):
        """Without `voices` (`edge-ttsd say`, tests of the pipeline) the voice asked for
        speaks everything."""
        self._voices = voices
        self._synthesis = synthesis

    def plan(
        self, text: str, voice: SpeechVoice, options: SpeechOptions, speed: float | None = None
    ) -> list[Chunk]:
        """`text`'s chunks, each with the voice and options that speak it: `voice` with
        `options`, or another voice for another writing system in it, with its own
        configured speaker and pace at `speed` and the same volume. Raises EmptyTextError
        when nothing is speakable, ValueError (UnsupportedScriptError) for text no
        configured voice reads, with the language named."""
        chunks: list[Chunk] = []
        for segment in self.segments(text, voice):
            segment_options = options
            if segment.voice is not voice and self._voices is not None:
                segment_options = self._voices.options_for(
                    segment.voice, speed=speed, volume=options.volume
                )
            first_chars = self._synthesis.first_chunk_chars if not chunks else None
            for piece in self._prepare(segment, first_chars):
                chunks.append(Chunk(piece, voice=segment.voice, options=segment_options))
        if not chunks:
            raise EmptyTextError(f"text has nothing speakable: {text[:40]!r}")
        return chunks

    def _prepare(self, segment: Segment, first_chars: int | None) -> list[str]:
        limit = self._synthesis.max_chunk_chars
        try:
            return prepare(
                segment.text,
                language=segment.voice.language,
                max_chunk_chars=limit,
                first_chunk_chars=first_chars or limit,
            )
        except EmptyTextError:
            return []  # a segment of punctuation between two others: its pause is enough

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


def _runs(text: str) -> list[tuple[str, str | None]]:
    """Runs of letters of one script; other characters join the run they stand in (the
    one before them, or the first one when the text starts with them)."""
    runs: list[tuple[str, str | None]] = []
    for char in text:
        script = script_of(char)
        if runs and (script is None or script == runs[-1][1] or runs[-1][1] is None):
            kept = runs[-1][1] if script is None else script
            runs[-1] = (runs[-1][0] + char, kept)
        else:
            runs.append((char, script))
    return runs
