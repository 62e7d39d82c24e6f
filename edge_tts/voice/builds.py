"""Which build of a voice: the builds of a configured voice on this machine, the one the
daemon loads, and the one that renders its phrases ahead.

A Piper voice has an FP32 original and INT8 builds of it (our quantizer's, one per
scheme, each with a manifest naming the scheme and the original's digest). Which one is
fastest depends on the CPU (int8 dot-product instructions or not), so `edge-ttsd tune`
measures them and the daemon may load another build than the configured file. Only
builds that are verifiable are candidates: the packaged original (the digest is in our
code), a file pinned by the config, or a build whose manifest pins it and names its
original. A two-stage voice has one build, the one imported.

The daemon loads the build `voices.<name>.build` pins, else the one `edge-ttsd tune`
recorded (voice/tune_record.py) while the record still holds (same CPU and onnxruntime, the
configured file and the chosen build unchanged), else the configured file. Phrases are
rendered ahead with the FP32 original when the voice is an INT8 build of the packaged
voice: it sounds better (docs/quantization.md), and while the device is idle its speed
does not matter.

Never loads a model: digests come from pins and manifests, or one hash.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import AUTO_BUILD, Settings, VoiceSettings
from . import files, tune_record, voice_dir
from .build_manifest import MANIFEST_SUFFIX, readable_manifest
from .files import FP32, IMPORTED, scheme_of, source_sha256
from .integrity import manifest_digest, sha256_hex
from .machine import fingerprint, same_machine


@dataclass(frozen=True)
class Build:
    """One build of a voice: which scheme, where, and the digest that must match."""

    scheme: str
    path: Path  # the .onnx of a Piper voice, the directory of a two-stage voice
    sha256: str | None  # None: an unpinned file a user brought (loaded unverified)
    configured: bool  # the file the config names (or the default voice's usual build)


@dataclass(frozen=True)
class Chosen:
    """The build the daemon loads for a voice, and why."""

    build: Build
    chosen_by: str  # "config" or "tune"
    why: str
    # What the load checks the file against: the config's pin for the configured build
    # (None: its manifest's or the packaged digest, as for any model), else the build's.
    pinned_sha256: str | None


class BuildError(files.VoiceNotFoundError):
    """The build the config pins does not exist for this voice."""


# --- the builds on this machine -----------------------------------------------------------


def configured_build(vs: VoiceSettings, digest: bool = True) -> Build:
    """The build the config names (the default voice: our INT8 build when it exists).
    `digest=False`: only the config's pin, never hashing a file (the daemon's start)."""
    spec = str(vs.path) if vs.path is not None else None
    if spec is not None and voice_dir.is_voice_dir(Path(spec).expanduser()):
        directory = Path(spec).expanduser()
        manifest = directory / voice_dir.MANIFEST_NAME
        found = vs.sha256 or (sha256_hex(manifest.read_bytes()) if digest else None)
        return Build(IMPORTED, directory, found, configured=True)
    voice = files.resolve(spec)
    found = _digest(voice, vs) if digest else vs.sha256
    return Build(scheme_of(voice.model), voice.model, found, configured=True)


def candidates(vs: VoiceSettings) -> list[Build]:
    """Every build of the configured voice found on this machine, the configured one
    first."""
    first = configured_build(vs)
    if first.scheme == IMPORTED:
        return [first]
    source = _source_digest(first)
    unique: dict[Path, Build] = {}
    for build in [first, *_originals(first, source), *_int8_builds(first, source)]:
        unique.setdefault(build.path.resolve(), build)
    return list(unique.values())


def pinned_build(vs: VoiceSettings) -> Build:
    """The build `voices.<name>.build` names; BuildError when it is not on this machine."""
    found = candidates(vs)
    for build in found:
        if build.scheme == vs.build:
            return build
    have = ", ".join(b.scheme for b in found)
    raise BuildError(
        f"voice {vs.name!r}: no {vs.build!r} build on this machine (found: {have}); "
        f"build it with `edge-ttsd quantize --scheme {vs.build}`, or set build: auto"
    )


def expected_digest(build: Build) -> str | None:
    """What `build` must hash to now: a changed file is a new build (and a stale choice)."""
    if build.scheme == IMPORTED:
        return sha256_hex((build.path / voice_dir.MANIFEST_NAME).read_bytes())
    return (
        manifest_digest(build.path) or _builtin(build.path) or sha256_hex(build.path.read_bytes())
    )


def packaged_original(model: Path) -> Build | None:
    """The packaged FP32 voice when `model` is our INT8 build of it (its manifest names
    the packaged model's digest as its source), else None."""
    packaged = files.packaged_fp32()
    if model == packaged.model or packaged.builtin_digest is None:
        return None
    if source_sha256(model) != packaged.builtin_digest:
        return None
    return Build(FP32, packaged.model, packaged.builtin_digest, configured=False)


def _digest(voice: files.VoiceFiles, vs: VoiceSettings) -> str:
    return vs.sha256 or manifest_digest(voice.model) or _builtin(voice.model) or _hash(voice)


def _hash(voice: files.VoiceFiles) -> str:
    return sha256_hex(voice.model.read_bytes())


def _builtin(model: Path) -> str | None:
    return files.from_model_path(model).builtin_digest if model.is_file() else None


def _source_digest(build: Build) -> str | None:
    """The FP32 original's digest: its own for an FP32 build, its manifest's for INT8."""
    if build.scheme == FP32:
        return build.sha256
    return source_sha256(build.path)


def _originals(build: Build, source: str | None) -> list[Build]:
    """The FP32 original of `build`: the packaged voice, or `<name>.onnx` beside it."""
    if build.scheme == FP32 or source is None:
        return []
    packaged = packaged_original(build.path)
    if packaged is not None:
        return [packaged]
    sibling = build.path.with_name(files.VoiceFiles(build.path, build.path).name + ".onnx")
    if sibling.is_file() and sha256_hex(sibling.read_bytes()) == source:
        return [Build(FP32, sibling, source, configured=False)]
    return []


def _int8_builds(build: Build, source: str | None) -> list[Build]:
    """Our quantizer's builds of the same original, beside the configured file or in the
    data directory, each pinned by its manifest."""
    if source is None:
        return []
    folders = {build.path.parent, files.data_dir() / "voices"}
    found: list[Build] = []
    for folder in sorted(folders):
        for path in sorted(folder.glob(f"*{files.INT8_SUFFIX}{MANIFEST_SUFFIX}")):
            model = path.with_name(path.name.removesuffix(MANIFEST_SUFFIX))
            manifest = readable_manifest(model)
            if manifest is None or manifest.scheme is None or not model.is_file():
                continue
            if manifest.source_sha256 == source:
                found.append(Build(manifest.scheme, model, manifest.sha256, configured=False))
    return found


# --- the build the daemon loads -----------------------------------------------------------


def choices(settings: Settings, set_aside: bool = True) -> dict[str, Chosen]:
    """Every configured voice's build, as the daemon would load it now. `set_aside`: an
    unusable tuning record is moved aside (else only ignored)."""
    found = tune_record.load(settings, set_aside)
    machine = fingerprint()
    return {name: choose(name, vs, found, machine) for name, vs in settings.voices.items()}


def choose(
    name: str, vs: VoiceSettings, record: dict[str, Any] | None, machine: dict[str, object]
) -> Chosen:
    """The build the daemon loads for voice `name`: a pin in the config always wins."""
    if vs.build != AUTO_BUILD:
        return _chosen(pinned_build(vs), vs, "config", f"voices.{name}.build pins {vs.build}")
    if record is None or name not in record.get("voices", {}):
        return _chosen(
            configured_build(vs, digest=False), vs, "config", "not tuned on this machine"
        )
    configured = configured_build(vs)
    problem = stale(name, record, configured, machine)
    if problem is not None:
        return _chosen(configured, vs, "config", f"the tuning record does not hold: {problem}")
    chosen = _recorded(record["voices"][name])
    if chosen.path.resolve() == configured.path.resolve():
        return _chosen(configured, vs, "tune", "tune kept the configured build")
    return _chosen(chosen, vs, "tune", "tune chose it on this machine")


def stale(
    name: str, record: dict[str, Any], configured: Build, machine: dict[str, object]
) -> str | None:
    """Why the record's choice for `name` no longer holds; None when it does."""
    entry = record.get("voices", {}).get(name)
    if not isinstance(entry, dict) or "chosen" not in entry:
        return f"voice {name!r} was not tuned"
    moved = same_machine(record.get("machine", {}), machine)
    if moved is not None:
        return moved
    if entry.get("configured_sha256") != configured.sha256:
        return "the configured model changed since"
    build = _recorded(entry)
    try:
        now = expected_digest(build)
    except OSError as err:
        return f"the chosen build {build.path} cannot be read ({err.strerror})"
    if now != build.sha256:
        return f"the chosen build {build.path} changed since"
    return None


def _chosen(build: Build, vs: VoiceSettings, chosen_by: str, why: str) -> Chosen:
    return Chosen(build, chosen_by, why, vs.sha256 if build.configured else build.sha256)


def _recorded(entry: dict[str, Any]) -> Build:
    """The build a voice's record entry names."""
    chosen = entry["chosen"]
    return Build(str(chosen["scheme"]), Path(chosen["path"]), str(chosen["sha256"]), False)
