"""The duration predictor's splines as compact graphs: the same audio, to the bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from edge_tts.voice.splines import compact_splines

from .support.voice_graphs import builds, seeded, session


@pytest.mark.model
@pytest.mark.parametrize("path", builds(), ids=lambda p: p.name)
def test_the_compact_splines_give_the_same_audio_to_the_bit(path: Path) -> None:
    original, compact = seeded(path), seeded(path)
    before = len(compact.graph.node)
    assert compact_splines(compact) == 3  # the reverse flows of the duration predictor
    assert before - len(compact.graph.node) > 500
    onnx.checker.check_model(compact)
    old, new = session(original), session(compact)
    rng = np.random.default_rng(0)
    for length in (3, 20, 80, 160):
        ids = rng.integers(1, 100, length)
        for noise_w in (0.0, 0.8, 2.0):  # 2.0: the most a request may ask for
            feeds = {
                "input": np.array([ids], dtype=np.int64),
                "input_lengths": np.array([length], dtype=np.int64),
                "scales": np.array([0.667, 1.0, noise_w], dtype=np.float32),
            }
            assert np.array_equal(old.run(None, feeds)[0], new.run(None, feeds)[0])


@pytest.mark.unit
def test_a_graph_without_vits_flows_is_left_as_it_is() -> None:
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2, None])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 2, None])
    half = helper.make_tensor_value_info("h", onnx.TensorProto.FLOAT, [1, 1, None])
    split = helper.make_node("Split", ["x"], ["a", "b"], name="/dp/flows.3/Split", axis=1)
    concat = helper.make_node("Concat", ["a", "b"], ["y"], name="/dp/flows.3/Concat", axis=1)
    graph = helper.make_graph([split, concat], "g", [x], [y], value_info=[half])
    model = helper.make_model(graph)
    assert compact_splines(model) == 0
    assert [n.op_type for n in model.graph.node] == ["Split", "Concat"]
