"""Cut a Piper (VITS) graph in two at the HiFi-GAN decoder's input.

The encoder half (text encoder, duration predictor, flow) turns phoneme ids into latent
frames; the decoder half turns latent frames into audio, 256 samples per frame for the
usual Piper voices. The decoder is convolutional with a finite receptive field, so it can
run on windows of frames: the first sound is ready after the encoder and one short window
instead of after the whole sentence, and the decoder's memory is bounded by the window
instead of growing with the sentence.

The decoder is cut once more, at its second upsampling: the first stage (conv_pre and the
low-rate resblocks, ~20 % of the decoder's work) sees ~10 latent frames around each
output, the second (the high-rate layers, ~80 %) only ~1. Each window is decoded with
each stage's own context, so the expensive stage recomputes ~1 frame at a seam, not 11.

The cut runs in the model checker's child process (model_check.py): onnx is imported
inside the functions that need it, so the daemon importing `SplitModel` pays nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnx

_LOGGER = logging.getLogger(__name__)

DECODER_FIRST_CONV = "/dec/conv_pre/Conv"  # torch.onnx's scope name in every Piper export
DECODER_STAGE_CONVS = ("/dec/ups.1/ConvTranspose",)  # where later decoder stages start
# An INT8 build may hold a ConvTranspose rewritten as "<its name><this>" (the quantizer's
# edge_tts.voice.polyphase); that Conv then starts the stage.
POLYPHASE_CONV = "_polyphase/Conv"
SPEAKER_INPUTS = {"sid"}  # multi-speaker voices condition the decoder on the speaker
_QDQ = ("QuantizeLinear", "DequantizeLinear")


@dataclass(frozen=True)
class SplitModel:
    encoder: bytes  # the voice's inputs -> latent
    # latent (+ decoder_inputs) -> ... -> audio; each stage reads the one before's output
    decoder: tuple[bytes, ...]
    stage_inputs: tuple[str, ...]  # the tensor each stage reads; the first is `latent`
    channels: int  # of the latent: (1, channels, frames)
    decoder_inputs: tuple[str, ...]  # the voice's own inputs the first stage also reads

    @property
    def latent(self) -> str:
        return self.stage_inputs[0]


def split_at_decoder(model: onnx.ModelProto) -> SplitModel | None:
    """The two halves of a Piper voice, or None (model untouched) for a graph we do not know.

    When it returns halves, `model` has been turned into the encoder half in place: the
    weights are not copied, which keeps the peak memory of a load down.
    """
    graph = model.graph
    producers = {out: i for i, node in enumerate(graph.node) for out in node.output}
    conv = next((n for n in graph.node if n.name == DECODER_FIRST_CONV), None)
    if conv is None or len(conv.input) < 2 or _has_subgraphs(graph):
        _LOGGER.info("No %s node: decoding whole sentences", DECODER_FIRST_CONV)
        return None
    latent = _float_source(graph, conv.input[0], producers)
    channels = _input_channels(graph, conv.input[1], producers)
    weights = {t.name for t in graph.initializer}
    voice_inputs = {value.name for value in graph.input} - weights  # old IRs list weights too
    outputs = [value.name for value in graph.output]
    decoder_nodes, decoder_inputs = _closure(graph, outputs, {latent}, producers, voice_inputs)
    if latent not in producers or channels is None or not decoder_inputs <= SPEAKER_INPUTS:
        # Anything else would mean re-running part of the encoder for every window.
        _LOGGER.info("Decoder half not separable here: decoding whole sentences")
        return None
    decoder = _decoder_model(model, decoder_nodes, latent, channels, sorted(decoder_inputs))
    stages, stage_inputs = _cut_stages(decoder, latent)
    encoder_nodes, _ = _closure(graph, [latent], set(), producers, voice_inputs)
    _keep_only(model, encoder_nodes, latent)
    return SplitModel(
        encoder=model.SerializeToString(),
        decoder=tuple(stage.SerializeToString() for stage in stages),
        stage_inputs=(latent, *stage_inputs),
        channels=channels,
        decoder_inputs=tuple(sorted(decoder_inputs)),
    )


def _cut_stages(decoder: onnx.ModelProto, latent: str) -> tuple[list[onnx.ModelProto], list[str]]:
    """The decoder as a chain of stages, cut before each of DECODER_STAGE_CONVS where the
    part after reads nothing but the cut tensor (else it stays in one piece there)."""
    stages, cuts = [], []
    rest = decoder
    for name in DECODER_STAGE_CONVS:
        pair = _cut_before(rest, name)
        if pair is None:
            continue
        first, rest, tensor = pair
        stages.append(first)
        cuts.append(tensor)
    _LOGGER.debug("Decoder in %d stages, cut at %s after %s", len(stages) + 1, cuts, latent)
    return [*stages, rest], cuts


def _cut_before(
    model: onnx.ModelProto, node_name: str
) -> tuple[onnx.ModelProto, onnx.ModelProto, str] | None:
    """(model up to the float input of `node_name`, model from it, that tensor) or None."""
    import onnx  # only in the model checker's child process

    graph = model.graph
    names = (node_name, node_name + POLYPHASE_CONV)
    node = next((n for n in graph.node if n.name in names), None)
    if node is None or not node.input:
        return None
    producers = {out: i for i, n in enumerate(graph.node) for out in n.output}
    tensor = _float_source(graph, node.input[0], producers)
    inputs = {value.name for value in graph.input}
    outputs = [value.name for value in graph.output]
    later, later_reads = _closure(graph, outputs, {tensor}, producers, inputs)
    if tensor not in producers or later_reads:
        return None  # the later part also reads the stage's inputs: no clean cut
    earlier, _ = _closure(graph, [tensor], set(), producers, inputs)
    cut = onnx.helper.make_tensor_value_info(tensor, onnx.TensorProto.FLOAT, None)
    first = _submodel(model, earlier, list(graph.input), [cut])
    second = _submodel(model, later, [cut], list(graph.output))
    return first, second, tensor


def _has_subgraphs(graph: onnx.GraphProto) -> bool:
    """If/Loop bodies may read outer tensors our closure walk does not see."""
    return any(attr.HasField("g") or attr.graphs for n in graph.node for attr in n.attribute)


def _float_source(graph: onnx.GraphProto, tensor: str, producers: dict[str, int]) -> str:
    """The float tensor behind a quantize/dequantize chain (itself if there is none)."""
    while tensor in producers and graph.node[producers[tensor]].op_type in _QDQ:
        tensor = graph.node[producers[tensor]].input[0]
    return tensor


def _input_channels(graph: onnx.GraphProto, weight: str, producers: dict[str, int]) -> int | None:
    """The decoder's first Conv's input channels, from its weight's shape (C_out, C_in, k)."""
    weight = _float_source(graph, weight, producers)
    dims = next((list(t.dims) for t in graph.initializer if t.name == weight), None)
    return int(dims[1]) if dims is not None and len(dims) == 3 else None


