"""`edge-ttsd quantize`: build an INT8 voice, then report its quality against FP32."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from .common import EXIT_REFUSED, EXIT_USAGE, Subparsers, fail

if TYPE_CHECKING:
    from ..voice.files import VoiceFiles

NAIVE_SCHEME = "naive-dynamic"


def add_parser(sub: Subparsers) -> None:
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # onnx and onnxruntime's quantization tools load only for this command.
    from ..voice import files
    from ..voice.integrity import ModelIntegrityError, read_verified
    from ..voicebuild.calibration import sentence_ids
    from ..voicebuild.quantizer import DEFAULT_SCHEME, SCHEMES, quantize, recipe_fingerprint

    source = files.from_model_path(args.source) if args.source else files.packaged_fp32()
    output: Path = args.output or files.default_int8_path()
    scheme = args.scheme or DEFAULT_SCHEME
    if scheme not in SCHEMES:
        return fail(EXIT_USAGE, f"unknown scheme {scheme!r} (known: {', '.join(SCHEMES)})")
    try:
        source_sha256 = read_verified(source.model, builtin=source.builtin_digest).sha256
    except ModelIntegrityError as err:
        return fail(EXIT_REFUSED, str(err))
    calibration = sentence_ids(source, "calibration_en.txt")
    fingerprint = recipe_fingerprint(SCHEMES[scheme], calibration)
    if args.if_stale and _up_to_date(output, fingerprint, source_sha256):
        print(f"{output} is up to date ({scheme})")
        return 0
    output.parent.mkdir(parents=True, exist_ok=True)
    manifest = quantize(source.model, output, scheme, calibration)
    size_mb = output.stat().st_size / 1e6
    print(f"{manifest['sha256']}  {output}  ({scheme}, {size_mb:.1f} MB)")
    if not args.no_report:
        _report(source, output, scheme)
    return 0


def _up_to_date(output: Path, fingerprint: str, source_sha256: str) -> bool:
    """Built from this source, with this recipe and onnxruntime, and not modified since."""
    import onnxruntime

    from ..voice.build_manifest import readable_manifest
    from ..voice.integrity import ModelIntegrityError, read_verified

    manifest = readable_manifest(output) if output.is_file() else None
    if manifest is None:
        return False
    try:
        read_verified(output, pinned=manifest.sha256)
    except ModelIntegrityError:
        return False
    return (
        manifest.recipe == fingerprint
        and manifest.source_sha256 == source_sha256
        and manifest.onnxruntime_version == onnxruntime.__version__
    )


def _report(source: VoiceFiles, output: Path, scheme: str) -> None:
    from ..voicebuild.calibration import sentence_ids
    from ..voicebuild.quality import quality_report
    from ..voicebuild.quantizer import quantize

    ids = sentence_ids(source, "evaluation_en.txt")
    fp32_mb = source.model.stat().st_size / 1e6
    print(
        f"\nQuality of {scheme} ({output.stat().st_size / 1e6:.1f} MB) against FP32 "
        f"({fp32_mb:.1f} MB) on {len(ids)} sentences, noise scales 0:"
    )
    print(quality_report(source.model, output, ids).format())
    if scheme == NAIVE_SCHEME:
        return
    with tempfile.TemporaryDirectory() as tmp:
        naive = Path(tmp) / "naive.onnx"
        quantize(source.model, naive, NAIVE_SCHEME, [])
        size_mb = naive.stat().st_size / 1e6
        print(f"\nFor comparison, {NAIVE_SCHEME} ({size_mb:.1f} MB) against FP32:")
        print(quality_report(source.model, naive, ids).format())
