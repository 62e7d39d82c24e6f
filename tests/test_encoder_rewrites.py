"""The encoder half's load-time rewrites (voice/attention.py, voice/layer_norms.py,
voice/zero_adds.py, with voice/splines.py: model_check.compact_encoder): the same values,
far fewer nodes, and what they do not recognize left alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edge_tts.voice import files
from edge_tts.voice.attention import compact_attention
from edge_tts.voice.layer_norms import fuse_layer_norms
from edge_tts.voice.model_check import compact_encoder
from edge_tts.voice.splines import compact_splines
from edge_tts.voice.zero_adds import drop_zero_adds

from .support.voice_graphs import builds, seeded, session

CLOSE = 1e-4  # relative and absolute: float rounding (LayerNormalization sums otherwise)
# The durations before their ceil, in frames: the reverse flows amplify that rounding (FP32
# on AVX2, qemu -cpu Haswell: 7.5e-4 once, 3e-5 elsewhere); a hundredth of a frame still
# catches any rewrite that computes something else (differences of whole frames).
FRAMES_CLOSE = 0.01


def with_outputs(path: Path) -> onnx.ModelProto:
    """The voice, its noise seeded, with as outputs the text encoder's statistics and the
    durations before rounding (what the rewrites feed; the audio follows from them)."""
    model = seeded(path)
    stats = next(n for n in model.graph.node if n.name.startswith("/enc_p/proj/"))
    durations = next(n for n in model.graph.node if n.op_type == "Ceil")
    for name in (stats.output[0], durations.input[0]):
        model.graph.output.append(
            helper.make_tensor_value_info(name, TensorProto.FLOAT, [None] * 3)
        )
    return model


@pytest.mark.model
@pytest.mark.parametrize("path", builds(), ids=lambda p: p.name)
def test_the_rewritten_encoder_computes_the_same_values(path: Path) -> None:
    original, rewritten = with_outputs(path), with_outputs(path)
    compact_splines(original)  # already proven bit-exact (test_splines.py)
    before = len(original.graph.node)
    counts = {"splines": 3, "attention": 6, "layer_norms": 36, "zero_adds": 16}
    assert compact_encoder(rewritten) == counts
    assert before - len(rewritten.graph.node) > 650  # and ~750 fewer that onnxruntime runs
    onnx.checker.check_model(rewritten)
    old, new = session(original), session(rewritten)
    rng = np.random.default_rng(0)
    same_durations = 0
    for length in (1, 3, 5, 20, 80, 160):  # shorter and longer than the window (4)
        ids = rng.integers(1, 100, length)
        for noise_w in (0.0, 0.8):
            feeds = {
                "input": np.array([ids], dtype=np.int64),
                "input_lengths": np.array([length], dtype=np.int64),
                "scales": np.array([0.667, 1.0, noise_w], dtype=np.float32),
            }
            audio, stats, durations = old.run(None, feeds)
            audio2, stats2, durations2 = new.run(None, feeds)
            np.testing.assert_allclose(stats2, stats, rtol=CLOSE, atol=CLOSE)
            np.testing.assert_allclose(durations2, durations, rtol=0, atol=FRAMES_CLOSE)
            if np.array_equal(np.ceil(durations), np.ceil(durations2)):  # a frame may flip
                same_durations += 1
                np.testing.assert_allclose(audio2, audio, rtol=0, atol=1e-3)
    assert same_durations >= 10


@pytest.mark.model
def test_an_attention_layer_of_another_kind_is_left_as_it_is() -> None:
    model = onnx.load(str(files.packaged_fp32().model))
    softmax = next(n for n in model.graph.node if n.name == "/enc_p/encoder/attn_layers.2/Softmax")
    # A bias VITS does not have (as a proximal bias would add): Log is not among its ops.
    bias = helper.make_node("Log", [softmax.input[0]], ["biased"], name=softmax.name + "_bias")
    softmax.input[0] = "biased"
    nodes = list(model.graph.node)
    nodes.insert(nodes.index(softmax), bias)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    assert compact_attention(model) == 5
    assert any(n.name == "/enc_p/encoder/attn_layers.2/Softmax" for n in model.graph.node)


def _layer_norm_graph(channel_axis: bool, power: float = 2.0) -> onnx.ModelProto:
    """VITS's exported layer norm over 4 channels of (1, 4, T) or (1, T, 4)."""
    axes, shape, affine = (
        ([1], [1, 4, None], (1, 4, 1)) if channel_axis else ([-1], [1, None, 4], (4,))
    )
    p = "/enc_p/encoder/norm_layers_1.0/"
    weights = [
        numpy_helper.from_array(np.array([2.0], np.float32), p + "two"),
        numpy_helper.from_array(np.array(1e-5, np.float32), p + "eps"),
        numpy_helper.from_array(np.array(power, np.float32), p + "power"),
        numpy_helper.from_array(
            np.linspace(0.5, 2, 4, dtype=np.float32).reshape(affine), p + "gamma"
        ),
        numpy_helper.from_array(
            np.linspace(-1, 1, 4, dtype=np.float32).reshape(affine), p + "beta"
        ),
    ]
    chain = [
        ("ReduceMean", ["x"], "mean", {"axes": axes}),
        ("Sub", ["x", "mean"], "centred", {}),
        ("Pow", ["centred", p + "power"], "squares", {}),
        ("ReduceMean", ["squares"], "variance", {"axes": axes}),
        ("Add", ["variance", p + "eps"], "padded", {}),
        ("Sqrt", ["padded"], "deviation", {}),
        ("Div", ["centred", "deviation"], "normed", {}),
        ("Mul", ["normed", p + "gamma"], "scaled", {}),
        ("Add", ["scaled", p + "beta"], "y", {}),
    ]
    nodes = []
    for op, inputs, out, attributes in chain:
        nodes.append(helper.make_node(op, inputs, [out], name=p + out))
        nodes[-1].attribute.extend(helper.make_attribute(k, v) for k, v in attributes.items())
    graph = helper.make_graph(
        nodes,
        "norm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])


@pytest.mark.unit
@pytest.mark.parametrize("channel_axis", [False, True], ids=["last axis", "channel axis"])
def test_a_layer_norm_chain_becomes_one_node_with_the_same_values(channel_axis: bool) -> None:
    original, fused = _layer_norm_graph(channel_axis), _layer_norm_graph(channel_axis)
    assert fuse_layer_norms(fused) == 1
    kinds = [n.op_type for n in fused.graph.node]
    assert kinds == (
        ["Transpose", "LayerNormalization", "Transpose"] if channel_axis else ["LayerNormalization"]
    )
    onnx.checker.check_model(fused)
    x = (
        np.random.default_rng(1)
        .normal(size=(1, 4, 7) if channel_axis else (1, 7, 4))
        .astype(np.float32)
    )
    want = session(original).run(None, {"x": x})[0]
    np.testing.assert_allclose(session(fused).run(None, {"x": x})[0], want, rtol=1e-5, atol=1e-5)


@pytest.mark.unit
def test_a_chain_that_is_not_a_layer_norm_is_left_as_it_is() -> None:
    model = _layer_norm_graph(channel_axis=False, power=3.0)
    assert fuse_layer_norms(model) == 0
    assert len(model.graph.node) == 9


def _zero_add_graph(fill: float = 0.0, shape_of: str = "x") -> onnx.ModelProto:
    """y = tanh(x + ConstantOfShape(Shape(shape_of), fill)), as VITS's WN exports it."""
    p = "/flow/flows.0/enc/"
    value = numpy_helper.from_array(np.array([fill], np.float32), "fill")
    nodes = [
        helper.make_node("Neg", ["x"], ["nx"], name=p + "Neg"),
        helper.make_node("Shape", [shape_of], ["shape"], name=p + "Shape"),
        helper.make_node("ConstantOfShape", ["shape"], ["zeros"], name=p + "Zeros", value=value),
        helper.make_node("Add", ["x", "zeros"], ["sum"], name=p + "Add"),
        helper.make_node("Tanh", ["sum"], ["y"], name=p + "Tanh"),
        helper.make_node("Add", ["y", "nx"], ["z"], name=p + "Add_1"),
    ]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3, None]) for n in "xz"]
    graph = helper.make_graph(nodes, "zeros", io[:1], io[1:])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])


@pytest.mark.unit
def test_an_addition_of_zeros_like_its_input_is_dropped() -> None:
    original, dropped = _zero_add_graph(), _zero_add_graph()
    assert drop_zero_adds(dropped) == 1
    assert [n.op_type for n in dropped.graph.node] == ["Neg", "Tanh", "Add"]
    onnx.checker.check_model(dropped)
    x = np.random.default_rng(2).normal(size=(1, 3, 5)).astype(np.float32)
    want = session(original).run(None, {"x": x})[0]
    assert np.array_equal(session(dropped).run(None, {"x": x})[0], want)


@pytest.mark.unit
@pytest.mark.parametrize("graph", [_zero_add_graph(fill=1.0), _zero_add_graph(shape_of="nx")])
def test_an_addition_of_something_else_stays(graph: onnx.ModelProto) -> None:
    assert drop_zero_adds(graph) == 0
    assert len(graph.graph.node) == 6
