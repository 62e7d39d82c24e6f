"""Move FastSpeech2's post-net from the acoustic graph to the front of the vocoder graph.

The acoustic model makes a whole chunk's mel before the first audio: its decoder attends
over all frames. Its post-net does not: five convolutions (kernel 5) that refine the mel,
35 % of the acoustic run (58 of 93 ms for a 13-character chunk here). Convolutional, it
can run on windows of frames like the vocoder, so the importer moves it there: the
acoustic graph ends at the mel before the post-net, and the vocoder graph begins with the
post-net (mel_after = mel_before + postnet(mel_before)). The first audio then waits for
the post-net on one window, not on the whole chunk; `probe_context` measures the joined
graph's receptive field at load, as for any vocoder.

The post-net multiplies by the decoder's frame mask, which is all ones for one utterance
(batch 1, no padding): in the vocoder graph it is a constant 1. The importer keeps the
moved graphs only if they give the unmoved graphs' audio on real sentences
(importer.py); otherwise it keeps tf2onnx's.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnx

PREFIX = "postnet/"  # the moved nodes' tensors, apart from the vocoder's own


def move_postnet(
    acoustic: Path, vocoder: Path, mel_before: str, mel_after: str, vocoder_mel: str
) -> None:
    """Rewrite both files: `acoustic` ends at `mel_before` (the mel output is no longer
    `mel_after`), `vocoder` reads `vocoder_mel` = the mel before the post-net."""
    import onnx
    import onnx.compose
    import onnx.utils

    model = onnx.load(str(acoustic))
    postnet = _postnet(model, mel_before, mel_after)
    voc = onnx.load(str(vocoder))
    merged = onnx.compose.merge_models(
        postnet, voc, io_map=[(mel_after, voc.graph.input[0].name)], prefix1=PREFIX
    )
    _rename_input(merged.graph, PREFIX + mel_before, vocoder_mel)
    onnx.checker.check_model(merged)
    onnx.save(merged, str(vocoder))
    others = [o.name for o in model.graph.output if o.name != mel_after]
    inputs = [i.name for i in model.graph.input]
    onnx.utils.extract_model(str(acoustic), str(acoustic), inputs, others)


def _postnet(model: onnx.ModelProto, mel_before: str, mel_after: str) -> onnx.ModelProto:
    """The nodes between the two mels (with the weights they read) as a model of its own."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    producer = {out: i for i, node in enumerate(graph.node) for out in node.output}
    weights = {t.name: t for t in graph.initializer}
    core = _downstream(graph, mel_before) & _upstream(graph, producer, {mel_after}, mel_before)
    reads = {t for i in core for t in graph.node[i].input if t}
    made = {out for i in core for out in graph.node[i].output}
    outside = reads - made - set(weights) - {mel_before}
    # What else the post-net reads: its weights' DequantizeLinear (made from weights alone)
    # and the frame mask (made from the whole utterance): the mask becomes a constant 1.
    masks = {t for t in outside if not _only_weights(graph, producer, t, weights)}
    weight_nodes = _upstream(graph, producer, outside - masks, mel_before)
    nodes = sorted(core | weight_nodes)
    used = {t for i in nodes for t in graph.node[i].input}
    ones = [numpy_helper.from_array(np.ones((1, 1, 1), np.float32), mask) for mask in masks]
    shape = [1, None, 80]
    sub = helper.make_graph(
        [graph.node[i] for i in nodes],
        "postnet",
        [helper.make_tensor_value_info(mel_before, TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(mel_after, TensorProto.FLOAT, shape)],
        [weights[t] for t in sorted(used & set(weights))] + ones,
    )
    return helper.make_model(sub, opset_imports=model.opset_import, ir_version=model.ir_version)


def _downstream(graph: onnx.GraphProto, tensor: str) -> set[int]:
    readers = defaultdict(list)
    for i, node in enumerate(graph.node):
        for name in node.input:
            readers[name].append(i)
    found: set[int] = set()
    todo = [tensor]
    while todo:
        for i in readers[todo.pop()]:
            if i not in found:
                found.add(i)
                todo.extend(graph.node[i].output)
    return found


def _upstream(
    graph: onnx.GraphProto, producer: dict[str, int], tensors: set[str], stop: str
) -> set[int]:
    found: set[int] = set()
    todo = list(tensors)
    while todo:
        name = todo.pop()
        if name == stop or name not in producer or producer[name] in found:
            continue
        found.add(producer[name])
        todo.extend(graph.node[producer[name]].input)
    return found


def _only_weights(
    graph: onnx.GraphProto, producer: dict[str, int], tensor: str, weights: dict[str, object]
) -> bool:
    """True when `tensor` is computed from weights and constants alone."""
    todo, seen = [tensor], set()
    while todo:
        name = todo.pop()
        if name in weights or name in seen or not name:
            continue
        if name not in producer:
            return False  # a graph input
        seen.add(name)
        todo.extend(graph.node[producer[name]].input)
    return True


def _rename_input(graph: onnx.GraphProto, old: str, new: str) -> None:
    for value in graph.input:
        if value.name == old:
            value.name = new
    for node in graph.node:
        for index, name in enumerate(node.input):
            if name == old:
                node.input[index] = new
