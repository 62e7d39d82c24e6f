"""What stands between the words of a document (speech/routing.py): SSML's breaks, as
exact silence, and its `<audio>` sounds (text.sounds_dir, audio/sounds.py), in their
order; carried beside a chunk's speech (`PlannedChunk.silence`, `.sounds`) and played by
synthesis.render."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..audio.sounds import PlacedSound, Sound, SoundError, Sounds
from ..cache.planned import PlannedChunk
from ..text.document import Audio, Break, Document, Span
from ..voice.base import SpeechOptions, SpeechVoice


@dataclass
class Gap:
    """What stands between two chunks besides speech: the breaks' silence, and sounds
    each with the seconds of that silence before it (SSML's order)."""

    seconds: float = 0.0
    sounds: list[tuple[float, Sound]] = field(default_factory=list)

    def add(self, other: Gap) -> None:
        self.sounds.extend((self.seconds + at, sound) for at, sound in other.sounds)
        self.seconds += other.seconds

    def placed(self, after: bool, offset: float = 0.0) -> tuple[PlacedSound, ...]:
        return tuple(PlacedSound(sound, after, offset + at) for at, sound in self.sounds)

    @property
    def audible(self) -> bool:
        """Whether it plays anything: a sound, or a break longer than 0 s."""
        return bool(self.sounds) or self.seconds > 0


def with_sounds(
    document: Document, sounds: Sounds, notes: list[str]
) -> tuple[Document, dict[str, Sound]]:
    """The document with each <audio> whose sound is not there replaced by its
    fallback; the sounds there are, by src; a note for each that is not."""
    pieces: list[Span | Break | Audio] = []
    found: dict[str, Sound] = {}
    for piece in document:
        if not isinstance(piece, Audio):
            pieces.append(piece)
            continue
        try:
            found[piece.src] = sounds.find(piece.src)
            pieces.append(piece)
        except SoundError as err:
            notes.append(f"{_at(piece)}<audio>: {err}: its content is read")
            pieces.extend(piece.fallback)
    return tuple(pieces), found


def check_silence(chunks: list[PlannedChunk], max_silence_s: float) -> None:
    """A request's breaks and sounds add up to at most text.max_silence_s: 104 breaks
    of 10 s fit in 2,000 characters, 17 minutes of a speaker saying nothing. Refused
    with the reason, not cut short: the sender's timing was wrong, not ours to guess."""
    silence = sum(sum(chunk.silence) for chunk in chunks)
    total = silence + sum(p.sound.seconds for chunk in chunks for p in chunk.sounds)
    if total > max_silence_s:
        what = "breaks add up to" if total == silence else "breaks and sounds add up to"
        raise ValueError(
            f"the {what} {total:g} s of silence; the limit is "
            f"{max_silence_s:g} s (text.max_silence_s)"
        )


def followed_by(chunk: PlannedChunk, after: Gap) -> PlannedChunk:
    """The chunk with breaks or sounds after it (after any there are)."""
    before, already = chunk.silence
    breaks = (chunk.breaks[0], True)
    silence = (before, already + after.seconds)
    sounds = chunk.sounds + after.placed(after=True, offset=already)
    return PlannedChunk(chunk.text, chunk.voice, chunk.options, silence, breaks, sounds)


def ended(
    chunks: list[PlannedChunk], after: Gap | None, voice: SpeechVoice, options: SpeechOptions
) -> list[PlannedChunk]:
    """The chunks with the breaks and sounds after the last one. With no chunk at all (a
    document of only sounds and breaks, `<speak><audio src="doorbell"/></speak>`), one
    without speech that plays them, with the request's `voice` and `options` (its
    volume); none when there is nothing to play either (the router's EmptyTextError)."""
    if after is None:
        return chunks
    if chunks:
        return [*chunks[:-1], followed_by(chunks[-1], after=after)]
    if not after.audible:
        return []
    silence, breaks = (after.seconds, 0.0), (True, False)
    return [PlannedChunk("", voice, options, silence, breaks, after.placed(after=False))]


def _at(piece: Audio) -> str:
    return f"{piece.where}: " if piece.where else ""
