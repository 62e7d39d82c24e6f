"""Commands that log in to the broker as the device and wait for an answer:
`edge-ttsd wait-online` (the rollout gate) and `edge-ttsd homeassistant remove`."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import EXIT_REFUSED, Subparsers, add_config_arg, fail

_EXITS = (
    "1 on timeout (also: broker unreachable), 2 when the broker refuses the login, "
    "78 for a bad config."
)


def add_parsers(sub: Subparsers) -> None:
    p = sub.add_parser(
        "wait-online",
        help="the rollout gate: wait until this device's retained availability says online",
        description=f"Exit 0 once online, {_EXITS}",
    )
    _add_options(p, timeout=120.0)
    p.set_defaults(func=wait_online)

    p = sub.add_parser("homeassistant", help="Home Assistant's view of this device")
    actions = p.add_subparsers(dest="action", required=True)
    rm = actions.add_parser(
        "remove",
        help="remove a decommissioned device from Home Assistant",
        description="Clears the device's retained discovery config (HA deletes the device "
        "and its entities) and volume. Stop the daemon first: it announces itself again at "
        f"every connect. Exit 0 once the broker has them, {_EXITS}",
    )
    _add_options(rm, timeout=30.0)
    rm.set_defaults(func=homeassistant_remove)


def _add_options(p: argparse.ArgumentParser, timeout: float) -> None:
    add_config_arg(p)
    p.add_argument(
        "--password-file", type=Path, help="broker password (else the config's own source)"
    )
    p.add_argument("--timeout", type=float, default=timeout, help="seconds (default %(default)g)")


def wait_online(args: argparse.Namespace) -> int:
    from ..config import ConfigError, load_settings
    from ..mqtt.online_gate import wait_online

    try:
        return wait_online(load_settings(args.config), args.timeout, args.password_file)
    except ConfigError as err:
        return fail(EXIT_REFUSED, f"{args.config}: {err}")


def homeassistant_remove(args: argparse.Namespace) -> int:
    from ..config import ConfigError, load_settings
    from ..homeassistant.remove import remove

    try:
        return remove(load_settings(args.config), args.timeout, args.password_file)
    except ConfigError as err:
        return fail(EXIT_REFUSED, f"{args.config}: {err}")
