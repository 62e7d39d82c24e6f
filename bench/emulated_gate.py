"""The quantizer's quality gate for INT8 builds as other x86 CPUs' int8 kernels compute them:
this python and onnxruntime under qemu-x86_64 on a given CPU model.

    python -m bench.emulated_gate --model NAME=PATH [--model ...] [--cpu Haswell]
        [--cpu Nehalem] [--sentences N]

onnxruntime picks its int8 kernels by CPUID, which qemu-user answers for the emulated
model: `Haswell` has AVX2 and no VNNI (u8s8 kernels that sum pairs of products in int16
and can saturate), `Nehalem` has SSE4.1 only (exact int32 accumulation, what ARM's
kernels compute too: tests/test_arm64.py), and this host (AVX512-VNNI here) is measured
natively beside them. The reference is FP32 synthesized natively (FP32 differs between
these CPUs by float summation order only, ~1e-5).

Per build and CPU: spectral distance mean / max and worst duration deviation against FP32
on the packaged evaluation sentences, deterministic (edge_tts.voicebuild.quality, the
gate `edge-ttsd quantize` reports and `tune` applies), and the quietest frames (p5 of the
512-sample frame RMS, dBFS) raw and through the pause gate. Emulation makes synthesis
~20-40x slower, so speed is not measured.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from edge_tts.audio.pause_gate import PauseGate
from edge_tts.voice import files
from edge_tts.voicebuild import quality
from edge_tts.voicebuild.calibration import sentence_ids

from .quant_builds import p5_dbfs
from .workers import REPO, argv

QEMU_X86 = Path("/usr/bin/qemu-x86_64-static")
FRAME = 512


def x86_features() -> dict[str, bool]:
    found = importlib.import_module("numpy._core._multiarray_umath").__cpu_features__
    return {name: bool(found[name]) for name in ("AVX2", "AVX512F", "AVX512VNNI")}


def speak_all(models: dict[str, Path], count: int) -> dict[str, list[np.ndarray]]:
    ids = sentence_ids(files.packaged_fp32(), "evaluation_en.txt")
    ids = ids[:count] if count else ids
    audio: dict[str, list[np.ndarray]] = {}
    for name, path in models.items():
        session = quality.load_session(path)
        audio[name] = [quality.synthesize(session, seq) for seq in ids]
    return audio


def child(models: dict[str, Path], count: int, out: Path) -> int:
    """Runs under qemu: every model on every sentence, to `out` (npz) with the features."""
    audio = speak_all(models, count)
    arrays = {f"{n}/{i}": piece for n, pieces in audio.items() for i, piece in enumerate(pieces)}
    np.savez(out, **arrays)  # type: ignore[arg-type]
    print(json.dumps(x86_features()))
    return 0


def emulated(cpu: str, models: dict[str, Path], count: int) -> dict[str, list[np.ndarray]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "audio.npz"
        specs = [f"--model={name}={path}" for name, path in models.items()]
        command = [str(QEMU_X86), "-cpu", cpu, *argv("bench.emulated_gate", "--child", str(out))]
        result = subprocess.run(
            [*command, *specs, f"--sentences={count}"],
            capture_output=True,
            text=True,
            check=False,
            cwd=REPO,
        )
        if result.returncode:
            raise SystemExit(f"qemu -cpu {cpu} failed: {result.stderr[-2000:]}")
        print(f"{cpu}: {result.stdout.strip().splitlines()[-1]}", flush=True)
        data = np.load(out)
        return {
            name: [
                data[f"{name}/{i}"] for i in range(sum(1 for k in data if k.startswith(name + "/")))
            ]
            for name in models
        }


def row(label: str, reference: list[np.ndarray], pieces: list[np.ndarray]) -> str:
    comps = [quality.compare(r, p, 22050) for r, p in zip(reference, pieces, strict=True)]
    dist = [c.spectral_distance for c in comps]
    dev = max(abs(c.duration_ratio - 1) for c in comps)
    gated = [PauseGate().process(piece) for piece in pieces]
    verdict = "pass" if quality.gate_verdict(max(dist), dev) else "FAIL"
    return (
        f"{label} | {statistics.fmean(dist):.3f} | {max(dist):.3f} | {dev:.3f} | {verdict} "
        f"| {p5_dbfs(pieces):.1f} | {p5_dbfs(gated):.1f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--cpu", action="append", default=[], help="qemu x86 CPU model")
    parser.add_argument("--sentences", type=int, default=0, help="first N (0: all)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    models = {name: Path(path) for name, path in (s.split("=", 1) for s in args.model)}
    if args.child:
        return child(models, args.sentences, args.child)
    reference = speak_all({"fp32": files.packaged_fp32().model}, args.sentences)["fp32"]
    results = {
        f"{name} @ host {x86_features()}": pieces
        for name, pieces in speak_all(models, args.sentences).items()
    }
    for cpu in args.cpu:
        for name, pieces in emulated(cpu, models, args.sentences).items():
            results[f"{name} @ {cpu}"] = pieces
    print("build @ CPU | dist mean | dist max | worst abs(d-1) | gate | p5 dBFS | p5 gated")
    for label, pieces in results.items():
        print(row(label, reference, pieces))
    return 0


if __name__ == "__main__":
    sys.exit(main())
