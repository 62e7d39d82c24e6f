"""The text encoder's relative-position attention as a compact graph.

VITS's text encoder (attentions.py, `MultiHeadAttention` with `window_size`) adds to each
attention score q_i . e_k[j - i + w] and to each output the sum of p_ij e_v[j - i + w],
for |j - i| <= w, with 2w + 1 learnt embeddings per table. PyTorch computes that by padding
the tables to 2L - 1 rows and skewing (L, 2L - 1) matrices into (L, L) and back with pads
and reshapes; exported, that is ~90 nodes of shape arithmetic per layer, run on every
encoder run. Here each layer multiplies by the 2w + 1 embeddings only and moves the band
in and out with GatherElements, through index tensors that all layers share: 108 nodes a
layer become 20, and the same values (the band's products are the same sums; what lies
outside it is zero in both).

A layer that does not look exactly like VITS's (other ops, a proximal bias, a block
mask, tables of another shape) is left as it is.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
import onnx

from .graph_edit import Builder, Constants, Links, keep_what_others_read, splice

_LOGGER = logging.getLogger(__name__)

LAYERS = "/enc_p/encoder/attn_layers."  # the text encoder's attention layers, by node name
SHARED = "/enc_p/encoder/relative_band/"  # the index tensors the compact layers share
# What the exported relative attention is made of; anything else means another variant.
KNOWN_OPS = frozenset(
    [
        "Shape",
        "Gather",
        "Unsqueeze",
        "Squeeze",
        "Concat",
        "Reshape",
        "Transpose",
        "Div",
        "MatMul",
        "Sub",
        "Mul",
        "Add",
        "Slice",
        "Pad",
        "Where",
        "Softmax",
        "Cast",
        "ConstantOfShape",
        "Equal",
        "Expand",
        "Range",
        "Identity",
    ]
)


@dataclass(frozen=True)
class _Layer:
    q: str  # the projections, (batch, channels, L)
    k: str
    v: str
    out: str  # what conv_o reads, (batch, channels, L)
    cond: str  # the Where's mask condition and fill value
    fill: str
    softmax: onnx.NodeProto
    emb_k: np.ndarray  # (1 or heads, 2w + 1, k_channels)
    emb_v: np.ndarray
    channels: int
    region: tuple[onnx.NodeProto, ...]  # the nodes this replaces

    @property
    def shape(self) -> tuple[int, int, int]:
        """(heads, k_channels, window): what the shared index tensors depend on."""
        k_channels = self.emb_k.shape[2]
        return self.channels // k_channels, k_channels, (self.emb_k.shape[1] - 1) // 2


def compact_attention(model: onnx.ModelProto) -> int:
    """Rewrite `model`'s relative-position attention layers in place; how many."""
    graph = model.graph
    links = Links.of(graph)
    values = Constants(graph)
    prefixes = dict.fromkeys(
        node.name[: node.name.index("/", len(LAYERS)) + 1]
        for node in graph.node
        if node.name.startswith(LAYERS) and "/" in node.name[len(LAYERS) :]
    )
    layers = [x for p in prefixes if (x := _read(p, graph, links, values)) is not None]
    layers = [x for x in layers if x.shape == layers[0].shape]
    if not layers:
        return 0
    shared = Builder(SHARED)
    band = _band(shared, layers[0])
    made = {x.out: _compact(x, band) for x in layers}
    made[layers[0].out][:0] = shared.nodes  # before the first layer, which reads them
    splice(graph, {id(node) for x in layers for node in x.region}, made)
    _LOGGER.debug("Text encoder: %d attention layers made compact", len(layers))
    return len(layers)


