"""`edge-ttsd verify-model`: check a model (or a voice directory) as the daemon would load
it, and print its digest."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import EXIT_REFUSED, Subparsers, fail


def add_parser(sub: Subparsers) -> None:
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..voice import files, voice_dir
    from ..voice.integrity import ModelIntegrityError, read_verified

    if args.model is not None and voice_dir.is_voice_dir(Path(args.model).expanduser()):
        return _verify_voice_dir(Path(args.model).expanduser(), args.sha256)
    try:
        voice = files.resolve(args.model)
        verified = read_verified(voice.model, pinned=args.sha256, builtin=voice.builtin_digest)
    except (files.VoiceNotFoundError, ModelIntegrityError) as err:
        return fail(EXIT_REFUSED, str(err))
    state = "unpinned" if verified.pinned_by == "none" else f"OK (pinned by {verified.pinned_by})"
    print(f"{verified.sha256}  {voice.model}  {state}")
    return 0


def _verify_voice_dir(directory: Path, pinned: str | None) -> int:
    """A two-stage voice as the daemon loads it: the manifest against `pinned`, every file
    it lists against the manifest, voice.json parsed, both graphs self-contained ONNX."""
    from ..voice import voice_dir
    from ..voice.integrity import ModelIntegrityError, parse_self_contained

    try:
        config, manifest = voice_dir.verify(directory, pinned)
        graphs = {config.acoustic.file, config.vocoder.file}
        for name in dict.fromkeys([*manifest.files, *graphs]):  # unlisted graphs: refused
            data = voice_dir.read_file(directory, name, manifest)
            if name in graphs:
                parse_self_contained(directory / name, data)
    except (voice_dir.VoiceDirError, ModelIntegrityError) as err:
        return fail(EXIT_REFUSED, str(err))
    state = "OK (pinned by config)" if pinned else "unpinned"
    print(f"{manifest.sha256}  {directory}  {state}; {len(manifest.files)} files verified")
    return 0
