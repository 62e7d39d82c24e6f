"""What the load-time graph rewrites share (splines.py, attention.py, layer_norms.py,
zero_adds.py):
who makes and who reads each tensor, the graph's constants, a builder for new nodes, and
the splice that puts new nodes where the old ones were.

The rewrites run in the model checker's child (model_check.py), before the cut at the
decoder, on FP32 and INT8 builds alike; each leaves alone what does not look exactly like
what it knows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper


@dataclass(frozen=True)
class Links:
    """The graph's edges: each tensor's producer and its readers."""

    producers: dict[str, onnx.NodeProto]
    consumers: dict[str, list[onnx.NodeProto]]

    @classmethod
    def of(cls, graph: onnx.GraphProto) -> Links:
        consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
        for node in graph.node:
            for name in node.input:
                consumers[name].append(node)
        return cls({out: node for node in graph.node for out in node.output}, consumers)

    def only_reader(self, name: str) -> onnx.NodeProto | None:
        readers = self.consumers.get(name, [])
        return readers[0] if len(readers) == 1 else None


class Constants(Mapping[str, np.ndarray]):
    """Every constant tensor of a graph by name, its initializers and Constant nodes'
    outputs, each made an array when first asked for (a voice's weights are 19-63 MB, and
    a rewrite reads a few small ones; voicebuild/half.py rounds them to fp16)."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self._tensors = {t.name: t for t in graph.initializer}
        for node in graph.node:
            if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
                self._tensors[node.output[0]] = node.attribute[0].t
        self._arrays: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._arrays:
            self._arrays[name] = numpy_helper.to_array(self._tensors[name])
        return self._arrays[name]

    def __contains__(self, name: object) -> bool:
        return name in self._tensors

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def shape(self, name: str) -> tuple[int, ...]:
        """A constant's shape, without making it an array."""
        return tuple(self._tensors[name].dims)


@dataclass
class Builder:
    """New nodes named under `prefix`, in the order they are made."""

    prefix: str
    nodes: list[onnx.NodeProto] = field(default_factory=list)

    def const(self, name: str, value: object, dtype: type = np.float32) -> str:
        tensor = numpy_helper.from_array(np.asarray(value, dtype=dtype), self.prefix + name)
        self.nodes.append(helper.make_node("Constant", [], [self.prefix + name], value=tensor))
        return self.prefix + name

    def op(self, kind: str, inputs: list[str], name: str, **attributes: object) -> str:
        return self.op_to(kind, inputs, self.prefix + name, name, **attributes)

    def op_to(self, kind: str, inputs: list[str], out: str, name: str, **attributes: object) -> str:
        """A node writing the tensor `out` (an existing name, where it replaces its producer)."""
        node = helper.make_node(kind, inputs, [out], name=self.prefix + name)
        node.attribute.extend(helper.make_attribute(k, v) for k, v in attributes.items())
        self.nodes.append(node)
        return out


def splice(
    graph: onnx.GraphProto, dropped: set[int], made: dict[str, list[onnx.NodeProto]]
) -> None:
    """Drop the nodes in `dropped` (by id) and put each list of `made` just before the
    first remaining node that reads its key tensor (the graph stays in topological order:
    what the new nodes read was made before the old ones that they replace)."""
    pending = dict(made)
    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        if id(node) in dropped:
            continue
        if pending and not pending.keys().isdisjoint(node.input):
            for out in [name for name in pending if name in node.input]:
                nodes.extend(pending.pop(out))
        nodes.append(node)
    for rest in pending.values():  # read by no node: a graph output
        nodes.extend(rest)
    del graph.node[:]
    graph.node.extend(nodes)


def keep_what_others_read(
    region: dict[int, onnx.NodeProto], links: Links, out: str
) -> dict[int, onnx.NodeProto]:
    """`region` less the nodes whose outputs (other than `out`) something outside it still
    reads (a shared constant, a shape); in place, and returned."""
    changed = True
    while changed:
        changed = False
        for key, node in list(region.items()):
            outside = (c for o in node.output if o != out for c in links.consumers.get(o, []))
            if any(id(c) not in region for c in outside):
                del region[key]
                changed = True
    return region


def drop_unread_initializers(graph: onnx.GraphProto) -> None:
    """Remove the initializers no node reads any more (the weights a rewrite replaced)."""
    read = {name for node in graph.node for name in node.input}
    outputs = {o.name for o in graph.output}
    kept = [t for t in graph.initializer if t.name in read or t.name in outputs]
    del graph.initializer[:]
    graph.initializer.extend(kept)
