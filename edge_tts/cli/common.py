"""What every subcommand shares: exit codes, the default settings file, error output."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TypeAlias

# Exit codes systemd can tell apart: "refused to start" must not be restarted in a loop.
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NO_DEVICE = 69  # EX_UNAVAILABLE
EXIT_REFUSED = 78  # EX_CONFIG: bad config, tampered or unknown model

DEFAULT_CONFIG = Path("/etc/edge-tts/edge-tts.yaml")

# A string: argparse's private class is not subscriptable at run time (typeshed's is).
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def fail(code: int, message: str) -> int:
    print(f"edge-ttsd: error: {message}", file=sys.stderr)
    return code


def add_config_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="YAML settings file")
