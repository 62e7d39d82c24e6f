"""The quantizer's fp16 region (edge_tts.voicebuild.half) on a small graph: the nodes
from one name to another run in fp16, with one Cast per tensor crossing the border, the
constants they read copied to fp16, and the rest of the graph as it was."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from edge_tts.voicebuild.half import SUFFIX, RegionError, region, to_half

pytestmark = pytest.mark.unit

RNG = np.random.default_rng(7)


def _weight(name: str, *shape: int) -> onnx.TensorProto:
    return numpy_helper.from_array(RNG.normal(0, 0.3, shape).astype(np.float32), name)


def _model() -> onnx.ModelProto:
    """pre -> [stage/start, leaky, add, div, stage/end] -> post, the Div's constant shared
    with a node outside, and the Add's output read outside too."""
    three = helper.make_tensor("three", TensorProto.FLOAT, [], [3.0])
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["t0"], name="pre/Conv", pads=[1, 1]),
        helper.make_node("Conv", ["t0", "w1", "b1"], ["t1"], name="stage/start/Conv", pads=[1, 1]),
        helper.make_node("LeakyRelu", ["t1"], ["t2"], name="stage/Leaky", alpha=0.1),
        helper.make_node("Add", ["t2", "t1"], ["t3"], name="stage/Add"),
        helper.make_node("Constant", [], ["c3"], name="Constant", value=three),
        helper.make_node("Div", ["t3", "c3"], ["t4"], name="stage/Div"),
        helper.make_node("Conv", ["t4", "w2"], ["t5"], name="stage/end/Conv", pads=[1, 1]),
        helper.make_node("Tanh", ["t5"], ["y"], name="post/Tanh"),
        helper.make_node("Div", ["t3", "c3"], ["z"], name="side/Div"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 16])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 16]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4, 16]),
        ],
        [_weight("w0", 4, 2, 3), _weight("w1", 4, 4, 3), _weight("b1", 4), _weight("w2", 1, 4, 3)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


def _run(model: onnx.ModelProto, x: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [np.asarray(out) for out in session.run(None, {"x": x})]


def test_the_region_is_every_node_between_the_two_names() -> None:
    graph = _model().graph
    names = [graph.node[i].name for i in region(graph, "stage/start/", "stage/end/")]
    assert names == [
        "stage/start/Conv",
        "stage/Leaky",
        "stage/Add",
        "stage/Div",
        "stage/end/Conv",
    ]


def test_the_region_runs_in_fp16_behind_one_cast_per_crossing_tensor() -> None:
    model = _model()
    x = RNG.normal(0, 1, (1, 2, 16)).astype(np.float32)
    expected = _run(model, x)
    names = to_half(model, "stage/start/", "stage/end/")
    onnx.checker.check_model(model, full_check=True)  # types agree everywhere
    assert len(names) == 5
    casts = {n.input[0]: helper.get_attribute_value(n.attribute[0]) for n in model.graph.node
             if n.op_type == "Cast"}  # fmt: skip
    # in: t0 (from pre/Conv); out: t3 (read by side/Div) and t5 (read by post/Tanh)
    assert casts == {
        "t0": TensorProto.FLOAT16,
        "t3" + SUFFIX: TensorProto.FLOAT,
        "t5" + SUFFIX: TensorProto.FLOAT,
    }
    weights = {t.name: t.data_type for t in model.graph.initializer}
    assert weights == {
        "w0": TensorProto.FLOAT,  # outside: untouched
        "w1" + SUFFIX: TensorProto.FLOAT16,
        "b1" + SUFFIX: TensorProto.FLOAT16,
        "w2" + SUFFIX: TensorProto.FLOAT16,
        "c3" + SUFFIX: TensorProto.FLOAT16,  # the Constant stays for side/Div
    }
    got = _run(model, x)
    # fp16 keeps 11 significant bits: 1e-2 is ten times the rounding of these few layers,
    # whether onnxruntime runs them in fp16 or (without FP16 arithmetic) in float.
    for want, have in zip(expected, got, strict=True):
        assert have.dtype == np.float32
        np.testing.assert_allclose(have, want, rtol=1e-2, atol=1e-2)


def test_a_region_that_is_not_plain_float_is_refused() -> None:
    model = _model()
    with pytest.raises(RegionError, match="no path"):
        to_half(model, "stage/none/", "stage/end/")
    model.graph.node[2].op_type = "QuantizeLinear"  # stands for an int8 node in the region
    with pytest.raises(RegionError, match="stage/Leaky"):
        to_half(model, "stage/start/", "stage/end/")
