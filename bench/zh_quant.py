"""INT8 options for the Mandarin two-stage voice (FastSpeech2 + Multi-band MelGAN), measured.

    python -m bench.zh_quant [--voice DIR] [--work /tmp/zh_quant] [--rounds 5]
        [--options a-ref,b-dyn-u8,...] [--rss] [--out results.json] [--json]

The rule is "INT8 where it helps, measured". The options, built into --work from the
voice as imported (nothing in the voice directory changes):

    a-ref        the voice as imported: acoustic.onnx (int8 weights behind
                 DequantizeLinear, FP32 compute; tflite conversion) + vocoder.onnx (FP32)
    b-dyn-*      the vocoder quantized by onnxruntime's quantize_dynamic (Conv ->
                 ConvInteger; ConvTranspose has no integer kernel and stays FP32):
                 u8 / s8 weights, per tensor or per channel (-pc)
    c-fold       the acoustic model with every constant DequantizeLinear folded into an
                 FP32 initializer (the same numbers, no dequantize per run)
    c-noqdq      the acoustic model as imported, loaded with the session option
                 `session.disable_quant_qdq=1` (onnxruntime folds the DequantizeLinear
                 at load): a runtime switch instead of a new file
    d-static*    static QDQ INT8 of the vocoder's Convs (u8 activations, s8 per-channel
                 weights, MinMax), calibrated on mels the acoustic model makes from
                 CALIBRATION sentences (disjoint from the evaluation set); the output
                 stage (last Conv, the PQMF synthesis) and the ConvTransposes stay FP32.
                 d-static: the first Conv and all three residual stacks; d-static-01:
                 the first Conv and the stacks at 1x and 6x the frame rate only
    e-dyn        the acoustic model's Convs at the mel frame rate (decoder FFN, postnet:
                 most of its time) quantized dynamically (ConvInteger, u8 weights) from
                 the folded FP32 weights; predictors and encoder as imported
    e-static     the same Convs static QDQ INT8 (QLinearConv), calibrated on the
                 CALIBRATION sentences' ids
    f-pp         the vocoder's three upsampling ConvTransposes (kernel k x 1, stride s x 1,
                 2-D of width 1) made 1-D between a Squeeze and an Unsqueeze and rewritten
                 as polyphase Convs (edge_tts.voice.polyphase, the English voice's
                 rewrite): FP32, the same numbers
    f-pp-int8    f-pp with those three Convs (and their interleave) static QDQ INT8,
                 calibrated as d-static (MinMax); f-pp-int8-p: Percentile 99.95 per side

Quality, on the EVALUATION sentences (one chunk each, deterministic: FastSpeech2 has no
sampling): each option's audio against a-ref's with edge_tts/voicebuild/quality.py's
`compare` (DTW log-mel spectral distance in nats, 24 kHz, and the duration ratio), the
SNR against a-ref's waveform where the lengths match, and for the acoustic options how
many symbol durations changed; the noise floor (frame RMS percentiles, dBFS, 512-sample
frames: the quietest are pauses, where quantization hiss shows). Reference pairs to read
the distance by: a-ref against itself at 0.9x gain and at speed 1.01 (tempo). Also per
option: the vocoder context the daemon's WindowedVocoder finds at load (`probe_context`);
none means windows do not reproduce whole-chunk output (e.g. dynamic quantization, whose
activation scales depend on the window), so the daemon would vocode whole chunks and the
first audio would wait for the whole chunk.

Speed, as the daemon runs the voice: every option's sessions in this process after
`share_runtime()` (the daemon's session options), the acoustic model on the chunk, then
the vocoder in windows (WindowedVocoder.stream, first window FIRST_WINDOW_FRAMES). All
options speak each sentence in turn, the order rotating every sentence; per round, the
ratio a-ref time / option time (>1: faster), median over rounds (min-max); the acoustic
and vocoder parts are timed apart too. `--rss`: RSS of a fresh process per option that
loads the two sessions and speaks three sentences (MB = 10^6 bytes).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench import workers
from bench.procmem import proc_status
from bench.report_io import (
    MB,
    add_output_options,
    fmt,
    log,
    machine_info,
    machine_line,
    run_and_emit,
    table,
)
from tests.support.rootfs import ci_cache

# The Mandarin voice as imported, where the tests' `mandarin_voice` fixture builds it.
DEFAULT_VOICE_DIR = ci_cache() / "voices" / "zh-baker"

EVALUATION = (
    "前方路口请左转。",
    "车门即将关闭，请注意安全。",
    "请系好安全带，我们即将出发。",
    "前方500米有测速摄像头，限速60公里每小时。",
    "您已超速，请减速慢行。",
    "下一站是人民广场，请从左侧车门下车。",
    "各位乘客请注意，本次列车将于15点30分到达终点站。",
    "车辆电量剩余百分之二十，请及时充电。",
    "客厅的灯已经关闭，大门已上锁。",
    "洗衣机已完成洗涤，请及时取出衣物。",
    "今天室外温度18度，有小雨，出门请带伞。",
    "有人在门口按门铃。",
    "厨房检测到烟雾，请立即检查。",
    "晚安，所有门窗均已关闭，安防系统已开启。",
    "您的快递已送达，放在门口的快递柜里。",
)
CALIBRATION = (
    "欢迎回家，空调已为您打开。",
    "前方道路拥堵，预计通行时间25分钟。",
    "请在下一个出口驶出高速公路。",
    "卧室窗户未关闭，是否现在关闭？",
    "早上好，现在是7点整，今天是星期一。",
    "冰箱门没有关好，请检查。",
    "充电已完成，当前电量百分之百。",
    "车内温度过高，已自动开启通风。",
    "本次航班延误约40分钟，请耐心等待。",
    "扫地机器人被卡住了，请帮助它脱困。",
    "左后轮胎压偏低，请尽快检查。",
    "会议将在10分钟后开始，请做好准备。",
)

VOCODER_OUTPUT_STAGE = ("sequential_4/conv1d_25/", "conv1d;PartitionedCall/")
VOCODER_UPSAMPLING = "sequential_4/conv_transpose_"
STACKS_01 = ("sequential_4/conv1d/", "residual_stack_._0.", "residual_stack_._1.")

FloatArray = npt.NDArray[np.float32]


# --- the options ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    name: str
    what: str
    acoustic: str = "ref"  # "ref", "noqdq" (the imported file) or the name of a built one
    vocoder: str = "ref"  # "ref" or the name of a built vocoder

    @property
    def acoustic_file(self) -> str:
        if self.acoustic in ("ref", "noqdq"):
            return "acoustic.onnx"
        return f"acoustic.{self.acoustic}.onnx"

    @property
    def vocoder_file(self) -> str:
        return "vocoder.onnx" if self.vocoder == "ref" else f"vocoder.{self.vocoder}.onnx"


OPTIONS = (
    Option("a-ref", "as imported"),
    Option("b-dyn-u8", "vocoder dynamic INT8, u8 weights, per tensor", vocoder="dyn-u8"),
    Option("b-dyn-s8", "vocoder dynamic INT8, s8 weights, per tensor", vocoder="dyn-s8"),
    Option("b-dyn-u8-pc", "vocoder dynamic INT8, u8 weights, per channel", vocoder="dyn-u8-pc"),
    Option("b-dyn-s8-pc", "vocoder dynamic INT8, s8 weights, per channel", vocoder="dyn-s8-pc"),
    Option("c-fold", "acoustic DequantizeLinear folded to FP32", acoustic="fold"),
    Option("c-noqdq", "acoustic as imported, session.disable_quant_qdq=1", acoustic="noqdq"),
    Option("d-static", "vocoder static QDQ, first Conv + all residual stacks", vocoder="static"),
    Option("d-static-01", "vocoder static QDQ, first Conv + stacks 0-1", vocoder="static-01"),
    Option("e-dyn", "acoustic decoder FFN + postnet Convs dynamic INT8 (u8)", acoustic="dyn"),
    Option("f-pp", "vocoder upsampling ConvTransposes as polyphase Convs, FP32", vocoder="pp"),
    Option("f-pp-int8", "f-pp, the polyphase Convs static QDQ INT8", vocoder="pp-int8"),
    Option("f-pp-int8-p", "f-pp-int8, Percentile 99.95 % per side", vocoder="pp-int8-p"),
    Option("e-static", "acoustic decoder FFN + postnet Convs static QDQ INT8", acoustic="static"),
)
# The acoustic model's Convs at the mel frame rate, where its time goes (decoder FFN and
# postnet); the variance predictors (durations, f0, energy) and the encoder stay as they are.
ACOUSTIC_HEAVY = ("decoder/", "postnet/")
BY_NAME = {o.name: o for o in OPTIONS}


def fold_dequantize(src: Path, dst: Path) -> dict[str, int]:
    """Every DequantizeLinear whose inputs are all initializers becomes an FP32
    initializer with the same values; the int8 originals go if nothing else uses them."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    kept, folded = [], []
    for node in graph.node:
        if node.op_type != "DequantizeLinear" or not all(i in inits for i in node.input if i):
            kept.append(node)
            continue
        q = numpy_helper.to_array(inits[node.input[0]]).astype(np.float32)
        scale = numpy_helper.to_array(inits[node.input[1]]).astype(np.float32)
        zero = (
            numpy_helper.to_array(inits[node.input[2]]).astype(np.float32)
            if len(node.input) > 2 and node.input[2]
            else np.zeros_like(scale)
        )
        if scale.ndim == 1 and scale.size > 1:  # per axis
            axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
            shape = [1] * q.ndim
            shape[axis] = scale.size
            scale, zero = scale.reshape(shape), zero.reshape(shape)
        folded.append(
            numpy_helper.from_array(((q - zero) * scale).astype(np.float32), node.output[0])
        )
    del graph.node[:]
    graph.node.extend(kept)
    used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    remaining = [i for i in graph.initializer if i.name in used] + folded
    del graph.initializer[:]
    graph.initializer.extend(remaining)
    onnx.save(model, str(dst))
    return {
        "folded": len(folded),
        "dequantize_left": sum(n.op_type == "DequantizeLinear" for n in kept),
    }


