"""INT8 quantization of Piper (VITS) voices for onnxruntime on CPU.

A *scheme* names one recipe: which operator types and which parts of the VITS graph
are quantized, and how.  The parts are told apart by node-name prefix:

* ``/enc_p/`` text encoder (transformer; 25 MB of Conv weights, ~14 % of the time)
* ``/dp/``    stochastic duration predictor (2 MB; decides the timing)
* ``/flow/``  normalizing flow (28 MB of Conv weights, ~17 % of the time)
* ``/dec/``   HiFi-GAN waveform generator (7 MB, ~57 % of the time, and by far the
  most sensitive to activation quantization, worst in its last, 32-channel stage)

Methods:

* ``dynamic`` - onnxruntime ``quantize_dynamic`` (ConvInteger / MatMulInteger,
  activations quantized per inference).
* ``static`` - onnxruntime ``quantize_static`` in QDQ format, calibrated on phoneme id
  sequences; onnxruntime fuses DQ -> Conv -> Q into QLinearConv when it loads the model.
* ``weight-only`` - Conv/ConvTranspose weights stored as per-output-channel symmetric
  int8 behind a ``DequantizeLinear``; activations stay FP32, so only weight rounding
  error is added.  onnxruntime keeps the ``DequantizeLinear`` nodes (it does not
  constant-fold them unless ``session.disable_quant_qdq`` is set), so the weights are
  dequantized on every run: a smaller file, but ~5 % slower than FP32.

Static schemes first run ``quant_pre_process`` (ONNX shape inference and onnxruntime's
portable basic graph optimizations, no symbolic shape inference); the result loads
faster and quantizes identically.

Calibration (static schemes): every id sequence is fed twice, once with the voice's
inference noise scales (0.667, 1, 0.8 by default, read from the voice config) and once
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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quant_pre_process,
    quantize_dynamic,
    quantize_static,
)

Method = Literal["dynamic", "static", "weight-only"]

ENCODER, DURATION, FLOW, DECODER = "/enc_p/", "/dp/", "/flow/", "/dec/"
# HiFi-GAN stage 0: the part of the decoder that runs at 8x the frame rate or less.
DECODER_STAGE0 = (
    "/dec/conv_pre/",
    "/dec/ups.0/",
    "/dec/resblocks.0/",
    "/dec/resblocks.1/",
    "/dec/resblocks.2/",
)
# Stage 1 (64x rate) without its upsampling ConvTranspose (no int8 kernel on CPU).
DECODER_STAGE1_RESBLOCKS = ("/dec/resblocks.3/", "/dec/resblocks.4/", "/dec/resblocks.5/")
CONV_OPS = ("Conv", "ConvTranspose")
DETERMINISTIC_SCALES = (0.0, 1.0, 0.0)
DEFAULT_INFERENCE_SCALES = (0.667, 1.0, 0.8)
CALIBRATION_SEED = 1234.0
CREATED_BY = "edge-tts-daemon"

_QUANT_TYPES = {"int8": QuantType.QInt8, "uint8": QuantType.QUInt8}
_CALIBRATION = {
    "minmax": CalibrationMethod.MinMax,
    "percentile": CalibrationMethod.Percentile,
    "entropy": CalibrationMethod.Entropy,
}


@dataclass(frozen=True)
class Scheme:
    """One quantization recipe.  Empty ``include`` means every node of ``op_types``."""

    name: str
    summary: str
    method: Method
    op_types: tuple[str, ...]
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_channel: bool = True
    reduce_range: bool = False
    weight_type: str = "int8"
    activation_type: str = "uint8"
    calibration: str = "minmax"
    preprocess: bool = False  # onnxruntime quant_pre_process (ONNX shape inference + basic opt.)

    def selects(self, node: onnx.NodeProto) -> bool:
        name = node.name
        included = not self.include or name.startswith(self.include)
        return node.op_type in self.op_types and included and not name.startswith(self.exclude)


_SCHEME_LIST = (
    Scheme(
        "naive-dynamic",
        "quantize_dynamic on every supported op, uint8 weights (baseline; poor decoder)",
        "dynamic",
        ("Conv", "MatMul", "Gather"),
        per_channel=False,
        weight_type="uint8",
    ),
    Scheme(
        "dynamic-no-dec",
        "quantize_dynamic, uint8 weights, HiFi-GAN decoder kept FP32",
        "dynamic",
        ("Conv", "MatMul", "Gather"),
        exclude=(DECODER,),
        per_channel=False,
        weight_type="uint8",
    ),
    Scheme(
        "static-all",
        "static QDQ (u8 activations, s8 per-channel weights) on every Conv: fastest, poor",
        "static",
        CONV_OPS,
        preprocess=True,
    ),
    Scheme(
        "static-enc-flow",
        "static QDQ Conv in text encoder + flow; duration predictor and decoder FP32",
        "static",
        ("Conv",),
        include=(ENCODER, FLOW),
        preprocess=True,
    ),
    Scheme(
        "static-enc-flow-dec0",
        "static QDQ Conv in text encoder, flow and decoder stage 0 (MinMax calibration)",
        "static",
        ("Conv",),
        include=(ENCODER, FLOW, *DECODER_STAGE0),
        preprocess=True,
    ),
    Scheme(
        # The default: as intelligible as FP32 by ASR, ~1.45x its speed; its activation
        # noise in pauses (-76 dBFS) is taken below the LSB by edge_tts.audio.pause_gate.
        "static-fast",
        "static-enc-flow-dec0 plus decoder stage-1 resblocks, Percentile 99.99 calibration",
        "static",
        ("Conv",),
        include=(ENCODER, FLOW, *DECODER_STAGE0, *DECODER_STAGE1_RESBLOCKS),
        calibration="percentile",
        preprocess=True,
    ),
    Scheme(
        "weight-only",
        "int8 Conv weights (per channel) in encoder, duration predictor and flow; FP32 math",
        "weight-only",
        CONV_OPS,
        include=(ENCODER, DURATION, FLOW),
    ),
)
SCHEMES: dict[str, Scheme] = {scheme.name: scheme for scheme in _SCHEME_LIST}
DEFAULT_SCHEME: str = "static-fast"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _inference_scales(src: Path) -> tuple[float, float, float]:
    config = src.with_name(src.name + ".json")
    if not config.is_file():
        return DEFAULT_INFERENCE_SCALES
    inference = json.loads(config.read_text(encoding="utf-8")).get("inference", {})
    return (
        float(inference.get("noise_scale", DEFAULT_INFERENCE_SCALES[0])),
        float(inference.get("length_scale", DEFAULT_INFERENCE_SCALES[1])),
        float(inference.get("noise_w", DEFAULT_INFERENCE_SCALES[2])),
    )


class PhonemeReader(CalibrationDataReader):  # type: ignore[misc]
    """Feeds ``input``, ``input_lengths`` and ``scales`` for each id sequence and scale set.

    Supports ``__len__``/``set_range`` so the calibrator can be run one sample at a time
    (histogram calibrators cannot stack sequences of different lengths).
    """

    def __init__(
        self, id_sequences: Sequence[Sequence[int]], scale_sets: Sequence[Sequence[float]]
    ) -> None:
        self._feeds: list[dict[str, np.ndarray]] = [
            {
                "input": np.asarray([ids], dtype=np.int64),
                "input_lengths": np.asarray([len(ids)], dtype=np.int64),
                "scales": np.asarray(scales, dtype=np.float32),
            }
            for ids in id_sequences
            for scales in scale_sets
        ]
        self._iter: Iterator[dict[str, np.ndarray]] = iter(self._feeds)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._iter, None)

    def rewind(self) -> None:
        self._iter = iter(self._feeds)

    def set_range(self, start_index: int, end_index: int) -> None:
        self._iter = iter(self._feeds[start_index:end_index])

    def __len__(self) -> int:
        return len(self._feeds)


def _set_random_seed(model: onnx.ModelProto, seed: float | None) -> None:
    """Give every RandomNormal(Like) a fixed seed (or remove it again with ``None``)."""
    for node in model.graph.node:
        if node.op_type not in ("RandomNormalLike", "RandomNormal"):
            continue
        kept = [attr for attr in node.attribute if attr.name != "seed"]
        del node.attribute[:]
        node.attribute.extend(kept)
        if seed is not None:
            node.attribute.append(onnx.helper.make_attribute("seed", seed))


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
        extra["CalibPercentile"] = 99.99
    quantize_static(
        seeded,
        out,
        reader,
        quant_format=QuantFormat.QDQ,
        op_types_to_quantize=list(scheme.op_types),
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
    done = _quantized_names(quantized)
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
    _set_random_seed(model, CALIBRATION_SEED)
    seeded, out = work / "seeded.onnx", work / "quantized.onnx"
    onnx.save_model(model, seeded)
    _run_static(scheme, seeded, out, nodes, reader)
    return out


def _build(scheme: Scheme, src: Path, work: Path, calibration_ids: Sequence[Sequence[int]]) -> Path:
    scales = [_inference_scales(src), DETERMINISTIC_SCALES]
    prepared = _prepare(src, work) if scheme.preprocess else src
    model = onnx.load(prepared)
    nodes = [node.name for node in model.graph.node if scheme.selects(node)]
    if scheme.method == "static":
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
    _set_random_seed(model, None)
    for tensor in model.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            raise RuntimeError(f"quantized model refers to external data ({tensor.name})")
    dst.parent.mkdir(parents=True, exist_ok=True)
    partial = dst.with_name(dst.name + ".partial")
    partial.write_bytes(model.SerializeToString(deterministic=True))
    partial.replace(dst)  # atomic: a reader never sees half a model
    return model


def manifest_path(dst: Path) -> Path:
    return dst.with_name(dst.name + ".manifest.json")


def recipe_fingerprint(recipe: Scheme, calibration_ids: Sequence[Sequence[int]]) -> str:
    """Changes whenever the scheme's definition or the calibration data change, so a stale
    build is noticed even when the scheme keeps its name."""
    ids = [list(seq) for seq in calibration_ids] if recipe.method == "static" else []
    blob = json.dumps([dataclasses.asdict(recipe), ids], sort_keys=True).encode()
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
        "onnxruntime_version": ort.__version__,
        "onnx_version": onnx.__version__,
        "created_by": CREATED_BY,
    }
    manifest_path(dst).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    config = src.with_name(src.name + ".json")
    if config.is_file():
        shutil.copyfile(config, dst.with_name(dst.name + ".json"))
    return manifest
