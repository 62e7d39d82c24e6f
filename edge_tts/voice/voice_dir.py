"""A two-stage voice's directory: its config (voice.json) and its manifest, verified.

    <dir>/voice.json      format, language, rates, tensor names, the symbol table
    <dir>/acoustic.onnx   symbol ids -> mel spectrogram
    <dir>/vocoder.onnx    mel spectrogram -> audio
    <dir>/PROVENANCE      where the weights came from and under which licences
    <dir>/manifest.json   {"format": 1, "files": {name: sha256, ...}}

The manifest pins every file; the config's `voices.<name>.sha256` pins the manifest. So
one digest vouches for the whole voice, as one does for a Piper model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .integrity import ModelIntegrityError, read_pinned

CONFIG_NAME = "voice.json"
MANIFEST_NAME = "manifest.json"
FORMAT = "two-stage"


class VoiceDirError(ValueError):
    """The directory is not a usable two-stage voice (config or manifest malformed)."""


@dataclass(frozen=True)
class Stage:
    file: str
    inputs: Mapping[str, str]  # our role ("ids", "mel", ...) -> the graph's tensor name
    outputs: Mapping[str, str]


@dataclass(frozen=True)
class TwoStageConfig:
    name: str
    language: str
    sample_rate: int
    hop_length: int  # audio samples per mel frame
    mel_channels: int
    acoustic: Stage
    vocoder: Stage
    symbols: tuple[str, ...]  # id -> symbol
    speakers: Mapping[str, int]
    sentence_silence_s: float


def is_voice_dir(path: Path) -> bool:
    return path.is_dir() and (path / CONFIG_NAME).is_file()


@dataclass(frozen=True)
class Manifest:
    sha256: str  # of manifest.json itself: what `voices.<name>.sha256` pins
    files: Mapping[str, str]  # file name -> sha256


def read_manifest(directory: Path, pinned: str | None) -> Manifest:
    """The manifest's file digests, after checking the manifest against `pinned`."""
    verified = read_pinned(directory / MANIFEST_NAME, pinned=pinned)
    try:
        files = json.loads(verified.data)["files"]
        digests = {str(name): str(digest).lower() for name, digest in files.items()}
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ModelIntegrityError(f"{verified.path}: unreadable manifest ({err!r})") from err
    return Manifest(verified.sha256, digests)


def read_file(directory: Path, name: str, manifest: Manifest) -> bytes:
    """A file of the voice, read once and checked against its manifest digest."""
    if name not in manifest.files:
        raise ModelIntegrityError(f"{directory / MANIFEST_NAME} does not pin {name}")
    return read_pinned(directory / name, pinned=manifest.files[name]).data


def read_config(directory: Path) -> TwoStageConfig:
    """The voice's config as it is now, unverified: what the daemon needs to know before
    loading it (its language, rate). `verify` checks it at load, with everything else."""
    path = directory / CONFIG_NAME
    try:
        return _parse_bytes(path, path.read_bytes())
    except OSError as err:
        raise VoiceDirError(f"cannot read voice config {path}: {err.strerror}") from err


def verify(directory: Path, pinned: str | None = None) -> tuple[TwoStageConfig, Manifest]:
    """The voice's config, checked against its manifest (and the manifest against
    `pinned`); ModelIntegrityError when anything differs."""
    manifest = read_manifest(directory, pinned)
    return _parse_bytes(
        directory / CONFIG_NAME, read_file(directory, CONFIG_NAME, manifest)
    ), manifest


def _parse_bytes(path: Path, raw: bytes) -> TwoStageConfig:
    try:
        return parse(json.loads(raw))
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise VoiceDirError(f"bad voice config {path}: {err!r}") from err


def _stage(raw: Mapping[str, Any], outputs: tuple[str, ...]) -> Stage:
    inputs = raw["inputs"] if "inputs" in raw else {"mel": raw["mel"]}
    return Stage(
        file=str(raw["file"]),
        inputs={str(k): str(v) for k, v in inputs.items()},
        outputs={key: str(raw[key]) for key in outputs},
    )


def parse(raw: Mapping[str, Any]) -> TwoStageConfig:
    if raw.get("format") != FORMAT:
        raise ValueError(f"format is {raw.get('format')!r}, not {FORMAT!r}")
    symbols = tuple(str(s) for s in raw["symbols"])
    if len(set(symbols)) != len(symbols):
        raise ValueError("the symbol table has duplicates")
    return TwoStageConfig(
        name=str(raw["name"]),
        language=str(raw["language"]),
        sample_rate=int(raw["sample_rate"]),
        hop_length=int(raw["hop_length"]),
        mel_channels=int(raw["mel_channels"]),
        acoustic=_stage(raw["acoustic"], ("mel", "durations")),
        vocoder=_stage(raw["vocoder"], ("audio",)),
        symbols=symbols,
        speakers={str(k): int(v) for k, v in raw.get("speakers", {"default": 0}).items()},
        sentence_silence_s=float(raw.get("sentence_silence_s", 0.0)),
    )