def _closure(
    graph: onnx.GraphProto,
    targets: list[str],
    stops: set[str],
    producers: dict[str, int],
    voice_inputs: set[str],
) -> tuple[set[int], set[str]]:
    """Indices of the nodes `targets` are computed from (not looking past `stops`), and
    the voice inputs they read."""
    nodes: set[int] = set()
    inputs: set[str] = set()
    seen: set[str] = set()
    pending = list(targets)
    while pending:
        tensor = pending.pop()
        if tensor in seen or tensor in stops:
            continue
        seen.add(tensor)
        if tensor in voice_inputs:
            inputs.add(tensor)
        elif tensor in producers and producers[tensor] not in nodes:
            nodes.add(producers[tensor])
            pending.extend(t for t in graph.node[producers[tensor]].input if t)
    return nodes, inputs


def _decoder_model(
    model: onnx.ModelProto, nodes: set[int], latent: str, channels: int, inputs: list[str]
) -> onnx.ModelProto:
    import onnx  # only in the model checker's child process

    latent_info = onnx.helper.make_tensor_value_info(
        latent, onnx.TensorProto.FLOAT, [1, channels, "frames"]
    )
    speaker = [v for v in model.graph.input if v.name in inputs]
    return _submodel(model, nodes, [latent_info, *speaker], list(model.graph.output))


def _submodel(
    model: onnx.ModelProto,
    nodes: set[int],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
) -> onnx.ModelProto:
    """A new model of `model`'s nodes `nodes` (by index) with the weights they read."""
    import onnx  # only in the model checker's child process

    graph = model.graph
    used = {t for i in nodes for t in graph.node[i].input}
    subgraph = onnx.helper.make_graph(
        nodes=[graph.node[i] for i in sorted(nodes)],
        name="decoder",
        inputs=inputs,
        outputs=outputs,
        initializer=[t for t in graph.initializer if t.name in used],
        value_info=[v for v in graph.value_info if v.name in used],
    )
    return onnx.helper.make_model(
        subgraph, opset_imports=list(model.opset_import), ir_version=model.ir_version
    )


def _keep_only(model: onnx.ModelProto, nodes: set[int], output: str) -> None:
    """Turn `model` into the subgraph of `nodes` with one output, deleting in place."""
    import onnx  # only in the model checker's child process

    graph = model.graph
    for i in reversed(range(len(graph.node))):
        if i not in nodes:
            del graph.node[i]
    used = {t for node in graph.node for t in node.input}
    for i in reversed(range(len(graph.initializer))):
        if graph.initializer[i].name not in used:
            del graph.initializer[i]
    for i in reversed(range(len(graph.value_info))):
        if graph.value_info[i].name not in used:
            del graph.value_info[i]
    del graph.output[:]
    graph.output.append(onnx.helper.make_tensor_value_info(output, onnx.TensorProto.FLOAT, None))
