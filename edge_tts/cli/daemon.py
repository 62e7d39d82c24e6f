"""`edge-ttsd run` (the daemon), `edge-ttsd check-config` and `edge-ttsd check-lexicon`."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from ..daemon.logs import setup_logging
from . import tune
from .common import DEFAULT_CONFIG, EXIT_REFUSED, Subparsers, add_config_arg, fail

_LOGGER = logging.getLogger("edge_tts")


def add_parsers(sub: Subparsers) -> None:
    p = sub.add_parser("run", help="run the daemon: MQTT text in, speech out")
    add_config_arg(p)
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a setting, e.g. --set audio.sink=wav-dir (VALUE is YAML); repeatable",
    )
    p.set_defaults(func=run)
    p = sub.add_parser("check-config", help="validate a settings file; non-zero exit if bad")
    p.add_argument("config", type=Path)
    p.set_defaults(func=check_config)
    p = sub.add_parser("check-lexicon", help="validate a lexicon file; non-zero exit if bad")
    p.add_argument("lexicon", type=Path)
    p.add_argument(
        "--config",
        type=Path,
        default=DEFAULT_CONFIG,
        help="the settings whose voices check the phonemes (default: the daemon's, if there)",
    )
    p.set_defaults(func=check_lexicon)


def run(args: argparse.Namespace) -> int:
    from ..config import ConfigError, load_settings
    from ..daemon.app import Daemon, StartupRefused
    from ..voice.integrity import ModelIntegrityError
    from ..voice.model import share_runtime

    try:
        overrides = _overrides(args.set)
        settings = load_settings(args.config, overrides)
    except ConfigError as err:
        return fail(EXIT_REFUSED, f"{args.config}: {err}")
    setup_logging("DEBUG" if args.verbose else settings.log_level)
    share_runtime()  # this process owns every session it runs
    try:
        return Daemon(settings, reload=lambda: load_settings(args.config, overrides)).run()
    except (StartupRefused, ModelIntegrityError) as err:
        _LOGGER.critical("Refusing to start: %s", err)
        return fail(EXIT_REFUSED, str(err))


def _overrides(pairs: list[str]) -> dict[str, object]:
    import yaml

    from ..config import ConfigError

    overrides: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(f"--set {pair!r}: expected KEY=VALUE")
        overrides[key.strip()] = yaml.safe_load(value)
    return overrides


def check_config(args: argparse.Namespace) -> int:
    from ..config import ConfigError, load_settings
    from ..text import lexicon

    try:
        settings = load_settings(args.config)
    except ConfigError as err:
        return fail(EXIT_REFUSED, f"{args.config}: {err}")
    try:
        _check_http(settings)
    except ConfigError as err:
        return fail(EXIT_REFUSED, f"{args.config}: {err}")
    try:
        entries = lexicon.load(settings.text.lexicon, settings.text.lexicon_file)
    except lexicon.LexiconError as err:
        return fail(EXIT_REFUSED, f"{args.config}: {err}")
    voices = ", ".join(settings.voices)
    print(
        f"{args.config}: OK (device {settings.device_id}, broker "
        f"{settings.broker.host}:{settings.broker.port}, voices {voices}, "
        f"{len(entries)} lexicon entries)"
    )
    _report_state_files(settings)
    return tune.print_choices(settings, set_aside=False)


def _check_http(settings: Any) -> None:
    """The HTTP server's token, as far as it can be checked here: a token file that is
    unreadable or too short fails; a server beyond loopback with no token in sight is a
    warning, since the unit's credential is only visible to the daemon."""
    from ..config import HTTP_TOKEN_CREDENTIAL

    http = settings.http
    if http.uri is None or http.token() is not None or http.loopback:
        return
    print(
        f"edge-ttsd: warning: http.uri {http.uri} is reachable from other machines: the "
        f'daemon refuses to start unless it gets a bearer token (the systemd credential "'
        f'{HTTP_TOKEN_CREDENTIAL}", or http.token_file)',
        file=sys.stderr,
    )


def check_lexicon(args: argparse.Namespace) -> int:
    """A lexicon file as the daemon would read it (the Ansible role checks one before it
    replaces the old): its lines, and each reading against the configured voices that
    would say it (the settings of --config, else the default voice)."""
    from ..config import ConfigError, default_settings, load_settings
    from ..speech.lexicon_check import check_readings
    from ..text import lexicon
    from ..voice import files
    from ..voice.registry import Voices
    from ..voice.voice_dir import VoiceDirError

    try:
        lines = lexicon.read_file(args.lexicon).splitlines()
        entries = lexicon.parse_lines(lines, str(args.lexicon))
        given = args.config != DEFAULT_CONFIG or DEFAULT_CONFIG.exists()
        settings = load_settings(args.config) if given else default_settings()
        check_readings(entries, Voices(settings))
    except (lexicon.LexiconError, ConfigError, files.VoiceNotFoundError, VoiceDirError) as err:
        return fail(EXIT_REFUSED, str(err))
    for warning in lexicon.duplicates(entries):
        print(f"edge-ttsd: warning: {warning}", file=sys.stderr)
    kept = len({(entry.key, entry.scope) for entry in entries})
    print(f"{args.lexicon}: OK ({kept} entries)")
    return 0


def _report_state_files(settings: Any) -> None:
    """A state file the daemon cannot use is a warning, not a failure (exit 0): the daemon
    sets it aside and starts on its default. Nothing is moved here."""
    from ..homeassistant.volume import FILE_NAME as VOLUME_FILE
    from ..homeassistant.volume import problem as volume_problem
    from ..speech.dedupe import FILE_NAME as PLAYED_FILE
    from ..speech.dedupe import problem as played_problem
    from ..voice import tune_record as record

    state = settings.resolved_state_dir()
    found = {
        state / PLAYED_FILE: played_problem(state / PLAYED_FILE),
        state / VOLUME_FILE: volume_problem(state / VOLUME_FILE),
        record.record_path(settings): record.problem(record.record_path(settings)),
    }
    for path, problem in found.items():
        if problem is not None:
            print(
                f"edge-ttsd: warning: unusable state file {path} ({problem}): "
                "the daemon will set it aside and start without it",
                file=sys.stderr,
            )