def _read(prefix: str, graph: onnx.GraphProto, links: Links, values: Constants) -> _Layer | None:
    """The layer under `prefix`, or None where anything differs from VITS's."""
    convs: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        if node.op_type == "Conv" and node.name.startswith(prefix):
            for part in ("conv_q", "conv_k", "conv_v", "conv_o"):
                if f".{part}.weight" in node.input[1]:
                    convs.setdefault(part, []).append(node)
    if sorted(convs) != ["conv_k", "conv_o", "conv_q", "conv_v"] or any(
        len(found) != 1 for found in convs.values()
    ):
        return None
    q, k, v = (_after_qdq(convs[p][0].output[0], links) for p in ("conv_q", "conv_k", "conv_v"))
    out = _before_qdq(convs["conv_o"][0].input[0], links)
    table = prefix[len("/") :].replace("/", ".")  # enc_p.encoder.attn_layers.N.
    emb_k, emb_v = values.get(table + "emb_rel_k"), values.get(table + "emb_rel_v")
    channels = _out_channels(convs["conv_q"][0], links, values)
    wheres = [n for n in graph.node if n.op_type == "Where" and n.name.startswith(prefix)]
    if emb_k is None or emb_v is None or channels is None or len(wheres) != 1:
        return None
    cond, fill = wheres[0].input[0], wheres[0].input[1]
    region = _region(out, {q, k, v, cond}, prefix, links, values)
    if region is None or fill not in values or not _is_vits(region, values, table, channels):
        return None
    softmax = next(n for n in region if n.op_type == "Softmax")
    return _Layer(q, k, v, out, cond, fill, softmax, emb_k, emb_v, channels, region)


def _after_qdq(name: str, links: Links) -> str:
    """`name`, or the float tensor after its Quantize/Dequantize pair (an INT8 build)."""
    quantize = links.only_reader(name)
    if quantize is not None and quantize.op_type == "QuantizeLinear":
        dequantize = links.only_reader(quantize.output[0])
        if dequantize is not None and dequantize.op_type == "DequantizeLinear":
            return str(dequantize.output[0])
    return name


def _before_qdq(name: str, links: Links) -> str:
    """`name`, or the float tensor before the Quantize/Dequantize pair that makes it."""
    dequantize = links.producers.get(name)
    if dequantize is not None and dequantize.op_type == "DequantizeLinear":
        quantize = links.producers.get(dequantize.input[0])
        if quantize is not None and quantize.op_type == "QuantizeLinear":
            return str(quantize.input[0])
    return name


def _out_channels(conv: onnx.NodeProto, links: Links, values: Constants) -> int | None:
    weight = conv.input[1]
    dequantize = links.producers.get(weight)
    if weight not in values and dequantize is not None and dequantize.op_type == "DequantizeLinear":
        weight = dequantize.input[0]
    return values.shape(weight)[0] if weight in values else None


def _region(
    out: str, stops: set[str], prefix: str, links: Links, values: Constants
) -> tuple[onnx.NodeProto, ...] | None:
    """The nodes between the layer's inputs and `out`; None where the way back leaves the
    layer (another layer's node, a graph input) or `out`'s producer must stay."""
    region: dict[int, onnx.NodeProto] = {}
    stack = [out]
    while stack:
        name = stack.pop()
        if name in stops or name in values or not name:
            continue
        node = links.producers.get(name)
        if node is None or not (node.name.startswith(prefix) or not node.name):
            return None
        if id(node) not in region:
            region[id(node)] = node
            stack.extend(node.input)
    keep_what_others_read(region, links, out)
    if out not in {o for node in region.values() for o in node.output}:
        return None
    return tuple(region.values())


def _is_vits(
    region: tuple[onnx.NodeProto, ...], values: Constants, table: str, channels: int
) -> bool:
    """Whether the region is VITS's windowed relative attention and nothing else: its ops,
    both tables read, a shape VITS makes, q divided by sqrt(k_channels)."""
    kinds = Counter(node.op_type for node in region)
    if not set(kinds) <= KNOWN_OPS or kinds["Softmax"] != 1 or kinds["MatMul"] != 4:
        return False
    emb_k, emb_v = values[table + "emb_rel_k"], values[table + "emb_rel_v"]
    read = {name for node in region for name in node.input}
    if not {table + "emb_rel_k", table + "emb_rel_v"} <= read:
        return False
    if emb_k.ndim != 3 or emb_k.shape != emb_v.shape or emb_k.shape[1] % 2 != 1:
        return False
    heads, k_channels = channels // emb_k.shape[2], emb_k.shape[2]
    divisors = [
        float(values[n.input[1]])
        for n in region
        if n.op_type == "Div" and n.input[1] in values and values[n.input[1]].size == 1
    ]
    scaled = any(math.isclose(d, math.sqrt(k_channels), rel_tol=1e-6) for d in divisors)
    return scaled and heads * k_channels == channels and emb_k.shape[0] in (1, heads)


