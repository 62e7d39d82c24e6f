"""How a text will be read, chunk by chunk: which voice, the normalized text, and what
the voice is given (espeak-ng's phonemes, or pinyin): `edge-ttsd explain`, which is what
a user needs to write a lexicon entry or a `<phoneme>` at all."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ..audio.sounds import PlacedSound
from ..text.document import Document
from ..text.mandarin.pinyin_table import PINYIN
from ..text.readings import readable
from ..voice.base import SpeechOptions, SpeechVoice
from ..voice.model import Voice
from ..voice.phonemize import phonemize
from ..voice.registry import Voices
from .routing import Router

_FRAME: Final = frozenset({"sil", "eos"})
_GAPS: Final = {"#0": " ", "#1": " ", "#2": " ", "#3": ", "}


@dataclass(frozen=True)
class ChunkReading:
    voice: str  # its name in the settings
    model: str  # the voice's own name
    language: str
    text: str  # normalized, readings shown as [ipa: ...]
    alphabet: str  # what `said` is in: "ipa", "x-pinyin"
    said: str  # what the voice is given
    speed: float  # against the voice's own pace
    volume: float
    silence: tuple[float, float]
    sounds: tuple[str, ...] = ()  # <audio>: "chime.wav (0.3 s) before" (_placed)


def explain(
    router: Router,
    voices: Voices,
    text: str | Document,
    voice: SpeechVoice,
    options: SpeechOptions,
    notes: list[str] | None = None,
) -> list[ChunkReading]:
    """The chunks of `text` as a request for `voice` would have them; `notes` gets what
    is read otherwise than written (Router.plan)."""
    readings = []
    for chunk in router.plan(text, voice, options, notes=notes):
        length_scale = chunk.options.length_scale or chunk.voice.length_scale
        readings.append(
            ChunkReading(
                voice=voices.name_of(chunk.voice) or chunk.voice.name,
                model=chunk.voice.name,
                language=chunk.voice.language,
                text=readable(chunk.text),
                alphabet=chunk.voice.alphabet,
                said=said(chunk.voice, chunk.text),
                speed=chunk.voice.length_scale / length_scale,
                volume=chunk.options.volume,
                silence=chunk.silence,
                sounds=tuple(map(_placed, chunk.sounds)),
            )
        )
    return readings


def _placed(placed: PlacedSound) -> str:
    """ "chime.wav (0.3 s) before", "chime.wav (0.3 s) 1 s into the silence after"."""
    sound, side = placed.sound, "after" if placed.after else "before"
    where = f"{placed.at:g} s into the silence {side}" if placed.at else side
    return f"{sound.name} ({sound.seconds:.2g} s) {where}"


def said(voice: SpeechVoice, text: str) -> str:
    """What `voice` is given for a chunk: phonemes by sentence ("|" between), or pinyin."""
    if isinstance(voice, Voice):
        return " | ".join("".join(sentence) for sentence in phonemize(text, voice.config))
    if voice.alphabet == "x-pinyin":
        from ..text.mandarin import pinyin  # pypinyin's dictionaries: only for a Mandarin voice

        return syllables(pinyin.to_symbols(text))
    return ""


def syllables(symbols: list[str]) -> str:
    """Baker symbols as pinyin syllables with tone digits: "chong2 qing4"."""
    out: list[str] = []
    initial: str | None = None
    for symbol in symbols:
        if symbol in _FRAME:
            continue
        if symbol in _GAPS:
            out.append(_GAPS[symbol])
        elif initial is None and symbol != "er5" and symbol[-1:] not in "12345":
            initial = symbol
        elif initial is not None:
            final, tone = symbol[:-1], symbol[-1]
            out.append(_SYLLABLE.get((initial, final), f"{initial}{final}") + tone)
            initial = None
        else:
            out.append(symbol)  # 儿化's er5 after a syllable
    return "".join(out).replace(" ,", ",").strip()


def _syllables_by_parts() -> dict[tuple[str, str], str]:
    """(initial, final) -> the syllable written for it; the longest where several share
    one (you, not yo)."""
    table: dict[tuple[str, str], str] = {}
    for syllable, parts in PINYIN.items():
        if len(syllable) > len(table.get(parts, "")):
            table[parts] = syllable
    return table


_SYLLABLE: Final = _syllables_by_parts()