def renamed_tensors(src: Path, dst: Path) -> None:
    """The model with every tensor that is not a graph input or output renamed n0_, n1_, ...
    (node names kept): tf2onnx's names ("conv1d" the bias, "conv1d2" the Conv's output)
    collide with the names onnxruntime's static quantizer makes up for quantized biases,
    and the written model then does not load."""
    import onnx

    model = onnx.load(str(src))
    graph = model.graph
    keep = {i.name for i in graph.input} | {o.name for o in graph.output}
    names: dict[str, str] = {}

    def new(name: str) -> str:
        if not name or name in keep:
            return name
        return names.setdefault(name, f"n{len(names)}_")

    for init in graph.initializer:
        init.name = new(init.name)
    for node in graph.node:
        node.input[:] = [new(i) for i in node.input]
        node.output[:] = [new(o) for o in node.output]
    del graph.value_info[:]
    onnx.save(model, str(dst))


def squeezed_conv_transposes(model: Any, prefix: str) -> int:
    """Each 2-D ConvTranspose of width 1 (kernel k x 1, stride s x 1) whose name starts with
    `prefix` as a 1-D one between a Squeeze and an Unsqueeze of the width axis, in place,
    so that edge_tts.voice.polyphase can rewrite it. Returns how many."""
    from onnx import helper, numpy_helper

    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    axes = numpy_helper.from_array(np.array([3], np.int64), "width_axis")
    graph.initializer.append(axes)
    done = 0
    new_nodes = []
    for node in graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        weight = inits.get(node.input[1]) if len(node.input) > 1 else None
        plain = attrs.get("kernel_shape", [0, 0])[1] == 1 and attrs.get("strides", [1, 1])[1] == 1
        if node.op_type != "ConvTranspose" or not node.name.startswith(prefix) or not plain:
            new_nodes.append(node)
            continue
        assert weight is not None and not any(attrs.get("pads", [0])), node.name
        w = numpy_helper.to_array(weight)[..., 0]
        weight.CopyFrom(numpy_helper.from_array(w, weight.name))
        narrow, wide = node.input[0] + "/1d", node.output[0] + "/1d"
        new_nodes.append(helper.make_node("Squeeze", [node.input[0], "width_axis"], [narrow]))
        node.input[0] = narrow
        out = node.output[0]
        node.output[0] = wide
        kept = [a for a in node.attribute if a.name not in ("kernel_shape", "strides")]
        del node.attribute[:]
        node.attribute.extend(kept)
        node.attribute.extend(
            [
                helper.make_attribute("kernel_shape", [attrs["kernel_shape"][0]]),
                helper.make_attribute("strides", [attrs["strides"][0]]),
            ]
        )
        new_nodes.append(node)
        new_nodes.append(helper.make_node("Unsqueeze", [wide, "width_axis"], [out]))
        done += 1
    del graph.node[:]
    graph.node.extend(new_nodes)
    return done