def _band(build: Builder, layer: _Layer) -> tuple[str, str]:
    """The GatherElements indices the layers share, from the first layer's q: for the
    scores, (batch, heads, L, L) holding j - i + w inside the band and 2w + 1 (a zero
    column) outside; for the outputs, (batch, heads, L, 2w + 1) holding i + r - w where
    that is a position and L (a zero column) where not."""
    heads, _, window = layer.shape
    const, op = build.const, build.op
    shape = op("Shape", [layer.q], "shape")
    batch = op(
        "Slice", [shape, const("batch_from", [0], np.int64), const("one", [1], np.int64)], "batch"
    )
    length = op(
        "Slice",
        [shape, const("length_from", [2], np.int64), const("three", [3], np.int64)],
        "length",
    )
    scalar = op("Squeeze", [length], "length_scalar")
    positions = op(
        "Range", [const("zero", 0, np.int64), scalar, const("step", 1, np.int64)], "positions"
    )
    rows = op("Unsqueeze", [positions, const("axis1", [1], np.int64)], "i")
    cols = op("Unsqueeze", [positions, const("axis0", [0], np.int64)], "j")
    offset = op("Sub", [cols, rows], "j_minus_i")
    inside = op(
        "LessOrEqual",
        [op("Abs", [offset], "distance"), const("window", window, np.int64)],
        "inside",
    )
    shifted = op("Add", [offset, const("w", window, np.int64)], "shifted")
    scores = op(
        "Where", [inside, shifted, const("zero_column", 2 * window + 1, np.int64)], "scores_2d"
    )
    lead = op("Concat", [batch, const("heads", [heads], np.int64)], "lead", axis=0)
    scores = op(
        "Expand", [scores, op("Concat", [lead, length, length], "scores_shape", axis=0)], "scores"
    )
    reach = const("reach", np.arange(2 * window + 1)[None, :] - window, np.int64)
    at = op("Add", [rows, reach], "at")
    valid = op(
        "And",
        [
            op("GreaterOrEqual", [at, const("first", 0, np.int64)], "from_first"),
            op("Less", [at, scalar], "before_end"),
        ],
        "valid",
    )
    outputs = op("Where", [valid, at, scalar], "outputs_2d")
    width = const("width", [2 * window + 1], np.int64)
    outputs = op(
        "Expand", [outputs, op("Concat", [lead, length, width], "outputs_shape", axis=0)], "outputs"
    )
    return scores, outputs


def _compact(layer: _Layer, band: tuple[str, str]) -> list[onnx.NodeProto]:
    """The layer's attention from q, k, v to what conv_o reads, as VITS computes it."""
    heads, k_channels, _ = layer.shape
    build = Builder(layer.softmax.name.rsplit("/", 1)[0] + "/compact/")
    const, op = build.const, build.op
    split = const("heads", [0, heads, k_channels, -1], np.int64)  # (batch, heads, kc, L)
    query = op("Transpose", [op("Reshape", [layer.q, split], "q_heads")], "q", perm=[0, 1, 3, 2])
    query = op("Div", [query, const("scale", math.sqrt(k_channels))], "q_scaled")
    key = op("Reshape", [layer.k, split], "k")
    value = op("Transpose", [op("Reshape", [layer.v, split], "v_heads")], "v", perm=[0, 1, 3, 2])
    zero_column = const("zero_column", [0, 0, 0, 0, 0, 0, 0, 1], np.int64)
    near = op("MatMul", [query, const("emb_k", layer.emb_k.transpose(0, 2, 1))], "near_k")
    near = op(
        "GatherElements",
        [op("Pad", [near, zero_column], "near_k_padded"), band[0]],
        "rel_k",
        axis=3,
    )
    scores = op("Add", [op("MatMul", [query, key], "scores"), near], "scores_rel")
    masked = op("Where", [layer.cond, layer.fill, scores], "masked")
    weights = op("Softmax", [masked], "weights")
    build.nodes[-1].attribute.extend(layer.softmax.attribute)
    output = op("MatMul", [weights, value], "output")
    banded = op(
        "GatherElements",
        [op("Pad", [weights, zero_column], "weights_padded"), band[1]],
        "band",
        axis=3,
    )
    output = op(
        "Add", [output, op("MatMul", [banded, const("emb_v", layer.emb_v)], "rel_v")], "output_rel"
    )
    merged = op("Transpose", [output], "output_t", perm=[0, 1, 3, 2])
    build.op_to(
        "Reshape", [merged, const("merge", [0, layer.channels, -1], np.int64)], layer.out, "out"
    )
    return build.nodes
