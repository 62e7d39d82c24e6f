"""SHA-256 verified model loading.

The bytes that are hashed are the bytes handed to onnxruntime: the file is read once,
hashed in memory and loaded from that same buffer, so nothing can swap the file between
the check and the load.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .build_manifest import ManifestError, read_manifest

if TYPE_CHECKING:
    import onnx

_LOGGER = logging.getLogger(__name__)


class ModelIntegrityError(RuntimeError):
    """The model is not the one we were told to trust; it must not be loaded."""


@dataclass(frozen=True)
class VerifiedModel:
    path: Path
    data: bytes
    sha256: str
    pinned_by: str  # "config", "manifest", "builtin" or "none"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest_digest(model_path: Path) -> str | None:
    """The digest our quantizer wrote next to the model, if there is a manifest."""
    try:
        manifest = read_manifest(model_path)
    except ManifestError as err:
        raise ModelIntegrityError(str(err)) from err
    return manifest.sha256 if manifest is not None else None


def read_verified(
    path: Path, pinned: str | None = None, builtin: str | None = None
) -> VerifiedModel:
    """Read a model once, check it against the pinned digest and that it is self-contained."""
    verified = read_pinned(path, pinned, builtin)
    parse_self_contained(path, verified.data)
    return verified


def read_pinned(path: Path, pinned: str | None = None, builtin: str | None = None) -> VerifiedModel:
    """Read a model once and check it against the pinned digest (the caller must still run
    `parse_self_contained` on the bytes before loading them).

    Precedence: a digest pinned in the config, then the model's manifest, then a digest
    the code knows for a packaged file. With none of them the model loads unverified
    (and we say so), so any Piper voice a user brings still works.
    """
    expected, source = _expected_digest(path, pinned, builtin)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ModelIntegrityError(f"cannot read model {path}: {err.strerror}") from err
    actual = sha256_hex(data)
    if expected is not None and actual != expected:
        raise ModelIntegrityError(
            f"refusing to load {path}: SHA-256 mismatch "
            f"(expected {expected} from {source}, actual {actual})"
        )
    if expected is None:
        _LOGGER.warning("Model %s is not pinned; loading unverified (sha256 %s)", path, actual)
    return VerifiedModel(path=path, data=data, sha256=actual, pinned_by=source)


def _expected_digest(path: Path, pinned: str | None, builtin: str | None) -> tuple[str | None, str]:
    if pinned:
        return pinned.strip().lower(), "config"
    from_manifest = manifest_digest(path)
    if from_manifest:
        return from_manifest, "manifest"
    if builtin:
        return builtin, "builtin"
    return None, "none"


def parse_self_contained(path: Path, data: bytes) -> onnx.ModelProto:
    """Parse the model, refusing weights in side files: those bytes would escape the hash.

    onnx is imported here, not at the top: the daemon parses in a child process
    (voice/model_check.py) and never pays onnx's 12 MB.
    """
    import onnx
    from google.protobuf.message import DecodeError

    try:
        model = onnx.load_model_from_string(data)  # from bytes: external data is never read
    except (DecodeError, ValueError) as err:
        raise ModelIntegrityError(
            f"refusing to load {path}: not a valid ONNX model ({err})"
        ) from err
    for tensor in _all_tensors(model.graph):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            raise ModelIntegrityError(
                f"refusing to load {path}: tensor {tensor.name!r} references external data"
            )
    return model


def _all_tensors(graph: onnx.GraphProto) -> list[onnx.TensorProto]:
    tensors = list(graph.initializer)
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                tensors.append(attr.t)
            tensors.extend(attr.tensors)
            if attr.HasField("g"):
                tensors.extend(_all_tensors(attr.g))
            for sub in attr.graphs:
                tensors.extend(_all_tensors(sub))
    return tensors