def polyphase_vocoder(src: Path, dst: Path) -> dict[str, Any]:
    import onnx

    from edge_tts.voice.polyphase import rewrite_conv_transposes

    model = onnx.load(str(src))
    squeezed = squeezed_conv_transposes(model, VOCODER_UPSAMPLING)
    convs = rewrite_conv_transposes(model, (VOCODER_UPSAMPLING,))
    del model.graph.value_info[:]
    # The import lists each opset twice, which onnxruntime's quantizer rejects.
    opsets = {entry.domain: entry.version for entry in model.opset_import}
    del model.opset_import[:]
    model.opset_import.extend(onnx.helper.make_opsetid(d, v) for d, v in opsets.items())
    onnx.save(model, str(dst))
    return {"rewritten": len(convs), "squeezed": squeezed}


def conv_names(model_path: Path, keep: Callable[[str], bool]) -> list[str]:
    import onnx

    model = onnx.load(str(model_path))
    return [n.name for n in model.graph.node if n.op_type == "Conv" and keep(n.name)]


class FeedReader:
    """onnxruntime's CalibrationDataReader protocol: one feed per get_next(); `__len__` and
    `set_range` let the calibrator take one sequence at a time (their lengths differ)."""

    def __init__(self, feeds: Sequence[dict[str, Any]]) -> None:
        self._feeds = list(feeds)
        self._items = iter(self._feeds)

    def __len__(self) -> int:
        return len(self._feeds)

    def get_next(self) -> dict[str, Any] | None:
        return next(self._items, None)

    def rewind(self) -> None:
        self._items = iter(self._feeds)

    def set_range(self, start_index: int, end_index: int) -> None:
        self._items = iter(self._feeds[start_index:end_index])


