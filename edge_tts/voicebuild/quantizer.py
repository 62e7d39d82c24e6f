"""INT8 quantization of Piper (VITS) voices for onnxruntime on CPU: build one scheme's
model (edge_tts.voicebuild.schemes), check it and write it with its manifest.

Static schemes first run ``quant_pre_process`` (ONNX shape inference and onnxruntime's
portable basic graph optimizations, no symbolic shape inference); the result loads
faster and quantizes identically.

Calibration (static schemes): every id sequence is fed twice, once with the voice's
inference noise scales (from the voice config, as the daemon reads it) and once
deterministically (0, 1, 0), so the ranges cover both the sampled and the
noise-free latent.  The model's ``RandomNormalLike`` gets a fixed seed for calibration
only (the seed is removed again from the written model), so the output is reproducible:
the same source, scheme and ids give byte-identical files on the same machine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import shutil
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from onnxruntime.quantization import (
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quant_pre_process,
    quantize_dynamic,
    quantize_static,
)

from ..voice import files
from ..voice.build_manifest import write_manifest
from ..voice.polyphase import (
    INTERLEAVE_OPS,
    interleave_nodes,
    original_name,
    rewrite_conv_transposes,
)
from .calibration import (
    CALIBRATION_SEED,
    PhonemeReader,
    inference_scales,
    set_random_seed,
)
from .half import region, to_half
from .quality import DETERMINISTIC_SCALES
from .schemes import DEFAULT_SCHEME, SCHEMES, Scheme

__all__ = ["DEFAULT_SCHEME", "SCHEMES", "Scheme", "quantize", "recipe_fingerprint"]

CREATED_BY = "edge-tts-daemon"

_QUANT_TYPES = {"int8": QuantType.QInt8, "uint8": QuantType.QUInt8}
_CALIBRATION = {
    "minmax": CalibrationMethod.MinMax,
    "percentile": CalibrationMethod.Percentile,
    "entropy": CalibrationMethod.Entropy,
}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run_dynamic(scheme: Scheme, src: Path, out: Path, nodes: list[str]) -> None:
    quantize_dynamic(
        src,
        out,
        op_types_to_quantize=list(scheme.op_types),
        per_channel=scheme.per_channel,
        reduce_range=scheme.reduce_range,
        weight_type=_QUANT_TYPES[scheme.weight_type],
        nodes_to_quantize=nodes,
    )


def _run_static(
    scheme: Scheme, seeded: Path, out: Path, nodes: list[str], reader: PhonemeReader
) -> None:
    extra: dict[str, Any] = {"CalibStridedMinMax": 1}
    if scheme.calibration == "percentile":
        extra["CalibPercentile"] = scheme.percentile
        extra["CalibTensorRangeSymmetric"] = scheme.symmetric_ranges
    quantize_static(
        seeded,
        out,
        reader,
        quant_format=QuantFormat.QDQ,
        op_types_to_quantize=list(scheme.op_types + (INTERLEAVE_OPS if scheme.polyphase else ())),
        per_channel=scheme.per_channel,
        reduce_range=scheme.reduce_range,
        activation_type=_QUANT_TYPES[scheme.activation_type],
        weight_type=_QUANT_TYPES[scheme.weight_type],
        nodes_to_quantize=nodes,
        calibrate_method=_CALIBRATION[scheme.calibration],
        extra_options=extra,
    )


def _int8_per_channel(weight: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    moved = np.moveaxis(weight.astype(np.float32), axis, 0)
    peak = np.abs(moved.reshape(moved.shape[0], -1)).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    shape = [1] * weight.ndim
    shape[axis] = -1
    quantized = np.clip(np.rint(weight / scale.reshape(shape)), -127, 127).astype(np.int8)
    return quantized, scale


def _weight_only(model: onnx.ModelProto, nodes: set[str]) -> None:
    """Store the weights of ``nodes`` as int8 + DequantizeLinear (FP32 arithmetic)."""
    initializers = {init.name: init for init in model.graph.initializer}
    new_nodes: list[onnx.NodeProto] = []
    for node in model.graph.node:
        weight = initializers.get(node.input[1]) if len(node.input) > 1 else None
        if node.name in nodes and weight is not None:
            axis = 1 if node.op_type == "ConvTranspose" else 0
            values, scale = _int8_per_channel(numpy_helper.to_array(weight), axis)
            base = weight.name
            model.graph.initializer.remove(weight)
            del initializers[base]
            model.graph.initializer.extend(
                [
                    numpy_helper.from_array(values, base + "_quantized"),
                    numpy_helper.from_array(scale, base + "_scale"),
                    numpy_helper.from_array(np.zeros_like(scale, np.int8), base + "_zero_point"),
                ]
            )
            new_nodes.append(
                onnx.helper.make_node(
                    "DequantizeLinear",
                    [base + "_quantized", base + "_scale", base + "_zero_point"],
                    [base],
                    name=base + "_DequantizeLinear",
                    axis=axis,
                )
            )
        new_nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(new_nodes)


def _quantized_names(model: onnx.ModelProto) -> set[str]:
    """Nodes that run in int8 or read int8 weights (names as in the source model)."""
    constants = {init.name for init in model.graph.initializer}
    dequantized_weights = {
        node.output[0]
        for node in model.graph.node
        if node.op_type == "DequantizeLinear" and node.input[0] in constants
    }
    names: set[str] = set()
    for node in model.graph.node:
        if node.op_type in ("ConvInteger", "MatMulInteger", "QLinearConv", "QLinearMatMul"):
            names.add(node.name.removesuffix("_quant"))
        elif len(node.input) > 1 and node.input[1] in dequantized_weights:
            names.add(node.name)
        elif node.op_type == "Gather" and node.input[0].endswith("_quantized"):
            names.add(node.name.removesuffix("_output_quantized"))
    return names


def node_report(source: onnx.ModelProto, quantized: onnx.ModelProto) -> dict[str, Any]:
    """Per op type: how many nodes are quantized and how many stayed FP32, plus the names."""
    done = {original_name(name) for name in _quantized_names(quantized)}
    counts: dict[str, dict[str, int]] = {}
    for op_type, count in sorted(Counter(node.op_type for node in source.graph.node).items()):
        hits = sum(1 for node in source.graph.node if node.op_type == op_type and node.name in done)
        if op_type in ("Conv", "ConvTranspose", "MatMul", "Gather") or hits:
            counts[op_type] = {"quantized": hits, "fp32": count - hits}
    names = sorted(node.name for node in source.graph.node if node.name in done)
    return {"counts": counts, "quantized_nodes": names}


def _prepare(src: Path, work: Path) -> Path:
    """``quant_pre_process`` without symbolic shape inference (needs sympy, adds nothing)."""
    prepared = work / "prepared.onnx"
    quant_pre_process(src, prepared, skip_symbolic_shape=True)
    return prepared


def _build_static(
    scheme: Scheme, model: onnx.ModelProto, work: Path, nodes: list[str], reader: PhonemeReader
) -> Path:
    if not len(reader):
        raise ValueError(f"scheme {scheme.name!r} needs calibration id sequences")
    set_random_seed(model, CALIBRATION_SEED)
    seeded, out = work / "seeded.onnx", work / "quantized.onnx"
    onnx.save_model(model, seeded)
    _run_static(scheme, seeded, out, nodes, reader)
    return out


def _rewrite(scheme: Scheme, src: Path, work: Path) -> Path:
    """The source with the scheme's ConvTransposes as polyphase Convs (before pre-processing,
    so that shape inference covers the new nodes)."""
    if not scheme.polyphase:
        return src
    model = onnx.load(src)
    rewrite_conv_transposes(model, scheme.polyphase)
    rewritten = work / "polyphase.onnx"
    onnx.save_model(model, rewritten)
    return rewritten


def _build(scheme: Scheme, src: Path, work: Path, calibration_ids: Sequence[Sequence[int]]) -> Path:
    built = _build_method(scheme, src, work, calibration_ids)
    if scheme.half is None:
        return built
    model = onnx.load(built)
    to_half(model, *scheme.half)
    halved = work / "half.onnx"
    onnx.save_model(model, halved)
    return halved


def _build_method(
    scheme: Scheme, src: Path, work: Path, calibration_ids: Sequence[Sequence[int]]
) -> Path:
    source = _rewrite(scheme, src, work)
    prepared = _prepare(source, work) if scheme.preprocess else source
    model = onnx.load(prepared)
    nodes = [node.name for node in model.graph.node if scheme.selects(node)]
    if scheme.method == "static":
        nodes += interleave_nodes(model, nodes)
        scales = [inference_scales(files.from_model_path(src)), DETERMINISTIC_SCALES]
        return _build_static(scheme, model, work, nodes, PhonemeReader(calibration_ids, scales))
    out = work / "quantized.onnx"
    if scheme.method == "dynamic":
        _run_dynamic(scheme, prepared, out, nodes)
    else:
        _weight_only(model, set(nodes))
        onnx.save_model(model, out)
    return out


def _finalize(path: Path, dst: Path) -> onnx.ModelProto:
    """Load, drop the calibration seed, check for external data and write ``dst``."""
    model = onnx.load(path, load_external_data=False)
    set_random_seed(model, None)
    for tensor in model.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            raise RuntimeError(f"quantized model refers to external data ({tensor.name})")
    dst.parent.mkdir(parents=True, exist_ok=True)
    partial = dst.with_name(dst.name + ".partial")
    partial.write_bytes(model.SerializeToString(deterministic=True))
    partial.replace(dst)  # atomic: a reader never sees half a model
    return model


# Scheme fields added after builds were installed, with the value every earlier scheme had.
_LATER_FIELDS: dict[str, object] = {
    "polyphase": (),
    "percentile": 99.99,
    "symmetric_ranges": True,
    "half": None,
    "needs": (),
}


def recipe_fingerprint(recipe: Scheme, calibration_ids: Sequence[Sequence[int]]) -> str:
    """Changes whenever the scheme's definition or the calibration data change, so a stale
    build is noticed even when the scheme keeps its name."""
    ids = [list(seq) for seq in calibration_ids] if recipe.method == "static" else []
    fields = dataclasses.asdict(recipe)
    for name, default in _LATER_FIELDS.items():  # schemes that keep them keep their fingerprints
        if fields[name] == default:
            del fields[name]
    blob = json.dumps([fields, ids], sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()


def quantize(
    src: Path, dst: Path, scheme: str, calibration_ids: Sequence[Sequence[int]]
) -> dict[str, object]:
    """Quantize voice ``src`` to ``dst`` with ``scheme``; write and return the manifest.

    Also copies the Piper voice config ``<src>.json`` to ``<dst>.json`` if it exists.
    ``calibration_ids`` (phoneme id sequences) are used by static schemes only.
    """
    recipe = SCHEMES[scheme]
    src, dst = Path(src), Path(dst)
    # onnxruntime's histogram calibrators print progress to stdout: keep it quiet.
    with (
        tempfile.TemporaryDirectory(prefix="edge-tts-quant-") as tmp,
        contextlib.redirect_stdout(io.StringIO()),
    ):
        built = _build(recipe, src, Path(tmp), calibration_ids)
        model = _finalize(built, dst)
    manifest: dict[str, object] = {
        "scheme": recipe.name,
        "summary": recipe.summary,
        "recipe": recipe_fingerprint(recipe, calibration_ids),
        "sha256": _sha256(dst),
        "source_sha256": _sha256(src),
        "size_bytes": dst.stat().st_size,
        "nodes": node_report(onnx.load(src), model),
        "calibration_sequences": len(calibration_ids) if recipe.method == "static" else 0,
        "fp16_nodes": len(region(model.graph, *recipe.half)) if recipe.half else 0,
        "onnxruntime_version": ort.__version__,
        "onnx_version": onnx.__version__,
        "created_by": CREATED_BY,
    }
    write_manifest(dst, manifest)
    config = src.with_name(src.name + ".json")
    if config.is_file():
        shutil.copyfile(config, dst.with_name(dst.name + ".json"))
    return manifest
