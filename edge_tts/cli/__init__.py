"""Command line: `edge-ttsd run | check-config | say | explain | verify-model | quantize |
tune | wait-online | voice import | homeassistant remove`.

One module per subcommand family; each adds its parser and imports what it needs only
when it runs, so `wait-online` on a Pi does not load onnxruntime."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..daemon.logs import setup_logging
from . import broker, daemon, explain, quantize, say, tune, verify, voice
from .common import DEFAULT_CONFIG, EXIT_ERROR, EXIT_NO_DEVICE, EXIT_REFUSED, EXIT_USAGE

__all__ = [
    "DEFAULT_CONFIG",
    "EXIT_ERROR",
    "EXIT_NO_DEVICE",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "build_parser",
    "main",
]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging("DEBUG" if args.verbose else "WARNING")
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="edge-ttsd", description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    daemon.add_parsers(sub)
    say.add_parser(sub)
    explain.add_parser(sub)
    verify.add_parser(sub)
    quantize.add_parser(sub)
    broker.add_parsers(sub)
    voice.add_parser(sub)
    tune.add_parser(sub)
    return parser
