"""A 1-D ConvTranspose as one ordinary Conv: for the quantizer and at load.

onnxruntime has no int8 CPU kernel for ConvTranspose, so HiFi-GAN's upsampling layers
stay FP32 even inside a QDQ model, and its float ConvTranspose runs a GEMM and a col2im
where a Conv gets the NCHWc kernels (conv2d.py).  A stride-``s`` ConvTranspose equals ``s`` ordinary
convolutions of its input (its polyphase components) whose outputs are interleaved:
with ``m = ceil(K / s)`` taps per phase and the padding-free output ``full``,

    full[q*s + r] = sum_{j < m} W[:, :, j*s + r]^T x[q - j]      (r < s, 0 <= q < L + m - 1)

All ``s`` phases run as one Conv with ``s * C_out`` output channels (channel ``c*s + r``
holds phase ``r`` of output channel ``c``); Reshape -> Transpose -> Reshape interleaves
them and a Slice drops the ConvTranspose's ``pads``.  The Conv then quantizes like any
other (QLinearConv); at load (model_check.compact_decoder) the upsamplings a build left
float are rewritten the same way and stay float.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .decoder_cut import POLYPHASE_CONV

SUFFIX = POLYPHASE_CONV.removesuffix("/Conv")  # "<ConvTranspose name>_polyphase/..."
_INT64_MAX = np.iinfo(np.int64).max


# Not Slice: listing it makes onnxruntime's calibrator collect every Slice output of the
# graph, and the duration predictor's include empty tensors, which its histograms reject.
INTERLEAVE_OPS = ("Reshape", "Transpose")


def interleave_nodes(model: onnx.ModelProto, convs: list[str]) -> list[str]:
    """The Reshape/Transpose nodes that interleave the phases of these polyphase Convs.

    Quantized with their Conv, they move uint8 instead of float (onnxruntime drops the
    Q/DQ pairs between them), a quarter of the memory traffic at the highest sample rates.
    """
    blocks = tuple(name.removesuffix("/Conv") + "/" for name in convs if SUFFIX + "/" in name)
    return [
        node.name
        for node in model.graph.node
        if blocks and node.op_type in INTERLEAVE_OPS and node.name.startswith(blocks)
    ]


def original_name(name: str) -> str:
    """The ConvTranspose a rewritten node came from (other names unchanged)."""
    head, sep, _ = name.partition(SUFFIX + "/")
    return head if sep else name


def _attrs(node: onnx.NodeProto) -> dict[str, object]:
    return {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}


def _rewritable(node: onnx.NodeProto, weight: np.ndarray | None) -> bool:
    """Only the plain 1-D form the Piper/HiFi-GAN export produces."""
    if node.op_type != "ConvTranspose" or weight is None or weight.ndim != 3:
        return False
    attrs = _attrs(node)
    plain = {
        "dilations": [1],
        "group": 1,
        "auto_pad": b"NOTSET",
        "output_padding": [0],
    }
    if any(attrs.get(key, value) != value for key, value in plain.items()):
        return False
    return "output_shape" not in attrs


def polyphase_weight(weight: np.ndarray, stride: int) -> np.ndarray:
    """ConvTranspose weight ``[C_in, C_out, K]`` -> Conv weight ``[C_out * s, C_in, m]``."""
    c_in, c_out, k = weight.shape
    taps = -(-k // stride)
    padded = np.zeros((c_in, c_out, taps * stride), weight.dtype)
    padded[:, :, :k] = weight
    # [C_in, C_out, j, r] -> Conv weight [C_out, r, C_in, j], taps reversed (Conv correlates).
    phases = padded.reshape(c_in, c_out, taps, stride).transpose(1, 3, 0, 2)[..., ::-1]
    return np.ascontiguousarray(phases.reshape(c_out * stride, c_in, taps))


def _replacement(
    node: onnx.NodeProto, weight: np.ndarray, bias: np.ndarray | None
) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    attrs = _attrs(node)
    stride = int(attrs["strides"][0])  # type: ignore[index]
    pads = [int(p) for p in attrs.get("pads", [0, 0])]  # type: ignore[attr-defined]
    c_out, k = weight.shape[1], weight.shape[2]
    taps = -(-k // stride)
    # Padding-free output length is (L-1)*s + K; the phases give (L+m-1)*s of it.
    end_crop = pads[1] + taps * stride - k
    base, out = node.name + SUFFIX, node.output[0]
    names = [f"{base}/{part}" for part in ("weight", "bias", "shape4", "perm_out", "shape3")]
    inits = [numpy_helper.from_array(polyphase_weight(weight, stride), names[0])]
    conv_inputs = [node.input[0], names[0]]
    if bias is not None:
        inits.append(numpy_helper.from_array(np.repeat(bias, stride), names[1]))
        conv_inputs.append(names[1])
    inits += [
        numpy_helper.from_array(np.array([0, c_out, stride, -1], np.int64), names[2]),
        numpy_helper.from_array(np.array([0, c_out, -1], np.int64), names[4]),
    ]
    conv = helper.make_node(
        "Conv",
        conv_inputs,
        [base + "/conv"],
        name=base + "/Conv",
        kernel_shape=[taps],
        pads=[taps - 1, taps - 1],
        strides=[1],
    )
    split = helper.make_node(
        "Reshape", [base + "/conv", names[2]], [base + "/phases"], name=base + "/Reshape"
    )
    interleave = helper.make_node(
        "Transpose",
        [base + "/phases"],
        [base + "/interleaved"],
        name=base + "/Transpose",
        perm=[0, 1, 3, 2],
    )
    nodes = [conv, split, interleave]
    if pads[0] == 0 and end_crop == 0:
        nodes.append(
            helper.make_node(
                "Reshape", [base + "/interleaved", names[4]], [out], name=base + "/Reshape_1"
            )
        )
        return nodes, inits
    crop = [f"{base}/{part}" for part in ("starts", "ends", "axes")]
    inits += [
        numpy_helper.from_array(np.array([pads[0]], np.int64), crop[0]),
        numpy_helper.from_array(np.array([-end_crop if end_crop else _INT64_MAX]), crop[1]),
        numpy_helper.from_array(np.array([2], np.int64), crop[2]),
    ]
    nodes += [
        helper.make_node(
            "Reshape", [base + "/interleaved", names[4]], [base + "/full"], name=base + "/Reshape_1"
        ),
        helper.make_node("Slice", [base + "/full", *crop], [out], name=base + "/Slice"),
    ]
    return nodes, inits


def rewrite_conv_transposes(model: onnx.ModelProto, prefixes: tuple[str, ...]) -> list[str]:
    """Replace every plain 1-D ConvTranspose whose name starts with one of ``prefixes``
    by its polyphase Conv (in place); return the names of the new Conv nodes."""
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}

    def constant(name: str) -> np.ndarray | None:
        init = initializers.get(name)
        return None if init is None else numpy_helper.to_array(init)

    new_nodes: list[onnx.NodeProto] = []
    convs: list[str] = []
    replaced: set[str] = set()
    for node in graph.node:
        weight = constant(node.input[1]) if len(node.input) > 1 else None
        if not (node.name.startswith(prefixes) and _rewritable(node, weight)):
            new_nodes.append(node)
            continue
        assert weight is not None
        bias = constant(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        nodes, inits = _replacement(node, weight, bias)
        new_nodes.extend(nodes)
        graph.initializer.extend(inits)
        convs.append(nodes[0].name)
        replaced.update(node.input[1:])
    del graph.node[:]
    graph.node.extend(new_nodes)
    _drop_unused(graph, replaced)
    return convs


def _drop_unused(graph: onnx.GraphProto, candidates: set[str]) -> None:
    """Remove the replaced weights and biases unless something else still reads them."""
    used = {name for node in graph.node for name in node.input}
    used |= {output.name for output in graph.output}
    stale = [init for init in graph.initializer if init.name in candidates - used]
    for init in stale:
        graph.initializer.remove(init)
