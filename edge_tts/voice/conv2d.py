"""HiFi-GAN's float 1-D convolutions as 2-D ones of height 1, for onnxruntime's NCHWc kernels.

onnxruntime's x86 CPU provider runs a float Conv on its blocked-channel (NCHWc) kernels only
when the weight is 4-D (its NchwcTransformer), and runs a 1-D Conv through im2col and a
GEMM. A 1-D Conv over `(N, C, L)` is the 2-D Conv over `(N, C, 1, L)` with kernel `(1, k)`:
the same arithmetic, the same values. Each converted Conv reads its input through an
Unsqueeze and writes through a Squeeze (views, no copies), so every other node and every
tensor name stay as they were; onnxruntime reorders the data in and out of the blocked
layout around each Conv, since the LeakyRelu between them has no NCHWc form.

Only float Convs with their own constant weight are converted: int8 ones (QDQ: their weight
comes from a DequantizeLinear) have no NCHWc kernel, and fp16 ones run on their own NHWC
kernels where the CPU has them. Left 1-D: the Convs where the decoder is cut into stages
(decoder_cut.py finds the cut from their input). Where onnxruntime has no NCHWc kernels
(its aarch64 wheels: kernels.py) the model checker leaves the decoder as exported.
Measured in docs/benchmarks.md.
"""

from __future__ import annotations

import logging

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .decoder_cut import DECODER_FIRST_CONV, DECODER_STAGE_CONVS, POLYPHASE_CONV
from .graph_edit import Links

_LOGGER = logging.getLogger(__name__)

DECODER = "/dec/"  # torch.onnx's scope of HiFi-GAN in every Piper export
_AXIS = "conv2d/height_axis"  # the Unsqueeze/Squeeze axis, one constant for all
_STAGE_STARTS = (
    DECODER_FIRST_CONV,
    *DECODER_STAGE_CONVS,
    *(name + POLYPHASE_CONV for name in DECODER_STAGE_CONVS),
)


def decoder_convs_as_2d(model: onnx.ModelProto) -> int:
    """Convert the decoder's float 1-D Convs in place; how many."""
    graph = model.graph
    if _opset(model) < 13:
        return 0  # Unsqueeze/Squeeze read their axes as an input since opset 13
    links = Links.of(graph)
    weights = {t.name: t for t in graph.initializer}
    nodes: list[onnx.NodeProto] = []
    converted = 0
    for node in graph.node:
        weight = weights.get(node.input[1]) if len(node.input) > 1 else None
        if weight is None or not _convertible(node, weight, links):
            nodes.append(node)
            continue
        nodes.extend(_as_2d(node, weight))
        converted += 1
    if converted:
        graph.initializer.append(numpy_helper.from_array(np.array([2], np.int64), _AXIS))
        del graph.node[:]
        graph.node.extend(nodes)
    _LOGGER.debug("%d decoder Convs as 2-D", converted)
    return converted


def _convertible(node: onnx.NodeProto, weight: TensorProto, links: Links) -> bool:
    if node.op_type != "Conv" or node.domain not in ("", "ai.onnx"):
        return False
    if not node.name.startswith(DECODER) or node.name in _STAGE_STARTS:
        return False
    if weight.data_type != TensorProto.FLOAT or len(weight.dims) != 3:
        return False
    if len(links.consumers[weight.name]) != 1:
        return False  # its weight is reshaped in place: nobody else may read it
    auto_pad = next((a.s for a in node.attribute if a.name == "auto_pad"), b"NOTSET")
    return auto_pad == b"NOTSET"


def _as_2d(node: onnx.NodeProto, weight: TensorProto) -> list[onnx.NodeProto]:
    """Unsqueeze -> the Conv with a (1, k) kernel -> Squeeze, under the Conv's tensor names."""
    attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    pads = [int(p) for p in attributes.get("pads", [0, 0])]
    two_d = {
        "kernel_shape": [1, int(weight.dims[2])],
        "dilations": [1, *(int(d) for d in attributes.get("dilations", [1]))],
        "strides": [1, *(int(s) for s in attributes.get("strides", [1]))],
        "pads": [0, pads[0], 0, pads[1]],
        "group": int(attributes.get("group", 1)),
    }
    weight.dims.insert(2, 1)  # (C_out, C_in/group, k) -> (C_out, C_in/group, 1, k): same bytes
    source, out = node.input[0], node.output[0]
    wide_in, wide_out = f"{out}/2d_input", f"{out}/2d"
    conv = helper.make_node("Conv", [wide_in, *node.input[1:]], [wide_out], name=node.name)
    conv.attribute.extend(helper.make_attribute(key, value) for key, value in two_d.items())
    return [
        helper.make_node("Unsqueeze", [source, _AXIS], [wide_in], name=f"{node.name}/2d_in"),
        conv,
        helper.make_node("Squeeze", [wide_out, _AXIS], [out], name=f"{node.name}/2d_out"),
    ]


def _opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
