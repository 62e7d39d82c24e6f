"""INT8 quantization recipes for Piper (VITS) voices: the registered schemes.

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
* ``polyphase`` (an option of any method) - before quantizing, the ConvTransposes whose
  names start with these prefixes are rewritten as ordinary Convs
  (``edge_tts.voice.polyphase``); the new Conv nodes keep the ConvTranspose's prefix, so
  ``include`` decides whether they are quantized.  onnxruntime has no int8 kernel for
  ConvTranspose, but runs these as QLinearConv.
* ``weight-only`` - Conv/ConvTranspose weights stored as per-output-channel symmetric
  int8 behind a ``DequantizeLinear``; activations stay FP32, so only weight rounding
  error is added.  onnxruntime keeps the ``DequantizeLinear`` nodes (it does not
  constant-fold them unless ``session.disable_quant_qdq`` is set), so the weights are
  dequantized on every run: a smaller file, but ~5 % slower than FP32.
* ``half`` (an option of any method) - after quantizing, the float region from the nodes
  named with the first prefix to those named with the second runs in fp16
  (``edge_tts.voicebuild.half``).  Only CPUs with FP16 arithmetic (ARMv8.2: the Pi 5's
  Cortex-A76, not the Pi 4's A72, no x86) run it in fp16; ``needs`` names that, and
  ``edge-ttsd tune`` does not try the build on a CPU without it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

import onnx

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
# The upsampling ConvTransposes into stage 0 (8x), stage 1 (64x) and stage 2 (256x).
DECODER_UPS = ("/dec/ups.0/", "/dec/ups.1/", "/dec/ups.2/")
# Stage 2 as a region: from its upsampling to conv_post, the resblocks 6-8 and their sum between.
DECODER_STAGE2 = (DECODER_UPS[2], "/dec/conv_post/")
# What a CPU must have for a scheme's build to be worth trying (edge_tts.voice.machine).
FP16_ARITHMETIC = "fp16_arithmetic"
CONV_OPS = ("Conv", "ConvTranspose")


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
    # Percentile calibration: the share of values inside the range, and whether the range is
    # cut on both sides separately (asymmetric) or at one bound of abs(x) (onnxruntime's default).
    percentile: float = 99.99
    symmetric_ranges: bool = True
    preprocess: bool = False  # onnxruntime quant_pre_process (ONNX shape inference + basic opt.)
    polyphase: tuple[str, ...] = ()  # ConvTransposes rewritten as Convs first (name prefixes)
    half: tuple[str, str] | None = None  # the region run in fp16: (first, last) name prefixes
    needs: tuple[str, ...] = ()  # CPU features (voice.machine.cpu_facts) it is for

    def selects(self, node: onnx.NodeProto) -> bool:
        name = node.name
        included = not self.include or name.startswith(self.include)
        return node.op_type in self.op_types and included and not name.startswith(self.exclude)


# The default (docs/quantization.md, "Calibration and 7-bit weights"): the first two
# upsamplings in int8 pass the gate once the ranges are cut on each side at 99.95 %
# (closer to FP32 than static-fast, a lower pause floor); 7-bit weights keep AVX2's
# int8 kernels from saturating, so every CPU computes the same audio.
_DEFAULT_RECIPE = Scheme(
    "static-fast-ups01",
    "static-fast plus ups.0-1 as int8 polyphase Convs; 7-bit weights, asymmetric 99.95 %",
    "static",
    ("Conv",),
    include=(ENCODER, FLOW, *DECODER_STAGE0, *DECODER_STAGE1_RESBLOCKS, DECODER_UPS[1]),
    reduce_range=True,
    calibration="percentile",
    percentile=99.95,
    symmetric_ranges=False,
    preprocess=True,
    polyphase=DECODER_UPS[:2],
)

# The default with stage 2 in fp16 (docs/quantization.md, "Half-precision stage 2"): ups.2
# as a polyphase Conv so that it has an fp16 kernel too. Elsewhere than on FP16 arithmetic
# onnxruntime runs stage 2 in float: only slower, never chosen there.
_FP16_STAGE2 = dataclasses.replace(
    _DEFAULT_RECIPE,
    name="static-fast-ups01-fp16",
    summary="static-fast-ups01 plus HiFi-GAN stage 2 in fp16, for CPUs with FP16 arithmetic",
    polyphase=DECODER_UPS,
    half=DECODER_STAGE2,
    needs=(FP16_ARITHMETIC,),
)
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
        # The default until static-fast-ups01: as intelligible as FP32 by ASR; its activation
        # noise in pauses (-76 dBFS) is taken below the LSB by edge_tts.audio.pause_gate. On
        # AVX2 without VNNI its int8 kernels saturate and it fails the gate (0.54-0.59).
        "static-fast",
        "static-enc-flow-dec0 plus decoder stage-1 resblocks, Percentile 99.99 calibration",
        "static",
        ("Conv",),
        include=(ENCODER, FLOW, *DECODER_STAGE0, *DECODER_STAGE1_RESBLOCKS),
        calibration="percentile",
        preprocess=True,
    ),
    Scheme(
        # Measured (docs/quantization.md, "ConvTranspose as int8 Conv"): a few % faster than
        # static-fast at the same distance and pause floor. Adding ups.1 or ups.2 fails the gate.
        "static-fast-ups0",
        "static-fast plus the first upsampling ConvTranspose as an int8 polyphase Conv",
        "static",
        ("Conv",),
        include=(ENCODER, FLOW, *DECODER_STAGE0, *DECODER_STAGE1_RESBLOCKS),
        calibration="percentile",
        preprocess=True,
        polyphase=DECODER_UPS[:1],
    ),
    _DEFAULT_RECIPE,
    _FP16_STAGE2,
    Scheme(
        "weight-only",
        "int8 Conv weights (per channel) in encoder, duration predictor and flow; FP32 math",
        "weight-only",
        CONV_OPS,
        include=(ENCODER, DURATION, FLOW),
    ),
)
SCHEMES: dict[str, Scheme] = {scheme.name: scheme for scheme in _SCHEME_LIST}
DEFAULT_SCHEME: str = "static-fast-ups01"
