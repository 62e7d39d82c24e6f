"""Which of onnxruntime's CPU convolution kernels this machine runs, where a load-time
rewrite pays only with them (conv2d.py, two_halves.py). No imports beyond the standard
library: the model checker's child reads it as well as the daemon."""

from __future__ import annotations

import platform

# onnxruntime's blocked-channel (NCHWc) float convolutions are built into its x86-64
# packages for every CPU (MLAS: SSE, AVX2 and AVX-512 variants). Its aarch64 wheels do not
# have them (1.32.0: the NEON ones are a build option, MLAS_USE_ARM_NEON_NCHWC), so there a
# 2-D Conv stays a plain Conv: im2col and a GEMM that both threads share.
# tests/test_arm64.py checks that on the wheel a Pi installs.
NCHWC_MACHINES = frozenset({"x86_64", "amd64"})


def nchwc_convolutions(machine: str | None = None) -> bool:
    """Whether onnxruntime runs float 2-D Convs on its NCHWc kernels on this machine."""
    return (machine or platform.machine()).lower() in NCHWC_MACHINES
