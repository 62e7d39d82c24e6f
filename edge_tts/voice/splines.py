"""The duration predictor's spline flows of a Piper (VITS) voice as compact graphs.

Each ConvFlow of VITS's stochastic duration predictor bends half of its input through a
rational-quadratic spline (VITS transforms.py, run inverse at inference, linear tails).
Exported to ONNX, the spline's masked indexing (`x[inside] = ...`) becomes ~330 nodes per
flow, nearly all of them shape arithmetic, NonZero and ScatterND on a handful of numbers,
run on every encoder run. Here each spline becomes ~80 elementwise nodes computing the
same function on every element, the tails taken with one Where: the same values to the
bit on the voices we ship (tests/test_splines.py), 600 fewer nodes per encoder run.

Done in the model checker's child (model_check.py) before the cut at the decoder. A
graph whose flows do not look exactly like VITS's (the proj Conv, the split, the spline's
constants) is left as it is.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto

from .graph_edit import Builder, Constants, Links, keep_what_others_read, splice

_LOGGER = logging.getLogger(__name__)

FLOWS = "/dp/flows."  # the duration predictor's flows, by node name
MIN_SIZE = 1e-3  # VITS's smallest bin width and height and derivative (transforms.py)
SEARCH_EPS = 1e-6  # added to the last bin edge before the bin search, as VITS does


@dataclass(frozen=True)
class _Spline:
    prefix: str  # the flow's node-name prefix
    h: str  # the bin parameters, (1, 3K-1, T): proj's output times the mask
    x: str  # the half that is bent, (1, 1, T)
    out: str  # the bent half
    bins: int  # K
    scale: float  # widths and heights are divided by it (sqrt(filter_channels))
    bound: float  # the tails start at -bound and bound


def compact_splines(model: onnx.ModelProto) -> int:
    """Rewrite `model`'s duration-predictor splines in place; how many were rewritten."""
    graph = model.graph
    links = Links.of(graph)
    values = Constants(graph)
    replaced: dict[str, list[onnx.NodeProto]] = {}
    dropped: set[int] = set()
    for spline in _splines(graph, links, values):
        old = _region(links, spline)
        if old is not None:
            dropped.update(id(node) for node in old)
            replaced[spline.out] = _compact(spline)
    count = len(replaced)
    if count:
        splice(graph, dropped, replaced)
        _LOGGER.debug("Duration predictor: %d splines, %d nodes made compact", count, len(dropped))
    return count


def _splines(graph: onnx.GraphProto, links: Links, values: Constants) -> list[_Spline]:
    """The flows that end as VITS's ConvFlow does: Concat(x0, spline(x1)) of a Split."""
    found = []
    for node in graph.node:
        if node.op_type != "Concat" or not node.name.startswith(FLOWS) or len(node.input) != 2:
            continue
        split, bent = links.producers.get(node.input[0]), links.producers.get(node.input[1])
        if split is None or split.op_type != "Split" or bent is None or len(split.output) != 2:
            continue
        prefix = node.name.rsplit("/", 1)[0] + "/"
        spline = _read(prefix, split.output[1], node.input[1], graph, links.consumers, values)
        if spline is not None:
            found.append(spline)
    return found


def _read(
    prefix: str,
    x: str,
    out: str,
    graph: onnx.GraphProto,
    consumers: dict[str, list[onnx.NodeProto]],
    values: Constants,
) -> _Spline | None:
    """The spline's inputs and constants, or None where anything differs from VITS's."""
    proj = next((n for n in graph.node if n.name == prefix + "proj/Conv"), None)
    if proj is None or proj.input[1] not in values or len(consumers[proj.output[0]]) != 1:
        return None
    masked = consumers[proj.output[0]][0]
    channels = values[proj.input[1]].shape[0]
    if masked.op_type != "Mul" or channels % 3 != 2:
        return None
    bins = (channels + 1) // 3
    tests = {n.op_type: n for n in consumers[x] if n.op_type in ("GreaterOrEqual", "LessOrEqual")}
    divisors = [
        float(values[n.input[1]])
        for n in graph.node
        if n.op_type == "Div"
        and n.name.startswith(prefix)
        and "/convs/" not in n.name
        and n.input[1] in values
    ]
    if len(tests) != 2 or not divisors or any(d != divisors[0] for d in divisors):
        return None
    low = float(values.get(tests["GreaterOrEqual"].input[1], np.nan))
    high = float(values.get(tests["LessOrEqual"].input[1], np.nan))
    if not (high > 0 and low == -high) or not _has_vits_constants(prefix, high, graph, values):
        return None
    return _Spline(prefix, masked.output[0], x, out, bins, divisors[0], high)


