"""The builds of a configured voice that can stand in for one another.

A Piper voice has an FP32 original and INT8 builds of it (our quantizer's, one per
scheme, each with a manifest naming the scheme and the original's digest). Which one is
fastest depends on the CPU (int8 dot-product instructions or not), so `edge-ttsd tune`
measures them and the daemon may load another build than the configured file. Only
builds that are verifiable are candidates: the packaged original (the digest is in our
code), a file pinned by the config, or a build whose manifest pins it and names its
original. A two-stage voice has one build, the one imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..config import VoiceSettings
from ..voice import files, voice_dir
from ..voice.files import FP32, IMPORTED, read_manifest, scheme_of, source_sha256
from ..voice.integrity import MANIFEST_SUFFIX, manifest_digest, sha256_hex


@dataclass(frozen=True)
class Build:
    """One build of a voice: which scheme, where, and the digest that must match."""

    scheme: str
    path: Path  # the .onnx of a Piper voice, the directory of a two-stage voice
    sha256: str | None  # None: an unpinned file a user brought (loaded unverified)
    configured: bool  # the file the config names (or the default voice's usual build)


class BuildError(files.VoiceNotFoundError):
    """The build the config pins does not exist for this voice."""


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
    first. Never loads a model; digests come from pins and manifests, or one hash."""
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
    packaged = files.packaged_fp32()
    if packaged.builtin_digest == source:
        return [Build(FP32, packaged.model, source, configured=False)]
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
        for manifest in sorted(folder.glob(f"*{files.INT8_SUFFIX}{MANIFEST_SUFFIX}")):
            model = manifest.with_name(manifest.name.removesuffix(MANIFEST_SUFFIX))
            data = read_manifest(model)
            if model.is_file() and data.get("source_sha256") == source:
                found.append(Build(str(data["scheme"]), model, str(data["sha256"]), False))
    return found
