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
# ARMv8.2 half-precision vector arithmetic: the Pi 5's Cortex-A76 has it, the Pi 4's A72 not,
# and onnxruntime has fp16 kernels on no x86 CPU. It decides whether an fp16 build can pay.
FP16_ARITHMETIC_FLAGS = frozenset({"asimdhp"})
NOTABLE_FLAGS = (
    INT8_DOT_PRODUCT_FLAGS
    | FP16_ARITHMETIC_FLAGS
    | {"avx2", "avx512f", "fma", "asimd", "neon", "sve"}
)
CPUINFO = Path("/proc/cpuinfo")
AUXV = Path("/proc/self/auxv")
AT_HWCAP = 16
# Linux's arm64 HWCAP bits, named as /proc/cpuinfo names them (asm/hwcap.h).
ARM64_HWCAPS = {"fphp": 1 << 9, "asimdhp": 1 << 10, "asimddp": 1 << 20}


def hwcap_flags(auxv: Path = AUXV, machine: str | None = None) -> set[str]:
    """On aarch64, the flags the kernel's aux vector sets: what onnxruntime itself reads
    (getauxval), and what qemu-user answers for the CPU it emulates, where /proc/cpuinfo
    is the host's. Empty elsewhere or when it cannot be read."""
    if (machine or platform.machine()) not in ("aarch64", "arm64"):
        return set()
    try:
        words = memoryview(auxv.read_bytes()).cast("Q")
    except (OSError, TypeError):
        return set()
    hwcap = next((words[i + 1] for i in range(0, len(words) - 1, 2) if words[i] == AT_HWCAP), 0)
    return {name for name, bit in ARM64_HWCAPS.items() if hwcap & bit}


def cpu_facts(
    cpuinfo: Path = CPUINFO, auxv: Path = AUXV, machine: str | None = None
) -> dict[str, object]:
    """CPU model, all flags (hashed: the list is long) and the ones that matter, named.
    The hash is /proc/cpuinfo's alone, as recorded choices were made with it."""
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
    features = names | hwcap_flags(auxv, machine)
    return {
        "model": model,
        "arch": platform.machine(),
        "cores": os.cpu_count() or 1,
        "flags_sha256": hashlib.sha256(" ".join(sorted(names)).encode()).hexdigest()[:16],
        "notable_flags": sorted(features & NOTABLE_FLAGS),
        "int8_dot_product": bool(features & INT8_DOT_PRODUCT_FLAGS),
        "fp16_arithmetic": bool(features & FP16_ARITHMETIC_FLAGS),
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