def _has_vits_constants(
    prefix: str, bound: float, graph: onnx.GraphProto, values: Constants
) -> bool:
    """Whether the flow's scalar constants hold VITS's: the bins' floor (MIN_SIZE), the
    bin search's SEARCH_EPS and the interval's width (2 * bound)."""
    seen = [
        float(values[name])
        for node in graph.node
        if node.name.startswith(prefix) and "/convs/" not in node.name
        for name in node.input
        if name in values and values[name].size == 1 and values[name].dtype == np.float32
    ]
    wanted = (MIN_SIZE, SEARCH_EPS, 2 * bound)
    return all(any(math.isclose(v, w, rel_tol=1e-6) for v in seen) for w in wanted)


def _region(links: Links, spline: _Spline) -> list[onnx.NodeProto] | None:
    """The nodes that only the spline needs: the flow's ancestors of `out` back to its
    two inputs, none of whose outputs anything else reads (what something else reads
    stays). None when `out`'s own producer would have to stay."""
    region: dict[int, onnx.NodeProto] = {}
    stack = [spline.out]
    while stack:
        name = stack.pop()
        node = links.producers.get(name)
        if name in (spline.h, spline.x) or node is None or id(node) in region:
            continue
        if not node.name.startswith(spline.prefix) or node.op_type == "Constant":
            continue
        region[id(node)] = node
        stack.extend(name for name in node.input if name)
    keep_what_others_read(region, links, spline.out)
    if not region or spline.out not in {o for n in region.values() for o in n.output}:
        return None
    return list(region.values())


