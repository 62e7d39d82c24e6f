"""A model whose bytes are not the pinned ones is never loaded, and nothing is played."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edge_tts.voice import files
from edge_tts.voice.build_manifest import (
    BuildManifest,
    ManifestError,
    manifest_path,
    read_manifest,
    readable_manifest,
    write_manifest,
)
from edge_tts.voice.integrity import (
    ModelIntegrityError,
    read_verified,
    sha256_hex,
)
from edge_tts.voice.model import Voice

from .conftest import run_cli


def tiny_model(path: Path, external: bool = False) -> bytes:
    weight = numpy_helper.from_array(np.ones((64, 64), dtype=np.float32), name="w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
        [weight],
    )
    model = helper.make_model(graph)
    if external:
        onnx.save_model(
            model, str(path), save_as_external_data=True, location="weights.bin", size_threshold=0
        )
    else:
        onnx.save_model(model, str(path))
    return path.read_bytes()


@pytest.mark.unit
def test_pinned_digest_matches(tmp_path: Path) -> None:
    data = tiny_model(tmp_path / "m.onnx")
    verified = read_verified(tmp_path / "m.onnx", pinned=sha256_hex(data).upper())
    assert verified.data == data and verified.pinned_by == "config"


@pytest.mark.unit
@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_damaged_model_is_refused_naming_file_and_digests(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "m.onnx"
    good = sha256_hex(tiny_model(path))
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x01
    else:
        del data[len(data) // 2 :]
    path.write_bytes(bytes(data))
    with pytest.raises(ModelIntegrityError) as err:
        read_verified(path, pinned=good)
    message = str(err.value)
    assert str(path) in message and good in message and sha256_hex(bytes(data)) in message


@pytest.mark.unit
def test_manifest_digest_is_used_and_wrong_config_pin_wins(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    digest = sha256_hex(tiny_model(path))
    manifest_path(path).write_text(json.dumps({"sha256": digest}))
    assert read_verified(path).pinned_by == "manifest"
    with pytest.raises(ModelIntegrityError, match=r"expected 0{64} from config"):
        read_verified(path, pinned="0" * 64)


@pytest.mark.unit
@pytest.mark.parametrize(
    "text",
    ["{not json", "[]", "{}", '{"sha256": 7}', '{"sha256": "ab", "scheme": 3}'],
    ids=["not-json", "not-an-object", "no-digest", "digest-not-a-string", "scheme-not-a-string"],
)
def test_a_broken_manifest_refuses_the_load_and_makes_no_build(tmp_path: Path, text: str) -> None:
    path = tmp_path / "m.int8.onnx"
    tiny_model(path)
    manifest_path(path).write_text(text)
    with pytest.raises(ManifestError, match=r"m\.int8\.onnx\.manifest\.json"):
        read_manifest(path)
    with pytest.raises(ModelIntegrityError, match="manifest"):
        read_verified(path)
    assert readable_manifest(path) is None
    assert files.scheme_of(path) == files.FP32 and files.source_sha256(path) is None


@pytest.mark.unit
def test_a_manifest_is_read_once_into_its_fields(tmp_path: Path) -> None:
    path = tmp_path / "m.int8.onnx"
    assert read_manifest(path) is None
    fields = {"sha256": "AB" * 32, "scheme": "static-fast", "source_sha256": "CD" * 32, "n": 1}
    write_manifest(path, fields)
    manifest = read_manifest(path)
    assert manifest == BuildManifest("ab" * 32, "static-fast", "cd" * 32)
    assert files.scheme_of(path) == "static-fast" and files.source_sha256(path) == "cd" * 32
    with pytest.raises(ManifestError):
        write_manifest(path, {"scheme": "static-fast"})  # what it writes, it can read back


@pytest.mark.unit
def test_external_data_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    data = tiny_model(path, external=True)
    assert (tmp_path / "weights.bin").exists()
    with pytest.raises(ModelIntegrityError, match="external data"):
        read_verified(path, pinned=sha256_hex(data))


@pytest.mark.unit
def test_garbage_is_not_an_onnx_model(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(b"\x08\x07" + b"\xff" * 100)
    with pytest.raises(ModelIntegrityError, match="not a valid ONNX model"):
        read_verified(path)


@pytest.mark.model
def test_packaged_voice_verifies_against_builtin_digest(fp32_files: files.VoiceFiles) -> None:
    assert read_verified(fp32_files.model, builtin=fp32_files.builtin_digest).pinned_by == "builtin"


@pytest.mark.model
def test_real_voice_with_flipped_byte_refuses_to_load(voice_copy: files.VoiceFiles) -> None:
    good = files.PACKAGED_DIGESTS["en_US-joe-medium.onnx"]
    with voice_copy.model.open("r+b") as handle:
        handle.seek(30_000_000)  # inside the weights: still parses as ONNX
        byte = handle.read(1)
        handle.seek(30_000_000)
        handle.write(bytes([byte[0] ^ 0x80]))
    voice = Voice(voice_copy, pinned_sha256=good)
    with pytest.raises(ModelIntegrityError, match="SHA-256 mismatch"):
        voice.load()
    assert not voice.loaded


@pytest.mark.daemon
def test_say_refuses_tampered_model_and_writes_nothing(
    voice_copy: files.VoiceFiles, tmp_path: Path
) -> None:
    good = files.PACKAGED_DIGESTS["en_US-joe-medium.onnx"]
    with voice_copy.model.open("r+b") as handle:
        handle.truncate(40_000_000)
    out = tmp_path / "out.wav"
    result = run_cli(
        "say", "--voice", str(voice_copy.model), "--sha256", good, "--out", str(out), "Hello there."
    )
    assert result.returncode == 78, result.stderr
    assert "SHA-256 mismatch" in result.stderr and str(voice_copy.model) in result.stderr
    assert not out.exists()


@pytest.mark.daemon
def test_verify_model_prints_digest(fp32_files: files.VoiceFiles) -> None:
    result = run_cli("verify-model", str(fp32_files.model))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == files.PACKAGED_DIGESTS["en_US-joe-medium.onnx"]
    assert "pinned by builtin" in result.stdout


@pytest.mark.model
@pytest.mark.parametrize(
    ("content", "message"),
    [("external", "external data"), ("garbage", "not a valid ONNX model")],
)
def test_voice_load_refuses_what_the_checker_refuses(
    voice_copy: files.VoiceFiles, content: str, message: str
) -> None:
    """The daemon checks (and cuts) the hashed bytes in a child process: its refusals
    still reach the caller as ModelIntegrityError, and nothing is loaded."""
    if content == "external":
        data = tiny_model(voice_copy.model, external=True)
    else:
        data = b"\x08\x07" + b"\xff" * 100
        voice_copy.model.write_bytes(data)
    voice = Voice(voice_copy, pinned_sha256=sha256_hex(data))
    with pytest.raises(ModelIntegrityError, match=message):
        voice.load()
    assert not voice.loaded


@pytest.mark.daemon
def test_loading_a_voice_keeps_onnx_out_of_the_process() -> None:
    code = (
        "import sys\n"
        "from edge_tts.voice import files\n"
        "from edge_tts.voice.model import Voice\n"
        "voice = Voice(files.packaged_fp32())\n"
        "voice.load()\n"
        "assert voice.windowed\n"
        "assert 'onnx' not in sys.modules, 'onnx imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
