"""`edge-ttsd say`: speak one text through the daemon's pipeline and outputs, then exit."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .common import EXIT_ERROR, EXIT_NO_DEVICE, EXIT_REFUSED, EXIT_USAGE, Subparsers, fail

if TYPE_CHECKING:
    from ..audio.output import AudioOutput
    from ..config import AudioSettings


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
    from ..config import AudioSettings, QueueSettings, SynthesisSettings
    from ..speech.oneshot import NoSoundCardError, SayFailed, say
    from ..text import EmptyTextError, ssml
    from ..voice import files
    from ..voice.base import SpeechOptions
    from ..voice.integrity import ModelIntegrityError
    from ..voice.model import share_runtime
    from ..voice.registry import open_voice

    text = sys.stdin.read() if args.text == "-" else args.text
    if not 0.1 <= args.speed <= 10 or not 0.0 <= args.volume <= 2.0:
        return fail(EXIT_USAGE, "--speed must be within 0.1-10 and --volume within 0-2")
    document = None
    if args.ssml or ssml.looks_like_ssml(text):
        try:
            document = ssml.parse(text, max_chars=QueueSettings().max_text_chars)
        except ssml.SsmlError as err:
            return fail(EXIT_USAGE, str(err))
    synthesis = SynthesisSettings()  # the daemon's defaults, but for --threads
    threads = synthesis.threads if args.threads is None else args.threads
    try:
        share_runtime(threads)
        voice = open_voice(args.voice, args.sha256, threads, synthesis.max_phonemes)
        options = SpeechOptions(
            speaker=args.speaker,
            length_scale=voice.length_scale / args.speed,
            volume=args.volume,
        )
        output = _output(args.out, AudioSettings(device=args.device), voice.sample_rate)
        report = say(text, voice, options, output, synthesis, document)
    except NoSoundCardError as err:
        hint = "no sound card? write a WAV file instead with --out FILE.wav"
        return fail(EXIT_NO_DEVICE, f"no audio output device ({err}); {hint}")
    except (files.VoiceNotFoundError, ModelIntegrityError) as err:
        return fail(EXIT_REFUSED, str(err))
    except (EmptyTextError, ValueError) as err:
        return fail(EXIT_USAGE, str(err))
    except SayFailed as err:
        return fail(EXIT_ERROR, str(err))
    where = f"wrote {args.out}" if args.out else "played"
    print(f"{where}: {report.summary()}", file=sys.stderr)
    return 0


def _output(out: Path | None, audio: AudioSettings, rate: int) -> AudioOutput:
    """The daemon's ALSA output (its defaults but the device), or one WAV file."""
    from ..audio.sinks import open_output
    from ..audio.wavfile import WavFileOutput

    return WavFileOutput(out, audio, rate) if out else open_output(audio, rate)
