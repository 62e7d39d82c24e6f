"""A convolutional vocoder run on windows of mel frames: first audio early, bounded memory.

Each window is vocoded with `context` extra frames on both sides, cut off again, so the
joined pieces equal vocoding the whole chunk at once (the context is the graph's
receptive field, measured at load: `probe_context`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import onnxruntime

from .model import new_session
from .windowed import MAX_WINDOW_FRAMES, in_windows

if TYPE_CHECKING:
    from .voice_dir import TwoStageConfig

_PROBE_FRAMES = 240


class WindowedVocoder:
    """Mel → audio in windows. Runs are serialized per voice, as the Piper decoder's are:
    two at once would double its memory and slow each other on two cores."""

    def __init__(
        self,
        session: onnxruntime.InferenceSession,
        mel_input: str,
        hop: int,
        sample_rate: int,
        context: int | None,
    ):
        self._session = session
        self._input = mel_input
        self._hop = hop
        self._frame_s = hop / sample_rate
        self.context = context  # None: the graph's output depends on the whole input
        self._lock = threading.Lock()

    def describe(self) -> str:
        if self.context is None:
            return "vocoder on whole chunks"
        return f"vocoder on windows, context {self.context} frames"

    def warm_up(self) -> None:
        channels = self._channels()
        frames = MAX_WINDOW_FRAMES + 2 * (self.context or 0)
        self.run(np.zeros((1, frames, channels), np.float32))

    def _channels(self) -> int:
        shape = self._session.get_inputs()[0].shape
        return int(shape[-1]) if isinstance(shape[-1], int) else 80

    def run(self, mel: np.ndarray) -> np.ndarray:
        return self._vocode(mel)[0]

    def window(self, mel: np.ndarray, start: int, end: int) -> np.ndarray:
        """Audio of frames [start, end) of `mel` ([1, frames, channels])."""
        return self._window(mel, start, end)[0]

    def stream(self, mel: np.ndarray, first_frames: int | None) -> Iterator[np.ndarray]:
        """Audio pieces in order, by windowed.py's policy (`in_windows`), as for Piper."""
        if self.context is None:
            yield self.run(mel)
            return
        yield from in_windows(
            mel.shape[1],
            first_frames,
            self.context,
            self._frame_s,
            lambda start, end: self._window(mel, start, end),
            # Every window carries the context on both sides: below that many frames it
            # would be mostly context. 16-frame windows did ~4x a whole run's work and on a
            # busy machine never grew (each took most of the audio it added); at least 2x
            # the context after the first: 2.5x faster there, ~1.05x idle
            # (bench/zh_windows.py), the first window (the TTFA) unchanged.
            smallest=2 * self.context,
        )

    def _window(self, mel: np.ndarray, start: int, end: int) -> tuple[np.ndarray, float]:
        """The window's audio, and the seconds its vocoding took per frame."""
        context = self.context or 0
        lo, hi = max(0, start - context), min(mel.shape[1], end + context)
        audio, seconds = self._vocode(mel[:, lo:hi, :])
        kept = audio[(start - lo) * self._hop : (end - lo) * self._hop].copy()
        return kept, seconds / (end - start)

    def _vocode(self, mel: np.ndarray) -> tuple[np.ndarray, float]:
        with self._lock:  # timed inside: waiting for the other worker is not its cost
            began = time.monotonic()
            audio = self._session.run(None, {self._input: np.ascontiguousarray(mel)})[0]
            seconds = time.monotonic() - began
        return np.asarray(audio, np.float32).reshape(-1), seconds


def probe_context(model: bytes, config: TwoStageConfig, threads: int) -> int | None:
    """The vocoder's receptive field in frames, or None if it is (nearly) the whole input.

    Measured on the model's float twin (`float_twin`): nudge the middle frame of a seeded
    random mel and find the farthest sample that moves at all. An output sample farther
    than that from a window's edge cannot depend on what lies beyond it, so windows with
    that much context join exactly as one whole run, on any CPU. The shipped graph cannot
    tell this: its output quantizer hides changes smaller than half a step, and turns
    float rounding (which differs between window lengths and CPUs) into whole steps."""
    session = new_session(float_twin(model) or model, threads, nchwc=False)
    probe = WindowedVocoder(
        session, config.vocoder.inputs["mel"], config.hop_length, config.sample_rate, None
    )
    rng = np.random.default_rng(0)
    mel = rng.standard_normal((1, _PROBE_FRAMES, config.mel_channels)).astype(np.float32)
    base = probe.run(mel)
    noise = float(np.max(np.abs(probe.run(mel) - base)))  # 0 where kernels are deterministic
    middle = _PROBE_FRAMES // 2
    mel[0, middle, :] += rng.standard_normal(config.mel_channels).astype(np.float32)
    moved = np.flatnonzero(np.abs(probe.run(mel) - base) > noise)
    if base.size != _PROBE_FRAMES * config.hop_length or not moved.size:
        return None
    reach = max(middle - moved[0] // config.hop_length, moved[-1] // config.hop_length - middle)
    return int(reach) if reach < middle // 2 else None


def float_twin(model: bytes) -> bytes | None:
    """`model` with its activation quantizers (QuantizeLinear, and DequantizeLinear of a
    computed tensor) made identities, or None if it has none. Weights stay dequantized."""
    import onnx

    graph = onnx.load_from_string(model)
    weights = {tensor.name for tensor in graph.graph.initializer}
    changed = False
    for node in graph.graph.node:
        if node.op_type == "QuantizeLinear" or (
            node.op_type == "DequantizeLinear" and node.input[0] not in weights
        ):
            node.op_type = "Identity"
            del node.input[1:]
            del node.attribute[:]
            changed = True
    if not changed:
        return None
    del graph.graph.value_info[:]  # the int8 types recorded between the quantizers
    return bytes(graph.SerializeToString())
