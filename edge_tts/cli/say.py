"""`edge-ttsd say`: speak one text through the daemon's pipeline and outputs, then exit."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .common import EXIT_ERROR, EXIT_NO_DEVICE, EXIT_REFUSED, EXIT_USAGE, Subparsers, fail

if TYPE_CHECKING:
    from ..audio.output import AudioOutput
    from ..config import AudioSettings, Settings, SynthesisSettings
    from ..speech.routing import Router
    from ..voice.base import SpeechOptions, SpeechVoice


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("say", help="speak text on the default ALSA device or into a WAV")
    p.add_argument("text", help="text to speak; '-' reads standard input")
    p.add_argument(
        "--ssml",
        action="store_true",
        help="the text is SSML (docs/text.md; also without this when it starts with <speak)",
    )
    p.add_argument("--out", type=Path, help="write a WAV file instead of playing")
    p.add_argument(
        "--config",
        type=Path,
        help="speak as the daemon with these settings does: its voices (a Mandarin part to "
        "the Mandarin voice), its lexicon; --voice then names a configured voice",
    )
    p.add_argument(
        "--voice",
        help="voice name, path to voice.onnx or a voice directory (default: INT8 joe)",
    )
    p.add_argument("--sha256", help="pin the model's SHA-256 (else its manifest is used)")
    p.add_argument("--speaker", help="speaker name or id of a multi-speaker voice")
    p.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="speaking rate: 1.5 is 50%% faster (length scale 1/speed)",
    )
    p.add_argument("--volume", type=float, default=1.0, help="gain, 0.0-2.0")
    p.add_argument("--device", help="ALSA/PortAudio output device (default: system default)")
    p.add_argument(
        "--threads", type=int, help="onnxruntime intra-op threads (default: the daemon's)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..config import AudioSettings, ConfigError, QueueSettings, SynthesisSettings
    from ..text import EmptyTextError, ssml
    from ..text.lexicon import LexiconError
    from ..voice import files
    from ..voice.base import SpeechOptions
    from ..voice.integrity import ModelIntegrityError
    from ..voice.model import share_runtime
    from ..voice.registry import open_voice
    from .oneshot import NoSoundCardError, SayFailed, say

    if not 0.1 <= args.speed <= 10 or not 0.0 <= args.volume <= 2.0:
        return fail(EXIT_USAGE, "--speed must be within 0.1-10 and --volume within 0-2")
    try:
        text = _text(args.text)
    except ValueError as err:
        return fail(EXIT_USAGE, str(err))
    document = None
    if args.ssml or ssml.looks_like_ssml(text):
        try:  # the daemon's limit: the configured one with --config
            limit = _settings(args).queue.max_text_chars if args.config else None
            document = ssml.parse(text, max_chars=limit or QueueSettings().max_text_chars)
        except ConfigError as err:
            return fail(EXIT_REFUSED, str(err))
        except ssml.SsmlError as err:
            return fail(EXIT_USAGE, str(err))
    synthesis = SynthesisSettings()  # the daemon's defaults, but for --threads
    threads = synthesis.threads if args.threads is None else args.threads
    try:
        share_runtime()
        if args.config is not None:
            voice, options, router, synthesis = configured(args)
        else:
            voice = open_voice(args.voice, args.sha256, threads, synthesis.max_phonemes)
            options = SpeechOptions(
                speaker=args.speaker,
                length_scale=voice.length_scale / args.speed,
                volume=args.volume,
            )
            router = None
        output = _output(args.out, AudioSettings(device=args.device), voice.sample_rate)
        report = say(text, voice, options, output, synthesis, document, router)
    except NoSoundCardError as err:
        hint = "no sound card? write a WAV file instead with --out FILE.wav"
        return fail(EXIT_NO_DEVICE, f"no audio output device ({err}); {hint}")
    except (files.VoiceNotFoundError, ModelIntegrityError, ConfigError, LexiconError) as err:
        return fail(EXIT_REFUSED, str(err))
    except (EmptyTextError, ValueError) as err:
        return fail(EXIT_USAGE, str(err))
    except SayFailed as err:
        return fail(EXIT_ERROR, str(err))
    where = f"wrote {args.out}" if args.out else "played"
    print(f"{where}: {report.summary()}", file=sys.stderr)
    return 0


def _text(given: str) -> str:
    """The text to say: the argument, or stdin for "-". ValueError when it is not UTF-8
    (Python hands undecodable bytes on as lone surrogates, which fail much later)."""
    if given == "-":
        data = sys.stdin.buffer.read()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(f"the text is not valid UTF-8 (byte {err.start})") from None
    bad = next((i for i, c in enumerate(given) if "\ud800" <= c <= "\udfff"), None)
    if bad is not None:
        raise ValueError(f"the text is not valid UTF-8 (character {bad})")
    return given


def _settings(args: argparse.Namespace) -> Settings:
    from ..config import load_settings

    return load_settings(args.config)


def configured(
    args: argparse.Namespace,
) -> tuple[SpeechVoice, SpeechOptions, Router, SynthesisSettings]:
    """The voice, options and router a request with these arguments gets from the daemon
    with the settings in `args.config` (`--threads` wins over its own). ConfigError,
    LexiconError, or ValueError for a voice it does not have."""
    import dataclasses

    from ..speech.routing import Router
    from ..text import lexicon
    from ..voice.registry import Voices

    settings = _settings(args)
    if args.threads is not None:
        synthesis = dataclasses.replace(settings.synthesis, threads=args.threads)
        settings = dataclasses.replace(settings, synthesis=synthesis)
    entries = lexicon.load(settings.text.lexicon, settings.text.lexicon_file)
    voices = Voices(settings)
    voice = voices.choose(args.voice, None)
    options = voices.options_for(voice, speaker=args.speaker, speed=args.speed, volume=args.volume)
    router = Router(settings.synthesis, voices, lexicon.Lexicon(entries), settings.text)
    return voice, options, router, settings.synthesis


def _output(out: Path | None, audio: AudioSettings, rate: int) -> AudioOutput:
    """The daemon's ALSA output (its defaults but the device), or one WAV file."""
    from ..audio.sinks import open_output
    from ..audio.wavfile import WavFileOutput

    return WavFileOutput(out, audio, rate) if out else open_output(audio, rate)
