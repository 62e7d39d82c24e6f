"""HiFi-GAN's load-time rewrites (voice/polyphase.py at load, voice/conv2d.py:
model_check.compact_decoder) and a stage's window as a batch of two halves
(voice/two_halves.py): the same audio, what they do not recognize left alone, and both
only where onnxruntime has the NCHWc kernels they are for (voice/kernels.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from edge_tts.voice import files
from edge_tts.voice.conv2d import decoder_convs_as_2d
from edge_tts.voice.decoder_cut import split_at_decoder
from edge_tts.voice.kernels import nchwc_convolutions
from edge_tts.voice.model import session_options
from edge_tts.voice.model_check import compact_decoder
from edge_tts.voice.two_halves import run_in_halves, takes_batches
from edge_tts.voice.windowed import probe_stages

from .support.arm64_speech import nchwc_in_use
from .support.voice_graphs import builds, seeded

CLOSE = 1e-5  # float rounding: NCHWc kernels sum in another order than im2col + GEMM
AUDIO_CLOSE = 1e-4  # of full scale, through a whole decoder (measured: 3e-7 INT8, 1e-6 FP32)
CHANNELS = 16


def _session(model: onnx.ModelProto | bytes) -> onnxruntime.InferenceSession:
    data = model if isinstance(model, bytes) else model.SerializeToString()
    return onnxruntime.InferenceSession(
        data, session_options(2), providers=["CPUExecutionProvider"]
    )


@dataclass(frozen=True)
class Layer:
    """One Conv of a test stack, as HiFi-GAN's 1-D layers are exported."""

    name: str = ""  # default: a resblock's
    kernel: int = 3
    dilation: int = 1
    group: int = 1
    bias: bool = True
    weight: str = ""  # default: its own
    half: bool = False  # an fp16 Conv between Casts


