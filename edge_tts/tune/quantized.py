"""More INT8 candidates, built on this machine before tuning (`edge-ttsd tune --schemes`).

A fleet installs one INT8 build per voice (the default scheme). Where that one fails its
quality gate (a CPU without int8 dot products), another scheme may pass and still beat
FP32; `--schemes` quantizes those from the FP32 original into the data directory, beside
the default build, where `voice.builds.candidates` finds them by their manifests. Building
takes minutes (calibration runs the model); it is done once and is outside the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..config import VoiceSettings
from ..voice import files
from ..voice.builds import Build, candidates

Log = Callable[[str], None]


class UnknownSchemeError(ValueError):
    """`--schemes` names a scheme the quantizer does not have."""


def scheme_path(original: Path, scheme: str) -> Path:
    """Where the build of `original` with `scheme` goes: `<name>.<scheme>.int8.onnx`."""
    name = files.VoiceFiles(original, original).name
    return files.data_dir() / "voices" / f"{name}.{scheme}{files.INT8_SUFFIX}"


def build_schemes(vs: VoiceSettings, schemes: Sequence[str], log: Log) -> list[Path]:
    """Quantize the voice's FP32 original with each scheme it has no build of yet."""
    from ..voicebuild.calibration import sentence_ids
    from ..voicebuild.quantizer import SCHEMES, quantize

    unknown = [s for s in schemes if s not in SCHEMES]
    if unknown:
        raise UnknownSchemeError(
            f"unknown scheme(s) {', '.join(unknown)} (known: {', '.join(SCHEMES)})"
        )
    found = candidates(vs)
    original = next((b for b in found if b.scheme == files.FP32), None)
    if original is None:
        log(f"  voice {vs.name}: no FP32 original here to quantize")
        return []
    missing = [s for s in schemes if s not in {b.scheme for b in found}]
    calibration = sentence_ids(_files(original), "calibration_en.txt") if missing else []
    made = []
    for scheme in missing:
        target = scheme_path(original.path, scheme)
        target.parent.mkdir(parents=True, exist_ok=True)
        log(f"  building {scheme} from {original.path.name} (minutes) ...")
        quantize(original.path, target, scheme, calibration)
        made.append(target)
    return made


def _files(build: Build) -> files.VoiceFiles:
    return files.from_model_path(build.path)
