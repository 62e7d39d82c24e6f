"""Additions of zeros the export left in: x + zeros_like(x).

VITS's WaveNet layers (modules.py `WN`, in the flow) add the speaker conditioning to each
input layer's output; a voice with one speaker has none, and PyTorch adds
`torch.zeros_like(x_in)` instead, exported as Add(x, ConstantOfShape(Shape(x))). The sum
is x (an exact zero is added), so the Add reads x's producer directly: three nodes fewer
per layer, and nothing between the int8 convolutions that keeps onnxruntime from moving
its layout Transposes through.
"""

from __future__ import annotations

import logging

import onnx
from onnx import numpy_helper

from .graph_edit import Links

_LOGGER = logging.getLogger(__name__)


def drop_zero_adds(model: onnx.ModelProto) -> int:
    """Remove `model`'s x + zeros_like(x) in place; how many."""
    graph = model.graph
    links = Links.of(graph)
    graph_outputs = {o.name for o in graph.output}
    renamed: dict[str, str] = {}
    dropped: set[int] = set()
    for node in graph.node:
        if node.op_type != "Add" or node.output[0] in graph_outputs:
            continue
        for i, j in ((0, 1), (1, 0)):
            zeros = links.producers.get(node.input[j])
            if zeros is None or zeros.op_type != "ConstantOfShape" or not _fills_zero(zeros):
                continue
            shape = links.producers.get(zeros.input[0])
            if shape is None or shape.op_type != "Shape" or shape.input[0] != node.input[i]:
                continue
            if any(a.name != "start" or a.i != 0 for a in shape.attribute):  # part of x's
                continue
            renamed[node.output[0]] = node.input[i]
            dropped.add(id(node))
            if len(links.consumers[zeros.output[0]]) == 1:  # else another node reads it
                dropped.add(id(zeros))
                if len(links.consumers[shape.output[0]]) == 1:
                    dropped.add(id(shape))
            break
    if not renamed:
        return 0
    kept = [node for node in graph.node if id(node) not in dropped]
    for node in kept:
        for k, name in enumerate(node.input):
            while name in renamed:  # an Add of zeros to an Add of zeros
                name = node.input[k] = renamed[name]
    del graph.node[:]
    graph.node.extend(kept)
    _LOGGER.debug("%d additions of zeros removed", len(renamed))
    return len(renamed)


def _fills_zero(node: onnx.NodeProto) -> bool:
    """Whether a ConstantOfShape fills with an exact 0 (its default is 0.0)."""
    for attribute in node.attribute:
        if attribute.name == "value":
            filled = numpy_helper.to_array(attribute.t)
            return filled.size == 1 and float(filled.reshape(-1)[0]) == 0.0
    return True
