"""The real voices as graphs, for tests that compare a rewritten graph with the original
(test_splines.py, test_encoder_rewrites.py)."""

from __future__ import annotations

from pathlib import Path

import onnx
import onnxruntime
from onnx import helper

from edge_tts.voice import files
from edge_tts.voice.model import session_options

SEEDED = 7.0  # the duration predictor's noise, fixed in both graphs so they can be compared


def seeded(path: Path) -> onnx.ModelProto:
    """The voice at `path` with its noise seeded."""
    model = onnx.load(str(path))
    for node in model.graph.node:
        if node.op_type == "RandomNormalLike":
            node.attribute.append(helper.make_attribute("seed", SEEDED))
    return model


def session(model: onnx.ModelProto) -> onnxruntime.InferenceSession:
    return onnxruntime.InferenceSession(
        model.SerializeToString(), session_options(2), providers=["CPUExecutionProvider"]
    )


def builds() -> list[Path]:
    """The FP32 voice (always there) and the INT8 build where scripts/setup made it."""
    found = [files.packaged_fp32().model]
    int8 = files.default_voice().model
    if int8.name.endswith(files.INT8_SUFFIX):
        found.append(int8)
    return found
