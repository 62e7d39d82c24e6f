"""Cut a Piper (VITS) graph in two at the HiFi-GAN decoder's input.

The encoder half (text encoder, duration predictor, flow) turns phoneme ids into latent
frames; the decoder half turns latent frames into audio, 256 samples per frame for the
usual Piper voices. The decoder is convolutional with a finite receptive field, so it can
run on windows of frames: the first sound is ready after the encoder and one short window
instead of after the whole sentence, and the decoder's memory is bounded by the window
instead of growing with the sentence.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import onnx
from onnx.utils import Extractor

_LOGGER = logging.getLogger(__name__)

DECODER_FIRST_CONV = "/dec/conv_pre/Conv"  # torch.onnx's scope name in every Piper export
_QDQ = ("QuantizeLinear", "DequantizeLinear")
SPEAKER_INPUTS = {"sid"}  # multi-speaker voices condition the decoder on the speaker


@dataclass(frozen=True)
class SplitModel:
    encoder: bytes  # the voice's inputs -> latent
    decoder: bytes  # latent (+ the inputs the decoder also needs, e.g. sid) -> audio
    latent: str  # name of the tensor that crosses the cut: (1, channels, frames)
    channels: int
    decoder_inputs: tuple[str, ...]  # the voice's own inputs the decoder also reads


def split_at_decoder(data: bytes) -> SplitModel | None:
    """The two halves of a Piper voice, or None when the graph is not one we recognise."""
    model = onnx.load_model_from_string(data)
    graph = model.graph
    producers = {out: node for node in graph.node for out in node.output}
    conv = next((n for n in graph.node if n.name == DECODER_FIRST_CONV), None)
    latent = _float_source(conv.input[0], producers) if conv and conv.input else None
    channels = _input_channels(conv, graph, producers) if conv else None
    if latent is None or latent not in producers or channels is None:
        _LOGGER.info("No %s node: decoding whole sentences", DECODER_FIRST_CONV)
        return None
    voice_inputs = [value.name for value in graph.input]
    outputs = [value.name for value in graph.output]
    decoder_inputs = _inputs_reached(outputs, latent, producers, set(voice_inputs))
    if not set(decoder_inputs) <= SPEAKER_INPUTS or not _reaches(outputs, latent, producers):
        # Anything else would mean re-running part of the encoder for every window.
        _LOGGER.info("Decoder also reads %s: decoding whole sentences", decoder_inputs)
        return None
    extractor = Extractor(model)
    encoder = extractor.extract_model(voice_inputs, [latent])
    decoder = extractor.extract_model([latent, *decoder_inputs], outputs)
    return SplitModel(
        encoder=encoder.SerializeToString(),
        decoder=decoder.SerializeToString(),
        latent=latent,
        channels=channels,
        decoder_inputs=tuple(decoder_inputs),
    )


def _float_source(tensor: str, producers: dict[str, onnx.NodeProto]) -> str:
    """The float tensor behind a quantize/dequantize chain (itself if there is none)."""
    while tensor in producers and producers[tensor].op_type in _QDQ:
        tensor = producers[tensor].input[0]
    return tensor


def _input_channels(
    conv: onnx.NodeProto, graph: onnx.GraphProto, producers: dict[str, onnx.NodeProto]
) -> int | None:
    """The decoder's first Conv's input channels, from its weight's shape (C_out, C_in, k)."""
    if len(conv.input) < 2:
        return None
    weight = _float_source(conv.input[1], producers)
    dims = next((list(t.dims) for t in graph.initializer if t.name == weight), None)
    return int(dims[1]) if dims is not None and len(dims) == 3 else None


def _inputs_reached(
    outputs: list[str], stop: str, producers: dict[str, onnx.NodeProto], voice_inputs: set[str]
) -> list[str]:
    """The voice inputs the decoder half reads (walking back from the outputs to `stop`)."""
    reached: list[str] = []
    seen: set[str] = set()
    pending = list(outputs)
    while pending:
        tensor = pending.pop()
        if tensor in seen or tensor == stop:
            continue
        seen.add(tensor)
        if tensor in voice_inputs:
            reached.append(tensor)
        elif tensor in producers:
            pending.extend(t for t in producers[tensor].input if t)
    return sorted(reached)


def _reaches(outputs: list[str], target: str, producers: dict[str, onnx.NodeProto]) -> bool:
    seen: set[str] = set()
    pending = list(outputs)
    while pending:
        tensor = pending.pop()
        if tensor == target:
            return True
        if tensor in seen or tensor not in producers:
            continue
        seen.add(tensor)
        pending.extend(t for t in producers[tensor].input if t)
    return False
