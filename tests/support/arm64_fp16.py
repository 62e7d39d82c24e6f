"""What onnxruntime makes of a build on an emulated arm64 CPU: copied into the root and run
there by its python (onnxruntime and numpy only: nothing else need be installed).

    python arm64_fp16.py MODEL IDS_JSON OUT_DIR NAME

The host reads the results with `stage_casts` and `stage_kernels` (which need onnx and
edge_tts: imported inside them, as the root has neither).

Loads MODEL with the daemon's session settings (2 intra-op threads, ORT_ENABLE_ALL),
writing the graph as onnxruntime optimized it for this CPU (OUT_DIR/NAME.opt.onnx) and
profiling the runs; synthesizes each id sequence of IDS_JSON deterministically (noise
scales 0) into OUT_DIR/NAME.f32 (float32 little-endian, concatenated); prints one JSON
line: the CPU's FP16-arithmetic and dot-product bits as the aux vector gives them (where
onnxruntime reads them), the seconds, each sequence's sample count, and per profiled node
its op, the element types of its inputs and outputs as run, and its provider.
"""

from __future__ import annotations

import json
import platform
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime

AT_HWCAP = 16
HWCAP_ASIMDHP = 1 << 10  # FP16 vector arithmetic: Cortex-A76 yes, A72 no
HWCAP_ASIMDDP = 1 << 20


def hwcap() -> dict[str, bool]:
    words = np.frombuffer(Path("/proc/self/auxv").read_bytes(), dtype=np.uint64)
    aux = dict(zip(words[0::2].tolist(), words[1::2].tolist(), strict=True))
    bits = aux.get(AT_HWCAP, 0)
    return {"asimdhp": bool(bits & HWCAP_ASIMDHP), "asimddp": bool(bits & HWCAP_ASIMDDP)}


def session(model: Path, out: Path, name: str) -> onnxruntime.InferenceSession:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 2
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.optimized_model_filepath = str(out / f"{name}.opt.onnx")
    options.enable_profiling = True
    options.profile_file_prefix = str(out / f"{name}.profile")
    return onnxruntime.InferenceSession(
        str(model), sess_options=options, providers=["CPUExecutionProvider"]
    )


def _types(shapes: list[dict[str, object]]) -> list[str]:
    return [next(iter(entry)) for entry in shapes]


def kernels(profile: Path) -> dict[str, dict[str, object]]:
    """Per node (as run: the optimized graph's names), op, element types and provider."""
    found: dict[str, dict[str, object]] = {}
    for event in json.loads(profile.read_text()):
        args = event.get("args", {})
        if event.get("cat") != "Node" or "op_name" not in args:
            continue
        node = str(event["name"]).removesuffix("_kernel_time")
        found[node] = {
            "op": args["op_name"],
            "inputs": _types(args.get("input_type_shape", [])),
            "outputs": _types(args.get("output_type_shape", [])),
            "provider": args.get("provider"),
        }
    return found


STAGE2 = ("/dec/ups.2/", "/dec/conv_post/")  # edge_tts.voicebuild.schemes.DECODER_STAGE2
STAGE2_NODES = (*STAGE2, "/dec/resblocks.6/", "/dec/resblocks.7/", "/dec/resblocks.8/",
                "/dec/Add_4", "/dec/Add_5", "/dec/Div_2", "/dec/LeakyRelu_3")  # fmt: skip


def stage_casts(optimized: Path) -> list[str]:
    """(Host side) the Casts onnxruntime left inside stage 2 of the graph it optimized."""
    import onnx

    from edge_tts.voicebuild.half import region

    graph = onnx.load(optimized).graph
    return [graph.node[i].name for i in region(graph, *STAGE2) if graph.node[i].op_type == "Cast"]


def stage_kernels(report: dict[str, object]) -> dict[str, tuple[str, str]]:
    """(Host side) stage 2's profiled nodes: op and the element type of the first input."""
    found = report["kernels"]
    assert isinstance(found, dict)
    return {
        name: (str(k["op"]), str(k["inputs"][0]))
        for name, k in found.items()
        if name.startswith(STAGE2_NODES) and k["inputs"]
    }


def main(argv: list[str]) -> int:
    model, ids_file, out, name = Path(argv[0]), Path(argv[1]), Path(argv[2]), argv[3]
    ids: list[list[int]] = json.loads(ids_file.read_text())
    start = time.monotonic()
    runner = session(model, out, name)
    audio = []
    for sequence in ids:
        feeds = {
            "input": np.asarray([sequence], dtype=np.int64),
            "input_lengths": np.asarray([len(sequence)], dtype=np.int64),
            "scales": np.asarray([0.0, 1.0, 0.0], dtype=np.float32),
        }
        audio.append(np.asarray(runner.run(None, feeds)[0], dtype=np.float32).reshape(-1))
    profile = Path(runner.end_profiling())
    shutil.move(profile, out / f"{name}.profile.json")
    np.concatenate(audio).astype("<f4").tofile(out / f"{name}.f32")
    report = {
        "machine": platform.machine(),
        "cpu": hwcap(),
        "onnxruntime": onnxruntime.__version__,
        "seconds": round(time.monotonic() - start, 1),
        "samples": [piece.size for piece in audio],
        "kernels": kernels(out / f"{name}.profile.json"),
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
