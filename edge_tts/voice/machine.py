"""What a tuning result depends on besides the models: the CPU and onnxruntime.

A Pi 4 (Cortex-A72, no int8 dot product) and a Pi 5 (Cortex-A76, with it) run different
onnxruntime kernels for the same INT8 model, and a new onnxruntime may bring new ones;
so a choice is only valid on the CPU and onnxruntime it was measured with.
"""

from __future__ import annotations

import hashlib
import os
import platform
from pathlib import Path

import onnxruntime

# The instructions that decide which int8 and float kernels onnxruntime picks.
INT8_DOT_PRODUCT_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "asimddp"})
NOTABLE_FLAGS = INT8_DOT_PRODUCT_FLAGS | {"avx2", "avx512f", "fma", "asimd", "neon", "sve"}
CPUINFO = Path("/proc/cpuinfo")


def cpu_facts(cpuinfo: Path = CPUINFO) -> dict[str, object]:
    """CPU model, all flags (hashed: the list is long) and the ones that matter, named."""
    model, flags = platform.processor() or platform.machine(), ""
    try:
        lines = cpuinfo.read_text("utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key in ("model name", "cpu model", "hardware") and value:
            model = value
        elif key == "cpu part" and model in ("", platform.machine()):
            model = f"{platform.machine()} part {value}"  # Arm: no model name before 5.x
        elif key in ("flags", "features") and not flags:
            flags = value
    names = set(flags.split())
    return {
        "model": model,
        "arch": platform.machine(),
        "cores": os.cpu_count() or 1,
        "flags_sha256": hashlib.sha256(" ".join(sorted(names)).encode()).hexdigest()[:16],
        "notable_flags": sorted(names & NOTABLE_FLAGS),
        "int8_dot_product": bool(names & INT8_DOT_PRODUCT_FLAGS),
    }


def fingerprint(cpuinfo: Path = CPUINFO) -> dict[str, object]:
    """Everything a recorded choice must match to stay valid, besides the model digests."""
    return {**cpu_facts(cpuinfo), "onnxruntime": onnxruntime.__version__}


def same_machine(recorded: dict[str, object], now: dict[str, object]) -> str | None:
    """Why a choice recorded on `recorded` does not hold on `now`; None when it does."""
    for key, what in (("model", "CPU"), ("flags_sha256", "CPU flags"), ("onnxruntime", "")):
        if recorded.get(key) != now.get(key):
            name = what or key
            return f"{name} changed ({recorded.get(key)} -> {now.get(key)})"
    return None