def _compact(s: _Spline) -> list[onnx.NodeProto]:
    """VITS's inverse rational-quadratic spline with linear tails, on every element."""
    build = Builder(s.prefix + "spline/")
    nodes, const, op = build.nodes, build.const, build.op

    k, last = s.bins, 2  # K bins; the bin axis of the (1, T, K) tensors
    axis = const("axis", [last], np.int64)

    def part(data: str, start: int, stop: int, name: str) -> str:
        begin, end = const(name + "_from", [start], np.int64), const(name + "_to", [stop], np.int64)
        return op("Slice", [data, begin, end, axis], name)

    params = op("Transpose", [s.h], "params", perm=[0, 2, 1])  # (1, T, 3K-1)
    scale = const("scale", s.scale)
    widths_u = op("Div", [part(params, 0, k, "uw"), scale], "widths_u")
    heights_u = op("Div", [part(params, k, 2 * k, "uh"), scale], "heights_u")
    tail = const("tail", math.log(math.expm1(1 - MIN_SIZE)))
    pads = const("pads", [0, 0, 1, 0, 0, 1], np.int64)
    slopes_u = op("Pad", [part(params, 2 * k, 3 * k - 1, "ud"), pads, tail], "slopes_u")
    slopes = op("Add", [op("Softplus", [slopes_u], "softplus"), const("floor", MIN_SIZE)], "d")
    edges_w, widths = _edges(op, const, part, widths_u, k, s.bound, "w")
    edges_h, heights = _edges(op, const, part, heights_u, k, s.bound, "h")
    x = op("Transpose", [s.x], "x", perm=[0, 2, 1])  # (1, T, 1)
    # The bin of each x: how many height edges it is at or above (the last one moved up
    # by SEARCH_EPS), minus one; kept inside [0, K-1] for the tails, which Where drops.
    search = op("Add", [edges_h, const("eps", [0.0] * k + [SEARCH_EPS])], "search")
    above = op("Cast", [op("GreaterOrEqual", [x, search], "ge")], "above", to=TensorProto.INT64)
    count = op("ReduceSum", [above, axis], "count", keepdims=1)
    index = op("Sub", [count, const("one", 1, np.int64)], "index0")
    index = op("Max", [index, const("first", 0, np.int64)], "index1")
    index = op("Min", [index, const("lastbin", k - 1, np.int64)], "index")

    def at(data: str, name: str) -> str:
        return op("GatherElements", [data, index], name, axis=last)

    delta = op("Div", [heights, widths], "delta")
    x_edge, width, y_edge = at(edges_w, "cw"), at(widths, "bw"), at(edges_h, "ch")
    d_in, height = at(delta, "delta_in"), at(heights, "bh")
    d0, d1 = at(slopes, "d0"), at(part(slopes, 1, k + 1, "d_next"), "d1")
    t = op("Sub", [x, y_edge], "t")
    two = const("two", 2.0)
    bend = op("Sub", [op("Add", [d0, d1], "dsum"), op("Mul", [d_in, two], "d2")], "bend")
    tb = op("Mul", [t, bend], "tb")
    a = op("Add", [tb, op("Mul", [height, op("Sub", [d_in, d0], "dd")], "hdd")], "a")
    b = op("Sub", [op("Mul", [height, d0], "hd0"), tb], "b")
    c = op("Neg", [op("Mul", [d_in, t], "dt")], "c")
    four_ac = op("Mul", [op("Mul", [a, c], "ac"), const("four", 4.0)], "ac4")
    root_term = op("Sqrt", [op("Sub", [op("Mul", [b, b], "bb"), four_ac], "disc")], "sqrt")
    below = op("Sub", [op("Neg", [b], "nb"), root_term], "below")
    root = op("Div", [op("Mul", [c, two], "c2"), below], "root")
    bent = op("Add", [op("Mul", [root, width], "rw"), x_edge], "bent")
    inside = op(
        "And",
        [
            op("GreaterOrEqual", [x, const("low", -s.bound)], "ge_low"),
            op("LessOrEqual", [x, const("high", s.bound)], "le_high"),
        ],
        "inside",
    )
    chosen = op("Where", [inside, bent, x], "chosen")
    build.op_to("Transpose", [chosen], s.out, "out", perm=[0, 2, 1])
    return nodes


Op = Callable[..., str]


def _edges(
    op: Op,
    const: Callable[..., str],
    part: Callable[[str, int, int, str], str],
    unnormalized: str,
    k: int,
    bound: float,
    tag: str,
) -> tuple[str, str]:
    """VITS's bin edges (K+1, from -bound to bound) and sizes from unnormalized sizes:
    softmax, a floor of MIN_SIZE each, cumulated; the first edge -bound, the last bound."""
    share = op("Softmax", [unnormalized], tag + "_softmax", axis=-1)
    floor = const(tag + "_floor", MIN_SIZE)
    sizes = op(
        "Add",
        [op("Mul", [share, const(tag + "_rest", 1 - MIN_SIZE * k)], tag + "_s"), floor],
        tag + "_sizes",
    )
    cumulated = op("CumSum", [sizes, const(tag + "_axis", 2, np.int64)], tag + "_cum")
    spread = op("Mul", [cumulated, const(tag + "_span", 2 * bound)], tag + "_spread")
    inner = op("Add", [spread, const(tag + "_low", -bound)], tag + "_inner")
    # The K-1 inner edges between -bound and bound; the ends set exactly, as VITS does.
    padded = op(
        "Pad",
        [
            part(inner, 0, k - 1, tag + "_inner_edges"),
            const(tag + "_pads", [0, 0, 1, 0, 0, 1], np.int64),
        ],
        tag + "_padded",
    )
    ends = const(tag + "_ends", [-bound] + [0.0] * (k - 1) + [bound])
    edges = op("Add", [padded, ends], tag + "_edges")
    sizes_out = op(
        "Sub",
        [part(edges, 1, k + 1, tag + "_upper"), part(edges, 0, k, tag + "_lower")],
        tag + "_width",
    )
    return edges, sizes_out