def build(
    voice: Path, work: Path, wanted: Sequence[Option], mels: Sequence[FloatArray]
) -> dict[str, Any]:
    """Build every file the wanted options need into `work` (kept between runs: a file
    already there is reused). Returns per file: size, seconds to build, node counts, or the
    error that stopped it."""
    work.mkdir(parents=True, exist_ok=True)
    notes: dict[str, Any] = {}
    for option in wanted:
        for name, kind in ((option.acoustic, "acoustic"), (option.vocoder, "vocoder")):
            dst = work / f"{kind}.{name}.onnx"
            if name in ("ref", "noqdq") or dst.exists():
                continue
            t0 = time.perf_counter()
            try:
                extra = build_one(voice, work, kind, name, dst, mels)
            except Exception as err:  # report it: an option that cannot be built is a result
                notes[dst.name] = {"error": repr(err)[:300]}
                dst.unlink(missing_ok=True)
                continue
            notes[dst.name] = {**extra, "build_s": round(time.perf_counter() - t0, 1)}
    for option in wanted:
        for name in (option.acoustic_file, option.vocoder_file):
            path = work / name if (work / name).exists() else voice / name
            if path.exists():
                notes.setdefault(name, {})["mb"] = round(path.stat().st_size / MB, 2)
                notes[name]["ops"] = op_counts(path)
    return notes


