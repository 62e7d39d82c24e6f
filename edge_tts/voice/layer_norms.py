"""VITS's layer norms as single LayerNormalization nodes.

A Piper voice is exported at opset 15, before ONNX had LayerNormalization, so each of its
36 layer norms (12 in the text encoder, 24 in the duration predictor) is nine nodes:
ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add. onnxruntime fuses that chain
only over the last axis; our INT8 builds (after `quant_pre_process`) normalize over the
channel axis of (batch, channels, time) instead, and the FP32 export's chains are not
fused either. Each becomes one LayerNormalization over the last axis (between two
Transposes where the chain normalized the channel axis): 228 fewer nodes per encoder run,
the same values within float rounding (onnxruntime's kernel sums in another order).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

from .graph_edit import Builder, Constants, Links, drop_unread_initializers, splice

_LOGGER = logging.getLogger(__name__)

OPSET = 17  # the first with LayerNormalization
PARTS = ("/enc_p/", "/dp/")  # where VITS has its layer norms (1-D, by node name)


@dataclass(frozen=True)
class _Norm:
    x: str  # what is normalized
    chain: tuple[onnx.NodeProto, ...]  # the nine nodes, the last one writes `out`
    out: str
    gamma: np.ndarray
    beta: np.ndarray
    epsilon: float
    channel_axis: bool  # over axis 1 of (batch, channels, time), else over the last axis


def fuse_layer_norms(model: onnx.ModelProto) -> int:
    """Rewrite `model`'s layer-norm chains in place; how many were rewritten."""
    graph = model.graph
    links = Links.of(graph)
    values = Constants(graph)
    norms = [n for node in graph.node if (n := _read(node, links, values)) is not None]
    if not norms:
        return 0
    made = {norm.out: _fused(norm, graph) for norm in norms}
    splice(graph, {id(node) for norm in norms for node in norm.chain}, made)
    drop_unread_initializers(graph)
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx"):
            opset.version = max(opset.version, OPSET)
    _LOGGER.debug("%d layer norms fused", len(norms))
    return len(norms)


def _read(mean: onnx.NodeProto, links: Links, values: Constants) -> _Norm | None:
    """The chain that starts at ReduceMean `mean`, or None where anything differs."""
    axes = _axes(mean)
    if mean.op_type != "ReduceMean" or axes not in ([-1], [1]) or not mean.name.startswith(PARTS):
        return None
    x = mean.input[0]
    sub = links.only_reader(mean.output[0])
    if sub is None or sub.op_type != "Sub" or list(sub.input) != [x, mean.output[0]]:
        return None
    readers = {n.op_type: n for n in links.consumers[sub.output[0]]}
    power, div = readers.get("Pow"), readers.get("Div")
    if len(links.consumers[sub.output[0]]) != 2 or power is None or div is None:
        return None
    if div.input[0] != sub.output[0] or _scalar(values, power.input[1]) != 2.0:
        return None
    chain = _follow(power, ("ReduceMean", "Add", "Sqrt"), links)
    if chain is None or _axes(chain[0]) != axes or div.input[1] != chain[2].output[0]:
        return None
    tail = _follow(div, ("Mul", "Add"), links)
    epsilon = _scalar(values, chain[1].input[1])
    if tail is None or epsilon is None:
        return None
    gamma, beta = values.get(tail[0].input[1]), values.get(tail[1].input[1])
    if gamma is None or beta is None or not _per_channel(gamma, beta, axes == [1]):
        return None
    nodes = (mean, sub, power, *chain, div, *tail)
    return _Norm(x, nodes, tail[1].output[0], gamma, beta, epsilon, axes == [1])


def _follow(
    start: onnx.NodeProto, kinds: tuple[str, ...], links: Links
) -> tuple[onnx.NodeProto, ...] | None:
    """The nodes of `kinds` after `start`, each the only reader of the one before."""
    found, node = [], start
    for kind in kinds:
        nxt = links.only_reader(node.output[0])
        if nxt is None or nxt.op_type != kind or nxt.input[0] != node.output[0]:
            return None
        found.append(node := nxt)
    return tuple(found)


def _per_channel(gamma: np.ndarray, beta: np.ndarray, channel_axis: bool) -> bool:
    """Whether the scale and shift hold one value per normalized channel, laid out to
    broadcast along that axis: (C,) or (1, 1, C) for the last, (C, 1) or (1, C, 1) for
    the channel axis."""
    if gamma.shape != beta.shape or gamma.ndim == 0:
        return False
    width = gamma.size
    last = (width, 1) if channel_axis else (width,)
    return gamma.shape[-len(last) :] == last and all(d == 1 for d in gamma.shape[: -len(last)])


def _axes(node: onnx.NodeProto) -> list[int] | None:
    if any(a.name == "keepdims" and a.i == 0 for a in node.attribute):
        return None
    return next((list(a.ints) for a in node.attribute if a.name == "axes"), None)


def _scalar(values: Constants, name: str) -> float | None:
    value = values.get(name)
    return float(value) if value is not None and value.size == 1 else None


def _fused(norm: _Norm, graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    build = Builder(norm.chain[0].name.rsplit("/", 1)[0] + "/LayerNorm/")
    gamma, beta = build.prefix + "gamma", build.prefix + "beta"
    for name, value in ((gamma, norm.gamma), (beta, norm.beta)):
        graph.initializer.append(numpy_helper.from_array(value.reshape(-1), name))
    if not norm.channel_axis:
        build.op_to(
            "LayerNormalization",
            [norm.x, gamma, beta],
            norm.out,
            "norm",
            axis=-1,
            epsilon=norm.epsilon,
        )
        return build.nodes
    last = build.op("Transpose", [norm.x], "to_last", perm=[0, 2, 1])
    normed = build.op(
        "LayerNormalization", [last, gamma, beta], "norm", axis=-1, epsilon=norm.epsilon
    )
    build.op_to("Transpose", [normed], norm.out, "back", perm=[0, 2, 1])
    return build.nodes
