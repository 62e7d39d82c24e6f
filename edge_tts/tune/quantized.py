"""More INT8 candidates, built on this machine before tuning (`edge-ttsd tune --schemes`).

A fleet installs one INT8 build per voice (the default scheme). Where that one fails its
quality gate (a CPU without int8 dot products), another scheme may pass and still beat
FP32; `--schemes` quantizes those from the FP32 original into the data directory, beside
the default build, where `voice.builds.candidates` finds them by their manifests. Building
takes minutes (calibration runs the model); it is done once and is outside the budget.

Some schemes are made for a CPU feature (a scheme's ``needs``: the fp16 stage 2 for ARMv8.2's
FP16 arithmetic). Tune neither builds nor tries those on a CPU without it, where they could
only be slower; `--schemes auto` builds the ones this CPU has the feature for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..config import VoiceSettings
from ..voice import files
from ..voice.builds import Build, candidates

Log = Callable[[str], None]
AUTO = "auto"  # `--schemes auto`: the schemes made for a feature this CPU has


class UnknownSchemeError(ValueError):
    """`--schemes` names a scheme the quantizer does not have."""


def scheme_path(original: Path, scheme: str) -> Path:
    """Where the build of `original` with `scheme` goes: `<name>.<scheme>.int8.onnx`."""
    name = files.VoiceFiles(original, original).name
    return files.data_dir() / "voices" / f"{name}.{scheme}{files.INT8_SUFFIX}"


def unfit(scheme: str, facts: Mapping[str, object]) -> str | None:
    """Why a build of `scheme` is not worth trying on the CPU `facts` describes
    (voice.machine.cpu_facts); None when it is. Unknown schemes (a newer quantizer's) fit."""
    from ..voicebuild.schemes import SCHEMES

    recipe = SCHEMES.get(scheme)
    missing = [need for need in (recipe.needs if recipe else ()) if facts.get(need) is not True]
    return f"made for {', '.join(missing)}, which this CPU lacks" if missing else None


def cpu_schemes(facts: Mapping[str, object]) -> list[str]:
    """The registered schemes made for a feature this CPU has."""
    from ..voicebuild.schemes import SCHEMES

    return [name for name, s in SCHEMES.items() if s.needs and unfit(name, facts) is None]


def build_schemes(
    vs: VoiceSettings, schemes: Sequence[str], log: Log, facts: Mapping[str, object]
) -> list[Path]:
    """Quantize the voice's FP32 original with each scheme it has no build of yet that
    fits this CPU (`auto`: cpu_schemes)."""
    from ..voicebuild.calibration import sentence_ids
    from ..voicebuild.quantizer import SCHEMES, quantize

    unknown = [s for s in schemes if s not in SCHEMES and s != AUTO]
    if unknown:
        raise UnknownSchemeError(
            f"unknown scheme(s) {', '.join(unknown)} (known: {', '.join(SCHEMES)}, {AUTO})"
        )
    wanted = [s for s in schemes if s != AUTO] + (cpu_schemes(facts) if AUTO in schemes else [])
    fit = []
    for scheme in dict.fromkeys(wanted):
        why = unfit(scheme, facts)
        if why is None:
            fit.append(scheme)
        else:
            log(f"  not building {scheme}: {why}")
    if not fit:
        return []
    found = candidates(vs)
    original = next((b for b in found if b.scheme == files.FP32), None)
    if original is None:
        log(f"  voice {vs.name}: no FP32 original here to quantize")
        return []
    missing = [s for s in fit if s not in {b.scheme for b in found}]
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
