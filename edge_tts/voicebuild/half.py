"""Graph surgery for the quantizer: one float region of a graph in half precision (fp16).

The region is every node on a path from the nodes named ``start*`` to the nodes named
``end*`` (both included): for HiFi-GAN's stage 2, from ``/dec/ups.2/`` to
``/dec/conv_post/``, which takes in the three resblocks and the sum between them. Its
weights become fp16 initializers; a float tensor it reads from outside gets one Cast to
fp16 (a constant gets an fp16 copy instead), and a tensor it hands outside one Cast back.
Nothing else changes, so the int8 parts stay as the quantizer made them.

Not onnxruntime.transformers.float16 with a node block list: that converter keeps blocked
nodes in float by casting around each of them, which for a region of 23 nodes in a graph
of 3 200 added 3 100 Casts (every edge of the int8 graph rounded to fp16 and back).

onnxruntime runs an fp16 node with its fp16 kernel where the CPU has FP16 arithmetic and a
kernel exists (ARMv8.2: Conv, LeakyRelu); elsewhere it casts around the node and runs it
in float, which computes what rounding the weights and the node boundaries to fp16 does.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ..voice.graph_edit import Constants

SUFFIX = "_fp16"
# The inputs of each op type the region may hold that carry float data (others: shapes).
_FLOAT_INPUTS: dict[str, tuple[int, ...]] = {
    "Conv": (0, 1, 2),
    "ConvTranspose": (0, 1, 2),
    "Add": (0, 1),
    "Mul": (0, 1),
    "Div": (0, 1),
    "LeakyRelu": (0,),
    "Tanh": (0,),
    "Reshape": (0,),
    "Transpose": (0,),
    "Slice": (0,),
}


class RegionError(ValueError):
    """The region is empty or holds something that cannot simply run in fp16."""


def region(graph: onnx.GraphProto, start: str, end: str) -> list[int]:
    """Indices (in graph order) of the nodes on a path from a ``start*`` node to an
    ``end*`` node, both ends included."""
    producers = {out: i for i, node in enumerate(graph.node) for out in node.output}
    consumers: dict[str, list[int]] = {}
    for i, node in enumerate(graph.node):
        for name in node.input:
            consumers.setdefault(name, []).append(i)
    after = _walk(
        [i for i, n in enumerate(graph.node) if n.name.startswith(start)],
        lambda i: [c for out in graph.node[i].output for c in consumers.get(out, [])],
    )
    before = _walk(
        [i for i, n in enumerate(graph.node) if n.name.startswith(end)],
        lambda i: [producers[t] for t in graph.node[i].input if t in producers],
    )
    return sorted(after & before)


def _walk(seeds: list[int], step: Callable[[int], list[int]]) -> set[int]:
    seen: set[int] = set()
    pending = list(seeds)
    while pending:
        index = pending.pop()
        if index not in seen:
            seen.add(index)
            pending.extend(step(index))
    return seen


def to_half(model: onnx.ModelProto, start: str, end: str) -> list[str]:
    """Run the region from ``start`` to ``end`` in fp16 (in place); its node names."""
    graph = model.graph
    inside = region(graph, start, end)
    if not inside:
        raise RegionError(f"no path from a node named {start}* to one named {end}*")
    nodes = [graph.node[i] for i in inside]
    for node in nodes:
        if node.op_type not in _FLOAT_INPUTS or node.domain not in ("", "ai.onnx"):
            raise RegionError(f"{node.name} ({node.op_type}) has no plain fp16 form")
    made = {out for node in nodes for out in node.output}
    constants = Constants(graph)
    replaced = {t for node in nodes for t in node.input if t in constants}
    casts_in: dict[str, onnx.NodeProto] = {}
    for node in nodes:
        for index in _FLOAT_INPUTS[node.op_type]:
            if index < len(node.input) and node.input[index] and node.input[index] not in made:
                node.input[index] = _half_source(graph, node.input[index], constants, casts_in)
    chosen = set(inside)
    outside_reads = {t for i, n in enumerate(graph.node) if i not in chosen for t in n.input}
    outside_reads |= {value.name for value in graph.output}
    casts_out: dict[int, list[onnx.NodeProto]] = {}  # by the index of the node they follow
    for index, node in zip(inside, nodes, strict=True):
        for k, out in enumerate(node.output):
            if out in outside_reads:
                node.output[k] = out + SUFFIX
                cast = _cast(out + SUFFIX, out, TensorProto.FLOAT)
                casts_out.setdefault(index, []).append(cast)
    for node in nodes:  # region tensors renamed above are read under their new names
        for k, name in enumerate(node.input):
            if name in outside_reads and name in made:
                node.input[k] = name + SUFFIX
    _reorder(graph, chosen, casts_in, casts_out)
    _forget_types(graph, made)
    _drop_unused(graph, replaced)
    return [node.name for node in nodes]


def _half_source(
    graph: onnx.GraphProto,
    name: str,
    constants: Constants,
    casts: dict[str, onnx.NodeProto],
) -> str:
    """The fp16 tensor standing for float tensor ``name``: an fp16 copy of a constant, or
    the output of one Cast shared by every reader in the region."""
    half = name + SUFFIX
    if name in constants:
        value = constants[name]
        if value.dtype != np.float32:
            raise RegionError(f"{name} is {value.dtype}, not float32")
        if not any(init.name == half for init in graph.initializer):
            graph.initializer.append(numpy_helper.from_array(value.astype(np.float16), half))
    elif name not in casts:
        casts[name] = _cast(name, half, TensorProto.FLOAT16)
    return half


def _cast(source: str, target: str, to: int) -> onnx.NodeProto:
    # Named apart from the region's prefixes, so that `region` never counts a Cast in.
    kind = "to_fp16" if to == TensorProto.FLOAT16 else "to_float"
    return helper.make_node("Cast", [source], [target], name=f"{kind}:{source}", to=to)


def _reorder(
    graph: onnx.GraphProto,
    inside: set[int],
    casts_in: dict[str, onnx.NodeProto],
    casts_out: dict[int, list[onnx.NodeProto]],
) -> None:
    """Each Cast in just before the first node that reads it, each Cast out just after
    the node it follows: the graph stays in topological order."""
    ordered: list[onnx.NodeProto] = []
    pending = dict(casts_in)
    for i, node in enumerate(graph.node):
        if i in inside:
            for name in [s for s, cast in pending.items() if cast.output[0] in node.input]:
                ordered.append(pending.pop(name))
        ordered.append(node)
        ordered.extend(casts_out.get(i, []))
    del graph.node[:]
    graph.node.extend(ordered)


def _forget_types(graph: onnx.GraphProto, tensors: set[str]) -> None:
    """Shape inference recorded these as float; onnxruntime infers them again."""
    for i in reversed(range(len(graph.value_info))):
        if graph.value_info[i].name in tensors:
            del graph.value_info[i]


def _drop_unused(graph: onnx.GraphProto, replaced: set[str]) -> None:
    """The float weights only the region read (now read as their fp16 copies)."""
    used = {name for node in graph.node for name in node.input}
    used |= {value.name for value in graph.output}
    for init in [i for i in graph.initializer if i.name in replaced and i.name not in used]:
        graph.initializer.remove(init)
