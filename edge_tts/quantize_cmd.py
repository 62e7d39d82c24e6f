"""`edge-ttsd quantize`: build an INT8 voice, then report its quality against FP32."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from importlib.resources import files as package_files
from pathlib import Path

import onnxruntime

from .text import prepare
from .voice import files
from .voice.integrity import ModelIntegrityError, manifest_path, read_verified
from .voice.model import load_config
from .voice.phonemize import text_to_ids
from .voice.quality import quality_report
from .voice.quantize import DEFAULT_SCHEME, SCHEMES, quantize, recipe_fingerprint

NAIVE_SCHEME = "naive-dynamic"


def sentence_ids(voice: files.VoiceFiles, resource: str) -> list[list[int]]:
    """Phoneme ids of a packaged sentence list, through the same front-end as speech."""
    config = load_config(voice)
    text = package_files("edge_tts.voice").joinpath("data", resource).read_text("utf-8")
    ids: list[list[int]] = []
    for line in filter(None, map(str.strip, text.splitlines())):
        # first_chunk_chars as when the INT8 builds were calibrated: other cuts would
        # change the calibration data, so the model and its recipe fingerprint.
        chunks = prepare(
            line, language=config.espeak_voice, max_chunk_chars=10_000, first_chunk_chars=60
        )
        for chunk in chunks:
            ids.extend(text_to_ids(chunk, config))
    return ids


def run_quantize(args: argparse.Namespace) -> int:
    source = files.from_model_path(args.source) if args.source else files.packaged_fp32()
    output: Path = args.output or files.default_int8_path()
    scheme = args.scheme or DEFAULT_SCHEME
    if scheme not in SCHEMES:
        print(
            f"edge-ttsd: error: unknown scheme {scheme!r} (known: {', '.join(SCHEMES)})",
            file=sys.stderr,
        )
        return 2
    try:
        source_sha256 = read_verified(source.model, builtin=source.builtin_digest).sha256
    except ModelIntegrityError as err:
        print(f"edge-ttsd: error: {err}", file=sys.stderr)
        return 78
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
    manifest_file = manifest_path(output)
    if not output.is_file() or not manifest_file.is_file():
        return False
    try:
        manifest = json.loads(manifest_file.read_text("utf-8"))
        read_verified(output, pinned=str(manifest["sha256"]))
    except (ValueError, KeyError, ModelIntegrityError):
        return False
    return bool(
        manifest.get("recipe") == fingerprint
        and manifest.get("source_sha256") == source_sha256
        and manifest.get("onnxruntime_version") == onnxruntime.__version__
    )


def _report(source: files.VoiceFiles, output: Path, scheme: str) -> None:
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
