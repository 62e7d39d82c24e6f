"""How far a vocoder's output depends on its input: its receptive field in mel frames,
which `WindowedVocoder` adds as context on both sides of a window.

The daemon measures it at load in the model checker's child (`check_and_probe`, run as
`python -m edge_tts.voice.vocoder_probe`), as it checks the verified bytes: the probe
builds the graph's float twin with onnx and a session of its own, which the daemon
would otherwise keep (onnx is 12 MB of imports).
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np

from .integrity import ModelIntegrityError, parse_self_contained
from .model import new_session
from .model_check import EXIT_REFUSED, MAX_HEADER_BYTES, run_child
from .vocoder import WindowedVocoder

if TYPE_CHECKING:
    from .voice_dir import TwoStageConfig

_PROBE_FRAMES = 240


@dataclass(frozen=True)
class VocoderShape:
    """What probing a vocoder needs to know of its voice (voice.json)."""

    mel_input: str
    hop_length: int  # audio samples per mel frame
    mel_channels: int
    sample_rate: int

    @classmethod
    def of(cls, config: TwoStageConfig) -> VocoderShape:
        mel = config.vocoder.inputs["mel"]
        return cls(mel, config.hop_length, config.mel_channels, config.sample_rate)


def probe_context(model: bytes, config: TwoStageConfig, threads: int) -> int | None:
    """`probe_reach` for a voice's vocoder, in this process (benchmarks; the daemon
    probes in the model checker's child: model_check.check_and_probe)."""
    return probe_reach(model, VocoderShape.of(config), threads)


def probe_reach(model: bytes, shape: VocoderShape, threads: int) -> int | None:
    """The vocoder's receptive field in frames, or None if it is (nearly) the whole input.

    Measured on the model's float twin (`float_twin`): nudge the middle frame of a seeded
    random mel and find the farthest sample that moves at all. An output sample farther
    than that from a window's edge cannot depend on what lies beyond it, so windows with
    that much context join exactly as one whole run, on any CPU. The shipped graph cannot
    tell this: its output quantizer hides changes smaller than half a step, and turns
    float rounding (which differs between window lengths and CPUs) into whole steps."""
    session = new_session(float_twin(model) or model, threads, nchwc=False)
    probe = WindowedVocoder(session, shape.mel_input, shape.hop_length, shape.sample_rate, None)
    rng = np.random.default_rng(0)
    mel = rng.standard_normal((1, _PROBE_FRAMES, shape.mel_channels)).astype(np.float32)
    base = probe.run(mel)
    noise = float(np.max(np.abs(probe.run(mel) - base)))  # 0 where kernels are deterministic
    middle = _PROBE_FRAMES // 2
    mel[0, middle, :] += rng.standard_normal(shape.mel_channels).astype(np.float32)
    moved = np.flatnonzero(np.abs(probe.run(mel) - base) > noise)
    if base.size != _PROBE_FRAMES * shape.hop_length or not moved.size:
        return None
    hop = shape.hop_length
    reach = max(middle - moved[0] // hop, moved[-1] // hop - middle)
    return int(reach) if reach < middle // 2 else None


def float_twin(model: bytes) -> bytes | None:
    """`model` with its activation quantizers (QuantizeLinear, and DequantizeLinear of a
    computed tensor) made identities, or None if it has none. Weights stay dequantized."""
    import onnx

    graph = onnx.load_from_string(model)
    weights = {tensor.name for tensor in graph.graph.initializer}
    changed = False
    for node in graph.graph.node:
        if node.op_type == "QuantizeLinear" or (
            node.op_type == "DequantizeLinear" and node.input[0] not in weights
        ):
            node.op_type = "Identity"
            del node.input[1:]
            del node.attribute[:]
            changed = True
    if not changed:
        return None
    del graph.graph.value_info[:]  # the int8 types recorded between the quantizers
    return bytes(graph.SerializeToString())


def check_and_probe(path: Path, data: bytes, shape: VocoderShape, threads: int) -> int | None:
    """Check a vocoder's verified bytes (self-contained ONNX) and measure its receptive
    field (`probe_reach`), in a child process."""
    spec = json.dumps({**asdict(shape), "threads": threads})
    answer = run_child(path, data, spec, module=__spec__.name, read=_read_reach)
    assert answer is None or isinstance(answer, int)
    return answer


def _read_reach(stream: IO[bytes]) -> int | None:
    """The child's answer: one JSON line, `{"reach": frames or null}`."""
    reach = json.loads(stream.readline(MAX_HEADER_BYTES))["reach"]
    if stream.read(1):
        raise ModelIntegrityError("the model checker's output is longer than it says")
    return None if reach is None else int(reach)


def _main(argv: list[str]) -> int:
    """Child side of `check_and_probe`: the vocoder's bytes on stdin, its path and the
    shape as arguments, the reach on stdout."""
    path, spec = Path(argv[0]), json.loads(argv[1])
    data = sys.stdin.buffer.read()
    try:
        parse_self_contained(path, data)
    except ModelIntegrityError as err:
        print(err, file=sys.stderr)
        return EXIT_REFUSED
    threads = int(spec.pop("threads"))
    reach = probe_reach(data, VocoderShape(**spec), threads)
    sys.stdout.buffer.write(json.dumps({"reach": reach}).encode() + b"\n")
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    sys.exit(_main(sys.argv[1:]))