def build_one(
    voice: Path, work: Path, kind: str, name: str, dst: Path, mels: Sequence[FloatArray]
) -> dict[str, Any]:
    """One acoustic or vocoder file of the options (see the module's docstring)."""
    from onnxruntime.quantization import (
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    reader: FeedReader
    if kind == "acoustic":
        folded = work / "acoustic.fold.onnx"
        counts: dict[str, Any] = {}
        if name == "fold" or not folded.exists():
            counts = fold_dequantize(voice / "acoustic.onnx", folded)
        if name == "fold":
            return counts
        nodes = conv_names(folded, lambda node: node.startswith(ACOUSTIC_HEAVY))
        if name == "dyn":
            quantize_dynamic(
                str(folded),
                str(dst),
                weight_type=QuantType.QUInt8,
                op_types_to_quantize=["Conv"],
                nodes_to_quantize=nodes,
            )
            return {"quantized_convs": len(nodes)}
        renamed = work / "acoustic.renamed.onnx"
        renamed_tensors(folded, renamed)
        reader = FeedReader(acoustic_feeds(voice, CALIBRATION))
    else:
        src = voice / "vocoder.onnx"
        if name.startswith("dyn"):
            quantize_dynamic(
                str(src),
                str(dst),
                weight_type=QuantType.QInt8 if "-s8" in name else QuantType.QUInt8,
                per_channel=name.endswith("-pc"),
                op_types_to_quantize=["Conv"],
            )
            return {}
        if name.startswith("pp"):
            rewritten = work / "vocoder.pp.onnx"
            counts = polyphase_vocoder(src, rewritten if name != "pp" else dst)
            if name == "pp":
                return counts
            return {**counts, **polyphase_int8(rewritten, work, dst, mels, name.endswith("-p"))}
        stage = STACKS_01 if name == "static-01" else ("sequential_4/",)

        def wanted_conv(node: str) -> bool:
            in_stage = any(part in node for part in stage)
            return in_stage and not node.startswith(VOCODER_OUTPUT_STAGE)

        nodes = conv_names(src, wanted_conv)
        renamed = work / "vocoder.renamed.onnx"
        renamed_tensors(src, renamed)
        reader = FeedReader([{"mels": m} for m in mels])
    quantize_static(
        str(renamed),
        str(dst),
        reader,
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["Conv"],
        nodes_to_quantize=nodes,
        calibrate_method=CalibrationMethod.MinMax,
        extra_options={"CalibStridedMinMax": 1},
    )
    return {"quantized_convs": len(nodes)}


def polyphase_int8(
    src: Path, work: Path, dst: Path, mels: Sequence[FloatArray], percentile: bool
) -> dict[str, Any]:
    """The polyphase Convs of `src` and their interleave, static QDQ INT8."""
    import onnx
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    from edge_tts.voice.polyphase import INTERLEAVE_OPS, interleave_nodes

    renamed = work / "vocoder.pp.renamed.onnx"
    renamed_tensors(src, renamed)
    model = onnx.load(str(renamed))
    nodes = [n.name for n in model.graph.node if n.op_type == "Conv" and "_polyphase/" in n.name]
    nodes += interleave_nodes(model, nodes)
    extra: dict[str, Any] = {"CalibStridedMinMax": 1}
    if percentile:
        extra.update(CalibPercentile=99.95, CalibTensorRangeSymmetric=False)
    quantize_static(
        str(renamed),
        str(dst),
        FeedReader([{"mels": m} for m in mels]),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["Conv", *INTERLEAVE_OPS],
        nodes_to_quantize=nodes,
        calibrate_method=CalibrationMethod.Percentile if percentile else CalibrationMethod.MinMax,
        extra_options=extra,
    )
    return {"quantized_nodes": len(nodes)}


def op_counts(path: Path) -> dict[str, int]:
    import onnx

    graph = onnx.load(str(path)).graph
    kinds = ("Conv", "ConvInteger", "QLinearConv", "DequantizeLinear", "QuantizeLinear", "MatMul")
    counts = {k: sum(n.op_type == k for n in graph.node) for k in kinds}
    return {k: v for k, v in counts.items() if v}


# --- running an option as the daemon does -----------------------------------------------------


@dataclass
class Pipeline:
    option: Option
    acoustic: Any  # onnxruntime.InferenceSession
    vocoder: Any  # edge_tts.voice.vocoder.WindowedVocoder
    feeds: Callable[..., dict[str, Any]]  # (ids, speed=1.0)
    mel_output: str
    durations_output: str
    times: dict[str, list[float]] = field(default_factory=dict)

    def mel(self, ids: list[int]) -> tuple[FloatArray, npt.NDArray[Any]]:
        mel, durations = self.acoustic.run(
            [self.mel_output, self.durations_output], self.feeds(ids)
        )
        return np.asarray(mel, np.float32), np.asarray(durations)

    def whole(self, ids: list[int]) -> tuple[FloatArray, npt.NDArray[Any]]:
        """Deterministic audio of one chunk (vocoder on the whole mel) and the durations."""
        mel, durations = self.mel(ids)
        return self.vocoder.run(mel), durations

    def timed(self, ids: list[int]) -> tuple[float, float, int]:
        """As TwoStageVoice.stream: acoustic, then the vocoder's windows, the first short."""
        from edge_tts.voice.windowed import FIRST_WINDOW_FRAMES

        t0 = time.perf_counter()
        mel = self.acoustic.run([self.mel_output], self.feeds(ids))[0]
        t1 = time.perf_counter()
        samples = sum(piece.size for piece in self.vocoder.stream(mel, FIRST_WINDOW_FRAMES))
        return t1 - t0, time.perf_counter() - t1, samples


def open_pipeline(option: Option, voice: Path, work: Path) -> Pipeline:
    """The option's two sessions with the daemon's session options (after share_runtime),
    and the vocoder wrapped as TwoStageVoice does (context probed at load)."""
    import onnxruntime

    from edge_tts.voice import voice_dir
    from edge_tts.voice.model import session_options
    from edge_tts.voice.vocoder import WindowedVocoder
    from edge_tts.voice.vocoder_probe import probe_context

    config = voice_dir.read_config(voice)

    def session(path: Path, noqdq: bool = False, nchwc: bool = True) -> Any:
        options = session_options(2, nchwc)
        if noqdq:
            options.add_session_config_entry("session.disable_quant_qdq", "1")
        return onnxruntime.InferenceSession(
            path.read_bytes(), sess_options=options, providers=["CPUExecutionProvider"]
        )

    acoustic_path = (
        voice / "acoustic.onnx"
        if option.acoustic in ("ref", "noqdq")
        else work / option.acoustic_file
    )
    vocoder_path = voice / "vocoder.onnx" if option.vocoder == "ref" else work / option.vocoder_file
    acoustic = session(acoustic_path, option.acoustic == "noqdq")
    vocoder_session = session(vocoder_path, nchwc=False)  # as TwoStageVoice's vocoder
    vocoder = WindowedVocoder(
        vocoder_session,
        config.vocoder.inputs["mel"],
        config.hop_length,
        config.sample_rate,
        probe_context(vocoder_path.read_bytes(), config, 2),
    )
    return Pipeline(
        option,
        acoustic,
        vocoder,
        feeder(voice),
        config.acoustic.outputs["mel"],
        config.acoustic.outputs["durations"],
    )


def sentence_ids(voice: Path, sentences: Sequence[str]) -> list[list[int]]:
    """Each sentence as one chunk's symbol ids, through the daemon's front-end."""
    from edge_tts.text import prepare
    from edge_tts.voice.two_stage import TwoStageVoice

    reader = TwoStageVoice(voice)  # ids() needs the config only, no session
    out: list[list[int]] = []
    for sentence in sentences:
        chunks = prepare(sentence, language="zh", max_chunk_chars=200, first_chunk_chars=200)
        out.extend(ids for chunk in chunks for ids in reader.ids(chunk))
    return out


def snr_db(ref: FloatArray, test: FloatArray) -> float | None:
    if ref.size != test.size:
        return None
    noise = float(np.sum((ref.astype(np.float64) - test) ** 2))
    signal = float(np.sum(ref.astype(np.float64) ** 2))
    return round(10 * np.log10(signal / noise), 1) if noise > 0 else float("inf")


def quality(
    pipelines: dict[str, Pipeline], ids_list: Sequence[list[int]], sample_rate: int
) -> dict[str, Any]:
    from edge_tts.voicebuild.quality import compare

    ref = pipelines["a-ref"]
    ref_out = [ref.whole(ids) for ids in ids_list]
    result: dict[str, Any] = {}
    for name, pipe in pipelines.items():
        rows = []
        audios = []
        for ids, (ref_audio, ref_durations) in zip(ids_list, ref_out, strict=True):
            audio, durations = pipe.whole(ids)
            audios.append(audio)
            comparison = compare(ref_audio, audio, sample_rate)
            rows.append(
                {
                    "distance": comparison.spectral_distance,
                    "duration_ratio": comparison.duration_ratio,
                    "snr_db": snr_db(ref_audio, audio),
                    "durations_changed": int(
                        np.sum(durations.reshape(-1) != ref_durations.reshape(-1))
                    )
                    if durations.shape == ref_durations.shape
                    else None,
                }
            )
        result[name] = {**summarize_quality(rows), **noise_floor(audios)}
    # Reference pairs: what a distance of x means.
    gain = [compare(a, a * 0.9, sample_rate).spectral_distance for a, _ in ref_out]
    tempo = []
    for ids, (ref_audio, _) in zip(ids_list, ref_out, strict=True):
        mel = ref.acoustic.run([ref.mel_output], ref.feeds(ids, 1.01))[0]
        tempo.append(compare(ref_audio, ref.vocoder.run(mel), sample_rate).spectral_distance)
    result["reference pairs"] = {
        "a-ref at 0.9x gain": round(statistics.fmean(gain), 3),
        "a-ref at speed 1.01": round(statistics.fmean(tempo), 3),
    }
    return result


def noise_floor(audios: Sequence[FloatArray], frame: int = 512) -> dict[str, float]:
    """Frame RMS percentiles in dBFS over every sentence's audio: the quietest frames are
    pauses and lead-in/out, where quantization noise (hiss) shows (docs/quantization.md)."""
    rms = []
    for audio in audios:
        count = audio.size // frame
        frames = audio[: count * frame].astype(np.float64).reshape(count, frame)
        rms.append(np.sqrt(np.mean(frames**2, axis=1)))
    db = 20 * np.log10(np.maximum(np.concatenate(rms), 1e-10))
    return {f"floor_p{q}_dbfs": round(float(np.percentile(db, q)), 1) for q in (5, 10, 50)}


def summarize_quality(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    snrs = [r["snr_db"] for r in rows if r["snr_db"] is not None]
    changed = [r["durations_changed"] for r in rows if r["durations_changed"] is not None]
    finite = [s for s in snrs if s != float("inf")]
    return {
        "distance_mean": round(statistics.fmean(r["distance"] for r in rows), 4),
        "distance_max": round(max(r["distance"] for r in rows), 4),
        "duration_ratio_mean": round(statistics.fmean(r["duration_ratio"] for r in rows), 4),
        "duration_worst": round(max(abs(r["duration_ratio"] - 1) for r in rows), 4),
        "snr_db_median": round(statistics.median(finite), 1)
        if finite
        else ("identical" if snrs else None),
        "snr_sentences": len(snrs),
        "durations_changed": sum(changed) if changed else None,
        "sentences_with_changed_durations": sum(1 for c in changed if c),
    }


def speed(
    pipelines: dict[str, Pipeline], ids_list: Sequence[list[int]], rounds: int
) -> dict[str, Any]:
    """All options on each sentence in turn, order rotating every sentence; per round the
    ratio a-ref / option of the total, the acoustic and the vocoder times."""
    names = list(pipelines)
    per_round: list[dict[str, dict[str, float]]] = []
    for round_ in range(rounds):
        totals = {n: {"acoustic": 0.0, "vocoder": 0.0, "samples": 0.0} for n in names}
        for index, ids in enumerate(ids_list):
            shift = (round_ * len(ids_list) + index) % len(names)
            for name in names[shift:] + names[:shift]:
                acoustic_s, vocoder_s, samples = pipelines[name].timed(ids)
                totals[name]["acoustic"] += acoustic_s
                totals[name]["vocoder"] += vocoder_s
                totals[name]["samples"] += samples
        per_round.append(totals)
        log(f"  speed round {round_ + 1}/{rounds}, load average {os.getloadavg()[0]:.1f}")
    out: dict[str, Any] = {}
    for name in names:
        ratios: dict[str, list[float]] = {"total": [], "acoustic": [], "vocoder": []}
        rtf = []
        for totals in per_round:
            ref, mine = totals["a-ref"], totals[name]
            ratios["total"].append(
                (ref["acoustic"] + ref["vocoder"]) / (mine["acoustic"] + mine["vocoder"])
            )
            ratios["acoustic"].append(ref["acoustic"] / mine["acoustic"])
            ratios["vocoder"].append(ref["vocoder"] / mine["vocoder"])
            rtf.append((mine["acoustic"] + mine["vocoder"]) / (mine["samples"] / 24000))
        out[name] = {
            **{f"{k}_ratio": round(statistics.median(v), 3) for k, v in ratios.items()},
            "total_ratio_min": round(min(ratios["total"]), 3),
            "total_ratio_max": round(max(ratios["total"]), 3),
            "rtf_median": round(statistics.median(rtf), 4),
            "acoustic_share": round(
                statistics.fmean(
                    t[name]["acoustic"] / (t[name]["acoustic"] + t[name]["vocoder"])
                    for t in per_round
                ),
                3,
            ),
        }
    return out


# --- RSS of one option, in a fresh process ----------------------------------------------------


def rss_worker(args: argparse.Namespace) -> int:
    from edge_tts.voice.model import share_runtime

    share_runtime()
    pipe = open_pipeline(BY_NAME[args.rss_worker], args.voice, args.work)
    for ids in sentence_ids(args.voice, EVALUATION[:3]):
        pipe.timed(ids)
    status = proc_status("self")
    workers.reply(rss_mb=round(status["VmRSS"], 1), peak_mb=round(status["VmHWM"], 1))
    return 0


def rss(args: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        paths = ("--voice", str(args.voice), "--work", str(args.work))
        try:
            out[name] = workers.run("bench.zh_quant", "--rss-worker", name, *paths)
        except subprocess.CalledProcessError as err:
            out[name] = {"error": str(err.stderr)[-300:]}
    return out


# --- main -------------------------------------------------------------------------------


def feeder(voice: Path) -> Callable[..., dict[str, Any]]:
    """The acoustic model's inputs for one chunk's ids: (ids, speed=1.0), speaker 0."""
    from edge_tts.voice import voice_dir

    names = voice_dir.read_config(voice).acoustic.inputs
    one = np.array([1.0], np.float32)

    def feeds(ids: list[int], speed: float = 1.0) -> dict[str, Any]:
        return {
            names["ids"]: np.array([ids], np.int32),
            names["speaker"]: np.array([0], np.int32),
            names["speed"]: np.array([speed], np.float32),
            names["f0"]: one,
            names["energy"]: one,
        }

    return feeds


def acoustic_feeds(voice: Path, sentences: Sequence[str]) -> list[dict[str, Any]]:
    """The acoustic model's inputs for each sentence (one chunk each)."""
    feeds = feeder(voice)
    return [feeds(ids) for ids in sentence_ids(voice, sentences)]


def calibration_mels(voice: Path) -> list[FloatArray]:
    """Mels of the calibration sentences from the acoustic model as imported (own session:
    before share_runtime, which would refuse the quantizer's sessions)."""
    import onnxruntime

    from edge_tts.voice import voice_dir

    mel = voice_dir.read_config(voice).acoustic.outputs["mel"]
    session = onnxruntime.InferenceSession(
        str(voice / "acoustic.onnx"), providers=["CPUExecutionProvider"]
    )
    return [
        np.asarray(session.run([mel], feeds)[0], np.float32)
        for feeds in acoustic_feeds(voice, CALIBRATION)
    ]


def run(args: argparse.Namespace) -> dict[str, Any]:
    from edge_tts.voice.model import share_runtime

    load_before = os.getloadavg()
    wanted = [BY_NAME[n] for n in args.options]
    if wanted[0].name != "a-ref":
        wanted.insert(0, BY_NAME["a-ref"])
    need_mels = any(
        o.vocoder.startswith(("static", "pp-int8")) and not (args.work / o.vocoder_file).exists()
        for o in wanted
    )
    log("building the options")
    mels = calibration_mels(args.voice) if need_mels else []
    built = build(args.voice, args.work, wanted, mels)

    work: Path = args.work
    voice: Path = args.voice

    def exists(name: str) -> bool:
        return (work / name).exists() or (voice / name).exists()

    usable = [o for o in wanted if exists(o.acoustic_file) and exists(o.vocoder_file)]
    share_runtime()  # as the daemon, for every session from here on
    log("loading " + ", ".join(o.name for o in usable))
    pipelines: dict[str, Pipeline] = {}
    load_s: dict[str, float] = {}
    for option in usable:
        t0 = time.perf_counter()
        pipelines[option.name] = open_pipeline(option, args.voice, args.work)
        load_s[option.name] = round(time.perf_counter() - t0, 2)
    ids_list = sentence_ids(args.voice, EVALUATION[: args.sentences])
    log(f"quality: {len(ids_list)} sentences")
    result: dict[str, Any] = {
        "benchmark": "zh_quant",
        "voice_dir": str(args.voice),
        "sentences": len(ids_list),
        "rounds": args.rounds,
        "options": {o.name: o.what for o in usable},
        "not_built": {
            o.name: [built.get(f, {}).get("error") for f in (o.acoustic_file, o.vocoder_file)]
            for o in wanted
            if o not in usable
        },
        "files": built,
        "load_s": load_s,
        "vocoder_context": {n: p.vocoder.context for n, p in pipelines.items()},
        "quality": quality(pipelines, ids_list, 24000),
    }
    log(f"speed: {args.rounds} rounds")
    result["speed"] = speed(pipelines, ids_list, args.rounds)
    if args.rss:
        log("RSS, one fresh process per option")
        result["rss"] = rss(args, list(pipelines))
    result["machine"] = machine_info(load_before)
    return result


def print_report(r: dict[str, Any]) -> None:
    print(
        f"Mandarin voice, INT8 options vs as imported: {r['sentences']} sentences, "
        f"{r['rounds']} speed rounds, interleaved"
    )
    print(machine_line(r["machine"]))
    for name, err in r["not_built"].items():
        print(f"  {name}: not built: {err}")
    rows = []
    for name in r["options"]:
        s, q = r["speed"][name], r["quality"][name]
        option = BY_NAME[name]
        files = r["files"]
        mb = files.get(option.acoustic_file, {}).get("mb", 0)
        mb += files.get(option.vocoder_file, {}).get("mb", 0)
        rows.append(
            (
                name,
                fmt(s["total_ratio"], ".3f"),
                f"{s['total_ratio_min']:.2f}-{s['total_ratio_max']:.2f}",
                fmt(s["acoustic_ratio"], ".3f"),
                fmt(s["vocoder_ratio"], ".3f"),
                fmt(s["rtf_median"], ".3f"),
                fmt(q["distance_mean"], ".3f"),
                fmt(q["distance_max"], ".3f"),
                fmt(q["snr_db_median"]),
                fmt(q["duration_ratio_mean"], ".3f"),
                fmt(q["duration_worst"], ".3f"),
                q["durations_changed"],
                fmt(mb, ".1f"),
                q.get("floor_p5_dbfs"),
                r["vocoder_context"].get(name),
            )
        )
    headers = ("option", "speed", "(min-max)", "acoustic", "vocoder", "RTF", "dist", "max",
               "SNR dB", "dur", "worst", "durs chg", "MB", "p5 dB", "window")  # fmt: skip
    table(headers, rows)
    print(
        "window: the vocoder context WindowedVocoder.probe_context finds (frames); '-': "
        "windows do not reproduce whole-chunk output, so the daemon vocodes whole chunks\n"
    )
    table(("reference pair", "distance"), list(r["quality"]["reference pairs"].items()))
    if "rss" in r:
        rss = r["rss"].items()
        table(
            ("option", "RSS MB", "peak MB", "error"),
            [(n, v.get("rss_mb"), v.get("peak_mb"), v.get("error")) for n, v in rss],
            "RSS, a fresh process speaking 3 sentences:",
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--voice", type=Path, default=DEFAULT_VOICE_DIR, help="the imported voice")
    parser.add_argument("--work", type=Path, default=Path("/tmp/zh_quant"), help="built files")
    parser.add_argument("--rounds", type=int, default=5, help="speed rounds (default 5)")
    parser.add_argument(
        "--sentences", type=int, default=len(EVALUATION), help="evaluation sentences"
    )
    parser.add_argument(
        "--options",
        type=lambda s: [x for x in s.split(",") if x],
        default=[o.name for o in OPTIONS],
        help="comma-separated, from: " + ", ".join(o.name for o in OPTIONS),
    )
    parser.add_argument("--rss", action="store_true", help="RSS of a fresh process per option")
    add_output_options(parser)
    parser.add_argument("--rss-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_worker:
        return rss_worker(args)
    unknown = [n for n in args.options if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown options {unknown}")
    return run_and_emit(run, args, print_report)


if __name__ == "__main__":
    sys.exit(main())
