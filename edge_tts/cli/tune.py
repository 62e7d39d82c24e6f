"""`edge-ttsd tune`: measure every build of each configured voice on this machine, choose
the fastest one that passes the quality gate, and record it for the daemon;
`edge-ttsd tune --show`: what is recorded, and whether it still holds here."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .common import EXIT_REFUSED, Subparsers, add_config_arg, fail


def add_parser(sub: Subparsers) -> None:
    from ..tune import DEFAULT_BUDGET_S

    p = sub.add_parser(
        "tune", help="measure each voice's builds here and record the fastest good one"
    )
    add_config_arg(p)
    p.add_argument("--voice", action="append", default=[], help="only this voice; repeatable")
    p.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET_S,
        help="seconds for all voices (default %(default)g)",
    )
    p.add_argument(
        "--threads",
        type=lambda v: [int(n) for n in v.split(",")],
        default=[],
        help="thread counts to time, e.g. 1,2 (default: the configured count, 1, 2, cores)",
    )
    p.add_argument(
        "--schemes",
        type=lambda v: [name for name in v.split(",") if name],
        default=[],
        help="also build these INT8 schemes here first, e.g. static-enc-flow-dec0 (minutes); "
        "auto: those made for a feature of this CPU (fp16 stage 2 where it has FP16 arithmetic)",
    )
    p.add_argument("--quick", action="store_true", help="one short sentence per build")
    p.add_argument("--show", action="store_true", help="print the recorded choice; no tuning")
    p.add_argument("--json", action="store_true", help="print the record as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..config import ConfigError, load_settings
    from ..tune.quantized import UnknownSchemeError
    from ..voice.builds import BuildError
    from ..voice.files import VoiceNotFoundError
    from ..voice.integrity import ModelIntegrityError

    try:
        settings = load_settings(args.config) if args.config.exists() else _defaults(args)
        unknown = [name for name in args.voice if name not in settings.voices]
        if unknown:
            raise ConfigError(
                f"unknown voice(s) {', '.join(unknown)}; configured: {', '.join(settings.voices)}"
            )
        if args.show:
            return _show(settings, args.json)
        from ..tune.run import tune

        log = (lambda _: None) if args.json else print
        result = tune(
            settings, args.voice, args.budget, args.threads, args.quick, log, args.schemes
        )
    except (
        ConfigError,
        BuildError,
        VoiceNotFoundError,
        ModelIntegrityError,
        UnknownSchemeError,
    ) as err:
        return fail(EXIT_REFUSED, str(err))
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(format_record(result))
    return 0


def _defaults(args: argparse.Namespace) -> Any:
    """No config file (a desktop, or before the first deploy): the default voice only."""
    from ..config import default_settings

    print(f"{args.config} does not exist: using the default settings", file=sys.stderr)
    return default_settings()


def _show(settings: Any, as_json: bool) -> int:
    from ..voice import tune_record as record

    found = record.load(settings)
    if found is None:
        print(f"No tuning recorded in {record.record_path(settings)}: run edge-ttsd tune")
        return 1
    if as_json:
        print(json.dumps(found, indent=2, sort_keys=True))
        return 0
    print(format_record(found))
    return print_choices(settings)


def print_choices(settings: Any, set_aside: bool = True) -> int:
    """Which build the daemon would load for each voice now, and why; 78 when a pinned
    build is missing (the daemon would refuse to start). `set_aside`: an unusable
    tuning record is moved aside (else only ignored)."""
    from ..voice.builds import choices
    from ..voice.files import VoiceNotFoundError

    try:
        chosen = choices(settings, set_aside)
    except VoiceNotFoundError as err:
        return fail(EXIT_REFUSED, str(err))
    for name, choice in chosen.items():
        build = choice.build
        print(f"voice {name}: loads the {build.scheme} build {build.path} ({choice.why})")
    return 0


def format_record(result: dict[str, Any]) -> str:
    machine = result["machine"]
    flags = ", ".join(machine["notable_flags"]) or "none notable"
    lines = [
        f"CPU {machine['model']} ({machine['arch']}, {machine['cores']} cores; {flags}), "
        f"onnxruntime {machine['onnxruntime']}; measured {result['created']} in "
        f"{result['elapsed_s']} s (budget {result['budget_s']:g} s)"
    ]
    for name, entry in result["voices"].items():
        lines += ["", f"voice {name}:", _table(entry)]
        chosen = entry["chosen"]
        lines.append(f"chosen: {chosen['scheme']} ({chosen['path']}): {entry['why']}")
        if entry["fastest_threads"] != entry["threads"]:
            lines.append(
                f"note: {entry['fastest_threads']} thread(s) were faster than the configured "
                f"{entry['threads']} for it; only synthesis.threads in the config changes that"
            )
    return "\n".join(lines)


def _table(entry: dict[str, Any]) -> str:
    width = max([26, *(len(_label(c)) + 2 for c in entry["candidates"])])  # names are free
    rows = [f"{'build':<{width}}{'gate':<14}{'threads':>7}{'RTF':>8}{'TTFA p50':>10}{'RSS':>9}"]
    for c in entry["candidates"]:
        gate = c["gate"]
        verdict = {"fp32": "reference", "imported": "-"}.get(c["scheme"], "no FP32 here")
        if gate is not None:
            verdict = f"{'pass' if gate['passed'] else 'FAIL'} {gate['max_distance']:.2f}"
        name = _label(c)
        rss = f"+{c['rss_mb']:.0f} MB" if c["rss_mb"] is not None else "-"
        for count, t in c["by_threads"].items():
            rows.append(
                f"{name:<{width}}{verdict:<14}{count:>7}{t['rtf']:>8.3f}"
                f"{t['ttfa_ms']:>7.0f} ms{rss:>9}"
            )
            name = verdict = rss = ""
    return "\n".join(rows)


def _label(candidate: dict[str, Any]) -> str:
    return str(candidate["scheme"]) + (" (configured)" if candidate["configured"] else "")
