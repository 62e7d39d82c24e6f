"""A decoder stage's window run as one batch of its two halves, for two threads' worth of work.

onnxruntime's NCHWc convolution (conv2d.py) divides its work between threads by batch item,
output row and group of channel blocks; HiFi-GAN's high-rate convolutions, one row of 32-64
channels, make one piece, so one thread computes it while the other waits (the 2-D stage
on a whole window: 0.84-0.88x the 1-D one's CPU time, 1.2-1.35x its wall time). Cut in two
halves that overlap by the stage's context on each side, the window is a batch
of two, and each thread takes one half; the halves' outputs, cut at the middle, are the
window's output (the context is what makes windows exact, windowed.py). Measured in
docs/benchmarks.md: less CPU and less wall time than the whole window, in 1-D or 2-D.
Only where onnxruntime has NCHWc kernels (kernels.py): elsewhere a Conv's GEMM is shared
by both threads already, and the halves would add their overlap and nothing else.
"""

from __future__ import annotations

import numpy as np
import onnxruntime

MIN_STEPS_PER_CONTEXT = 4  # below, the overlap costs more than a second thread saves


def run_in_halves(
    session: onnxruntime.InferenceSession, name: str, data: np.ndarray, context: int
) -> np.ndarray:
    """The session's output for `data` (batch 1, steps on the last axis), as a batch of two
    halves of `ceil(steps / 2) + context` steps each."""
    steps = data.shape[-1]
    if steps < MIN_STEPS_PER_CONTEXT * max(1, context):
        return np.asarray(session.run(None, {name: np.ascontiguousarray(data)})[0])
    size, middle = -(-steps // 2) + context, steps // 2
    start = steps - size  # of the second half
    batch = np.concatenate([data[..., :size], data[..., start:]], axis=0)
    both = np.asarray(session.run(None, {name: batch})[0])
    ratio = both.shape[-1] // size  # output steps per input step
    return np.concatenate(
        [both[0:1, ..., : middle * ratio], both[1:2, ..., (middle - start) * ratio :]], axis=-1
    )


def takes_batches(session: onnxruntime.InferenceSession, name: str, data: np.ndarray) -> bool:
    """Whether a batch of two gives each item's own output (an export may fix the batch at
    one); `data` is a batch-1 input of the stage."""
    other = data[..., ::-1]
    try:
        both = np.asarray(session.run(None, {name: np.concatenate([data, other], axis=0)})[0])
    except Exception:  # onnxruntime's errors have no common base class
        return False
    alone = [
        np.asarray(session.run(None, {name: np.ascontiguousarray(item)})[0])
        for item in (data, other)
    ]
    if both.shape[0] != 2 or both.shape[1:] != alone[0].shape[1:]:
        return False
    scale = max(1e-3, float(np.abs(alone[0]).max()))
    return all(np.abs(both[i : i + 1] - alone[i]).max() <= 1e-4 * scale for i in range(2))