def _conv_stack(layers: list[Layer], batch: int | None = None) -> onnx.ModelProto:
    """x -> Conv -> LeakyRelu -> Conv -> ... -> y."""
    rng = np.random.default_rng(1)
    nodes: list[onnx.NodeProto] = []
    weights: list[onnx.TensorProto] = []
    tensor, dtype = "x", np.float16
    for index, layer in enumerate(layers):
        kind = dtype if layer.half else np.float32
        weight = layer.weight or f"w{index}"
        if not any(w.name == weight for w in weights):
            shape = (CHANNELS, CHANNELS // layer.group, layer.kernel)
            array = (rng.standard_normal(shape) * 0.2).astype(kind)
            weights.append(numpy_helper.from_array(array, weight))
        inputs = [tensor, weight]
        if layer.bias:
            bias = (rng.standard_normal(CHANNELS) * 0.1).astype(kind)
            weights.append(numpy_helper.from_array(bias, f"b{index}"))
            inputs.append(f"b{index}")
        if layer.half:
            nodes.append(helper.make_node("Cast", [tensor], [f"h{index}"], to=TensorProto.FLOAT16))
            inputs[0] = f"h{index}"
        pad = layer.dilation * (layer.kernel - 1) // 2
        nodes.append(
            helper.make_node(
                "Conv",
                inputs,
                [f"c{index}"],
                name=layer.name or f"/dec/resblocks.{index}/convs.0/Conv",
                kernel_shape=[layer.kernel],
                dilations=[layer.dilation],
                pads=[pad, pad],
                group=layer.group,
            )
        )
        tensor = f"c{index}"
        if layer.half:
            nodes.append(helper.make_node("Cast", [tensor], [f"f{index}"], to=TensorProto.FLOAT))
            tensor = f"f{index}"
        nodes.append(helper.make_node("LeakyRelu", [tensor], [f"a{index}"], alpha=0.1))
        tensor = f"a{index}"
    if batch is not None:  # an export that fixed the batch at one
        weights.append(numpy_helper.from_array(np.array([batch, CHANNELS, -1], np.int64), "fixed"))
        nodes.append(helper.make_node("Reshape", [tensor, "fixed"], ["y"]))
    else:
        nodes.append(helper.make_node("Identity", [tensor], ["y"]))
    value = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes,
        "stack",
        [value("x", TensorProto.FLOAT, ["n", CHANNELS, "t"])],
        [value("y", TensorProto.FLOAT, [None] * 3)],
        weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _signal(steps: int, batch: int = 1) -> np.ndarray:
    return np.random.default_rng(2).standard_normal((batch, CHANNELS, steps)).astype(np.float32)


@pytest.mark.unit
def test_float_convs_become_2d_and_compute_the_same() -> None:
    kinds = [
        Layer(kernel=3),
        Layer(kernel=7, dilation=3, bias=False),
        Layer(kernel=11, dilation=5, group=4),
        Layer(kernel=7, name="/dec/conv_post/Conv"),
    ]
    original = _conv_stack(kinds)
    rewritten = _conv_stack(kinds)
    assert decoder_convs_as_2d(rewritten) == 4
    onnx.checker.check_model(rewritten)
    convs = [n for n in rewritten.graph.node if n.op_type == "Conv"]
    assert all(len(helper.get_attribute_value(n.attribute[0])) == 2 for n in convs)
    x = _signal(301)
    expected = _session(original).run(None, {"x": x})[0]
    np.testing.assert_allclose(_session(rewritten).run(None, {"x": x})[0], expected, atol=CLOSE)


@pytest.mark.unit
def test_what_is_not_a_plain_float_decoder_conv_stays_1d() -> None:
    kinds = [
        Layer(name="/dec/conv_pre/Conv"),  # the decoder's cut is found from its input
        Layer(name="/dec/ups.1/ConvTranspose_polyphase/Conv"),  # a stage's first Conv
        Layer(name="/enc_p/encoder/ffn_layers.0/conv_1/Conv"),  # not the decoder
        Layer(weight="shared"),
        Layer(weight="shared"),  # two Convs read one weight: reshaping it would break one
        Layer(half=True),  # runs on its own fp16 kernels
    ]
    model = _conv_stack(kinds)
    assert decoder_convs_as_2d(model) == 0
    assert [n.op_type for n in model.graph.node].count("Unsqueeze") == 0


@pytest.mark.unit
@pytest.mark.parametrize("steps", [37, 64, 301, 1152])
def test_a_window_in_two_halves_is_the_whole_window(steps: int) -> None:
    context = 9  # 1 + 3 + 5 on each side: the stack's receptive field, exactly
    kinds = [Layer(dilation=1), Layer(dilation=3), Layer(dilation=5)]
    session = _session(_conv_stack(kinds))
    x = _signal(steps)
    whole = session.run(None, {"x": x})[0]
    halves = run_in_halves(session, "x", x, context)
    assert halves.shape == whole.shape
    np.testing.assert_allclose(halves, whole, atol=CLOSE)


@pytest.mark.unit
def test_a_graph_with_a_fixed_batch_is_not_run_in_halves() -> None:
    assert takes_batches(_session(_conv_stack([Layer()])), "x", _signal(40))
    assert not takes_batches(_session(_conv_stack([Layer()], batch=1)), "x", _signal(40))


def _decoder(model: onnx.ModelProto) -> list[onnxruntime.InferenceSession]:
    halves = split_at_decoder(model)
    assert halves is not None and not halves.decoder_inputs
    return [_session(stage) for stage in halves.decoder]


@pytest.mark.model
@pytest.mark.parametrize("path", builds(), ids=lambda p: p.name)
def test_the_rewritten_decoder_makes_the_same_audio(path: Path) -> None:
    original, rewritten = seeded(path), seeded(path)
    int8 = "int8" in path.name  # ups.0-1 are int8 polyphase Convs already, conv_pre int8
    assert compact_decoder(rewritten, nchwc=True) == (
        {"polyphase": 1, "conv2d": 8} if int8 else {"polyphase": 3, "conv2d": 21}
    )
    old, new = _decoder(original), _decoder(rewritten)
    latent = np.random.default_rng(3).standard_normal((1, 192, 120)).astype(np.float32)
    outputs = []
    for stages in (old, new):
        data = latent
        for stage in stages:
            data = stage.run(None, {stage.get_inputs()[0].name: data})[0]
        outputs.append(np.asarray(data).reshape(-1))
    assert float(np.abs(outputs[0]).max()) > 0.1  # audio, not silence
    np.testing.assert_allclose(outputs[1], outputs[0], rtol=0, atol=AUDIO_CLOSE)


@pytest.mark.unit
def test_nchwc_kernels_are_x86_64s() -> None:
    assert nchwc_convolutions("x86_64") and nchwc_convolutions("AMD64")
    assert not nchwc_convolutions("aarch64") and not nchwc_convolutions("armv7l")


@pytest.mark.unit
def test_the_rule_is_what_this_onnxruntime_does() -> None:
    """kernels.py's rule against the installed onnxruntime on this machine (tests/test_arm64.py
    checks the aarch64 wheel the same way, emulated)."""
    assert nchwc_in_use() is nchwc_convolutions()


@pytest.mark.unit
def test_without_nchwc_kernels_the_decoder_stays_as_exported() -> None:
    model = _conv_stack([Layer(kernel=3), Layer(kernel=7, dilation=3)])
    exported = model.SerializeToString()
    assert compact_decoder(model, nchwc=False) == {"polyphase": 0, "conv2d": 0}
    assert model.SerializeToString() == exported


@pytest.mark.model
@pytest.mark.parametrize("split", [True, False])
def test_windows_run_in_halves_only_where_asked(split: bool) -> None:
    model = seeded(files.packaged_fp32().model)
    compact_decoder(model, nchwc=split)
    halves = split_at_decoder(model)
    assert halves is not None
    stages = probe_stages([_session(stage) for stage in halves.decoder], halves, split)
    assert stages is not None
    assert [stage.in_halves for stage in stages] == [False, split]  # the first reads the speaker
