"""What our quantizer writes beside a build it made: `<model>.manifest.json`.

It pins the build (its SHA-256) and says what it is: the scheme, the FP32 original it
was built from (that one's SHA-256), and the recipe and onnxruntime that made it
(`edge-ttsd quantize --if-stale` builds again when they change). Written by
edge_tts.voicebuild.quantizer through `write_manifest`, read only through `read_manifest`
(`readable_manifest`).
A two-stage voice's directory has a manifest of another kind (voice_dir.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

MANIFEST_SUFFIX = ".manifest.json"
_OPTIONAL = ("scheme", "source_sha256", "recipe", "onnxruntime_version")


class ManifestError(ValueError):
    """There is a manifest, but it cannot be read or is not one of ours."""


@dataclass(frozen=True)
class BuildManifest:
    """The fields of a manifest anything reads (the quantizer writes more: node counts,
    sizes, versions, for people). Digests are lower-case hex."""

    sha256: str  # of the build: what it must hash to
    scheme: str | None = None
    source_sha256: str | None = None  # of the FP32 original it was quantized from
    recipe: str | None = None  # the scheme's and calibration data's fingerprint
    onnxruntime_version: str | None = None


def manifest_path(model: Path) -> Path:
    return model.with_name(model.name + MANIFEST_SUFFIX)


def read_manifest(model: Path) -> BuildManifest | None:
    """The manifest beside `model`; None when there is none, ManifestError when there is
    one that cannot be read or has no string `sha256`."""
    path = manifest_path(model)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise ManifestError(f"{path}: unreadable manifest ({err})") from err
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: unreadable manifest (not a JSON object)")
    return _parsed(path, data)


def readable_manifest(model: Path) -> BuildManifest | None:
    """The manifest beside `model`, None also when it cannot be read: for telling builds
    apart, where a broken manifest makes no candidate (loading the model says why)."""
    try:
        return read_manifest(model)
    except ManifestError:
        return None


def write_manifest(model: Path, fields: Mapping[str, object]) -> None:
    """Write `model`'s manifest: `fields` must hold at least `sha256`."""
    _parsed(manifest_path(model), fields)  # what is written can be read back
    manifest_path(model).write_text(json.dumps(fields, indent=2, sort_keys=True) + "\n")


def _parsed(path: Path, data: Mapping[str, object]) -> BuildManifest:
    wrong = [key for key in ("sha256", *_OPTIONAL) if not isinstance(data.get(key, ""), str)]
    if wrong or not data.get("sha256"):
        what = ", ".join(repr(key) for key in wrong or ["sha256"])
        raise ManifestError(f"{path}: manifest {what} missing or not a string")
    text = {key: str(data[key]) for key in _OPTIONAL if data.get(key)}
    return BuildManifest(
        sha256=str(data["sha256"]).lower(),
        scheme=text.get("scheme"),
        source_sha256=text["source_sha256"].lower() if "source_sha256" in text else None,
        recipe=text.get("recipe"),
        onnxruntime_version=text.get("onnxruntime_version"),
    )
