"""`edge-ttsd explain`: how the daemon would read a text, chunk by chunk, without
synthesizing it: which voice, the normalized text, the phonemes or pinyin."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from .common import DEFAULT_CONFIG, EXIT_REFUSED, EXIT_USAGE, Subparsers, add_config_arg, fail

if TYPE_CHECKING:
    from ..config import Settings
    from ..speech.readout import ChunkReading
    from ..text.document import Document


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "explain",
        help="show how a text is read: chunks, voice, normalized text, phonemes or pinyin",
    )
    p.add_argument("text", help="text to explain; '-' reads standard input")
    add_config_arg(p)
    p.add_argument("--ssml", action="store_true", help="the text is SSML (else: if <speak…)")
    p.add_argument("--voice", help="a configured voice's name (default: the default voice)")
    p.add_argument("--language", help="the language a request names, instead of a voice")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..config import ConfigError
    from ..speech.readout import explain
    from ..speech.routing import Router
    from ..text import EmptyTextError, lexicon, ssml
    from ..voice import files
    from ..voice.registry import Voices
    from ..voice.voice_dir import VoiceDirError

    text = sys.stdin.read() if args.text == "-" else args.text
    try:
        settings = _settings(args)
        entries = lexicon.load(settings.text.lexicon, settings.text.lexicon_file)
        voices = Voices(settings)
        voice = voices.choose(args.voice, args.language)
        speech, notes = _speech(text, args.ssml, settings.queue.max_text_chars)
        router = Router(settings.synthesis, voices, lexicon.Lexicon(entries), settings.text)
        planned: list[str] = []
        chunks = explain(router, voices, speech, voice, voices.options_for(voice), planned)
        notes = (*notes, *planned)
    except (ConfigError, lexicon.LexiconError, files.VoiceNotFoundError, VoiceDirError) as err:
        return fail(EXIT_REFUSED, str(err))
    except (ssml.SsmlError, EmptyTextError, ValueError) as err:
        return fail(EXIT_USAGE, str(err))
    print(f"{len(entries)} lexicon entries; {len(chunks)} chunk(s)")
    for note in notes:  # what the SSML has that is not supported or there, read as text
        print(f"note: {note}")
    for index, chunk in enumerate(chunks, 1):
        print(_describe(index, chunk))
    return 0


def _settings(args: argparse.Namespace) -> Settings:
    """The daemon's settings; its defaults when the default file is not there."""
    from ..config import default_settings, load_settings

    if args.config == DEFAULT_CONFIG and not DEFAULT_CONFIG.exists():
        return default_settings()
    return load_settings(args.config)


def _speech(text: str, marked: bool, max_chars: int) -> tuple[str | Document, tuple[str, ...]]:
    """The text, or the document it is, and the notes of what the document's markup had
    that is not supported."""
    from ..text import ssml

    if marked or ssml.looks_like_ssml(text):
        return ssml.parse_noted(text, max_chars=max_chars)
    return text, ()


def _describe(index: int, chunk: ChunkReading) -> str:
    how = [f"{chunk.voice} ({chunk.model}, {chunk.language})"]
    if round(chunk.speed, 3) != 1:
        how.append(f"speed x{chunk.speed:.2f}")
    if round(chunk.volume, 3) != 1:
        how.append(f"volume x{chunk.volume:.2f}")
    before, after = chunk.silence
    if before:
        how.append(f"{before:g} s of silence before")
    if after:
        how.append(f"{after:g} s of silence after")
    how.extend(f"sound {sound}" for sound in chunk.sounds)
    label = {"ipa": "ipa", "x-pinyin": "pinyin"}.get(chunk.alphabet, "said")
    return "\n".join(
        [
            f"{index:>2}  {', '.join(how)}",
            f"    text    {chunk.text}",
            f"    {label:<7} {chunk.said}",
        ]
    )
