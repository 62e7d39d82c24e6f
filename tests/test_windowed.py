"""Windowed decoding: the voice cut at the decoder, decoded in pieces, equals the whole graph."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest

from edge_tts.config import SynthesisSettings
from edge_tts.speech.direct import speak
from edge_tts.voice import files
from edge_tts.voice.base import SynthesisParams
from edge_tts.voice.decoder_cut import DECODER_FIRST_CONV, split_at_decoder
from edge_tts.voice.model import Voice, encoder_threads, new_session, session_options
from edge_tts.voice.phonemize import text_to_ids
from edge_tts.voice.windowed import (
    FIRST_WINDOW_FRAMES,
    MAX_WINDOW_FRAMES,
    DecoderStage,
    WindowedEngine,
    even_step,
    next_window,
    window_plan,
)

from .support.texts import evaluation_lines

DETERMINISTIC = SynthesisParams(noise_scale=0.0, noise_w=0.0)
LONG = (
    "Attention please: the eleven fifteen service to the airport, calling at every station, "
    "has been delayed by about twenty minutes because of a signal failure near the bridge."
)


def snr_db(reference: np.ndarray, other: np.ndarray) -> float:
    noise = float(np.sum((reference - other) ** 2))
    return float(10 * np.log10(float(np.sum(reference**2)) / max(noise, 1e-30)))


def whole_graph(model: Path, ids: list[int], voice: Voice) -> np.ndarray:
    """The untouched model in one run: what Piper itself computes."""
    session = onnxruntime.InferenceSession(
        model.read_bytes(), session_options(2), providers=["CPUExecutionProvider"]
    )
    output: np.ndarray = session.run(None, voice._feeds(ids, DETERMINISTIC))[0]
    return output.reshape(-1)


@pytest.mark.model
def test_fp32_voice_is_cut_at_the_decoder(fp32_voice: Voice) -> None:
    assert fp32_voice.windowed
    engine = fp32_voice._engine
    assert 6 <= engine.context <= 24  # type: ignore[union-attr]
    assert engine.frame_seconds == pytest.approx(256 / 22050)  # type: ignore[union-attr]
    # the high-rate stage (most of the work) needs about one frame of context, not 11
    head, tail = engine._stages  # type: ignore[union-attr]
    assert (head.hop, tail.hop) == (256, 32)
    assert 1 <= tail.context * tail.hop <= 2 * 256


@pytest.mark.model
def test_a_session_keeps_no_reference_to_its_model_bytes(fp32_files: files.VoiceFiles) -> None:
    """onnxruntime's wrapper would keep them as long as the session lives: a second copy
    of the graph (the FP32 encoder the pre-renderer loads: 56 MB)."""
    data = fp32_files.model.read_bytes()
    before = sys.getrefcount(data)
    session = new_session(data, 1)
    assert sys.getrefcount(data) == before
    assert session.get_inputs()  # and the session works without them


def stage(context: int, hop: int) -> DecoderStage:
    return DecoderStage(session=None, input="x", context=context, hop=hop)


@pytest.mark.unit
def test_window_plan_feeds_each_stage_its_own_context() -> None:
    stages = [stage(11, 256), stage(9, 32)]
    # frames [16, 160) of 300: the tail needs 9 steps of the 8x stage either side...
    (head_in, head_keep), (tail_in, tail_keep) = window_plan(stages, 300, 16, 160)
    assert tail_in == (16 * 8 - 9, 160 * 8 + 9)
    assert tail_keep == (9 * 32, 9 * 32 + 144 * 256)
    # ...and the head 11 frames around the frames under those steps
    assert head_in == (14 - 11, 162 + 11)
    assert head_keep == (tail_in[0] - 3 * 8, tail_in[1] - 3 * 8)


@pytest.mark.unit
def test_window_plan_clips_at_the_ends_of_the_sentence() -> None:
    stages = [stage(11, 256), stage(9, 32)]
    (head_in, head_keep), (tail_in, tail_keep) = window_plan(stages, 20, 0, 20)
    assert head_in == (0, 20) and head_keep == (0, 160)
    assert tail_in == (0, 160) and tail_keep == (0, 20 * 256)
    ((one_in, one_keep),) = window_plan([stage(11, 256)], 50, 30, 50)
    assert one_in == (19, 50) and one_keep == (11 * 256, 31 * 256)


@pytest.mark.model
@pytest.mark.parametrize("text", [evaluation_lines()[0], "Door open.", LONG])
def test_pieces_join_into_what_the_whole_graph_makes(
    fp32_voice: Voice, fp32_files: files.VoiceFiles, text: str
) -> None:
    ids = text_to_ids(text, fp32_voice.config)[0]
    pieces = list(fp32_voice.stream(ids, DETERMINISTIC, first_frames=FIRST_WINDOW_FRAMES))
    joined = np.concatenate(pieces)
    reference = whole_graph(fp32_files.model, ids, fp32_voice)
    assert joined.shape == reference.shape
    assert snr_db(reference, joined) > 60  # float rounding, not window seams
    assert len(pieces[0]) == FIRST_WINDOW_FRAMES * 256
    assert max(len(p) for p in pieces) <= MAX_WINDOW_FRAMES * 256


@pytest.mark.model
def test_int8_voice_streams_too() -> None:
    int8 = files.default_voice()
    if not int8.model.name.endswith(files.INT8_SUFFIX):
        pytest.skip("no INT8 build (scripts/setup makes one)")
    voice = Voice(int8)
    ids = text_to_ids(LONG, voice.config)[0]
    joined = np.concatenate(list(voice.stream(ids, DETERMINISTIC, first_frames=16)))
    assert voice.windowed
    assert snr_db(whole_graph(int8.model, ids, voice), joined) > 60


@pytest.mark.model
def test_first_audio_comes_before_the_sentence_is_decoded(fp32_voice: Voice) -> None:
    whole = SynthesisSettings(max_chunk_chars=2000, first_chunk_chars=2000)  # LONG in one
    chunks = speak(LONG, fp32_voice, synthesis=whole)
    first = next(chunks)
    rest = list(chunks)
    # the first piece is one short window (minus the trimmed lead-in), the rest follows
    assert first.seconds < FIRST_WINDOW_FRAMES * 256 / 22050 + 0.001
    assert sum(c.seconds for c in rest) > 5 * first.seconds
    assert {c.text for c in rest} >= {first.text}


@pytest.mark.model
def test_unrecognised_graph_decodes_whole_sentences(voice_copy: files.VoiceFiles) -> None:
    """A voice whose decoder we cannot find still speaks, in one run per sentence."""
    model = onnx.load(voice_copy.model)
    for node in model.graph.node:
        if node.name == DECODER_FIRST_CONV:
            node.name = "renamed_conv"
    assert split_at_decoder(model) is None
    voice_copy.model.write_bytes(model.SerializeToString())
    voice = Voice(voice_copy)
    assert not voice.windowed
    pcm = np.concatenate([c.pcm for c in speak("Door open.", voice)])
    assert len(pcm) > 0.3 * 22050
    assert float(np.sqrt(np.mean((pcm / 32768.0) ** 2))) > 0.02


@pytest.mark.model
def test_decoder_gets_the_speaker_id_of_multi_speaker_voices(voice_copy: files.VoiceFiles) -> None:
    """Multi-speaker Piper voices condition the decoder on `sid`: the decoder half must get it.

    No multi-speaker voice is packaged, so the test gives the single-speaker graph an `sid`
    input that the decoder reads (its output gains 0.01 * sid) and two speakers in its config.
    """
    model = onnx.load(voice_copy.model)
    graph = model.graph
    for tensor in graph.initializer:  # this export calls an unrelated weight "sid"
        if tensor.name == "sid":
            tensor.name = "renamed_sid_weight"
    for node in graph.node:
        node.input[:] = ["renamed_sid_weight" if i == "sid" else i for i in node.input]
    tanh = next(n for n in graph.node if n.name == "/dec/Tanh")
    graph.input.append(onnx.helper.make_tensor_value_info("sid", onnx.TensorProto.INT64, [1]))
    graph.initializer.append(onnx.numpy_helper.from_array(np.array(0.01, np.float32), "k"))
    graph.node.extend(
        [
            onnx.helper.make_node("Cast", ["sid"], ["sid_f"], to=onnx.TensorProto.FLOAT),
            onnx.helper.make_node("Mul", ["sid_f", "k"], ["sid_bias"]),
            onnx.helper.make_node("Add", [tanh.input[0], "sid_bias"], ["tanh_in"]),
        ]
    )
    tanh.input[0] = "tanh_in"
    onnx.save(model, voice_copy.model)
    config = json.loads(voice_copy.config.read_text())
    config.update(num_speakers=2, speaker_id_map={"a": 0, "b": 1})
    voice_copy.config.write_text(json.dumps(config))

    voice = Voice(voice_copy)
    ids = text_to_ids("Door open.", voice.config)[0]
    by_speaker = []
    for speaker in ("a", "b"):
        params = SynthesisParams(speaker=speaker, noise_scale=0.0, noise_w=0.0)
        joined = np.concatenate(list(voice.stream(ids, params, first_frames=8)))
        session = onnxruntime.InferenceSession(
            voice_copy.model.read_bytes(), session_options(2), providers=["CPUExecutionProvider"]
        )
        reference = session.run(None, voice._feeds(ids, params))[0].reshape(-1)
        assert snr_db(reference, joined) > 60
        by_speaker.append(joined)
    assert voice.windowed
    assert len(voice._engine._stages) == 1  # type: ignore[union-attr] # the tail reads sid here
    assert not np.allclose(by_speaker[0], by_speaker[1])


@pytest.mark.unit
def test_windows_grow_with_the_audio_buffered_and_the_decoder_speed() -> None:
    # this machine: ~0.3 ms per frame; 0.19 s buffered after the first window
    assert next_window(0.19, 0.0003, 16) == MAX_WINDOW_FRAMES
    # a board ten times slower gets smaller windows, enough to stay ahead of playback
    slow = next_window(0.19, 0.003, 16)
    assert 16 <= slow < MAX_WINDOW_FRAMES
    assert slow * 0.003 <= 0.19  # decoded before the buffered audio runs out
    # behind already: the smallest window, never zero
    assert next_window(-0.5, 0.003, 16) == 16


@pytest.mark.unit
def test_windows_are_even_and_never_exceed_the_cap() -> None:
    assert even_step(218, 144) == 109  # two of 109, not 144 + 74
    assert even_step(100, 144) == 100
    assert even_step(300, 16) == 16
    steps, left = [], 433
    while left:
        steps.append(even_step(left, 144))
        left -= steps[-1]
    assert steps == [109, 108, 108, 108]  # 433 > 3 x 144: four even windows


@pytest.mark.model
def test_warm_up_runs_concurrent_long_sentences(voice_copy: files.VoiceFiles) -> None:
    """Each worker's encoder runs at the longest input a request can bring, all at once: the
    arena reaches the high-water mark of concurrent long requests before READY."""
    voice = Voice(voice_copy, max_phonemes=300)
    engine = voice._get_engine()
    real_run = engine.run_input
    # Every run waits here for the other: sequential runs break the barrier (timeout).
    together = threading.Barrier(2, timeout=120)
    lengths: list[int] = []
    threads: set[str] = set()
    failures: list[BaseException] = []

    def recording_run(feeds: dict[str, np.ndarray]) -> None:
        try:
            lengths.append(int(feeds["input"].shape[1]))
            threads.add(threading.current_thread().name)
            together.wait()
            real_run(feeds)
        except BaseException as err:  # reported below, not lost in a thread
            failures.append(err)

    engine.run_input = recording_run  # type: ignore[method-assign]
    voice.warm_up(concurrent=2)
    assert failures == []
    assert len(lengths) == 2 and len(threads) == 2
    # No sentence ends: the phonemizer's cap at word gaps is the only thing cutting it.
    longest = max(len(ids) for ids in voice.ids(", ".join([LONG.rstrip(".")] * 4) + "."))
    assert lengths == [longest, longest]
    assert longest == 2 * 300 + 3  # the cap: "^", pad, 300 x (phoneme, pad), "$"


@pytest.mark.unit
def test_a_quantized_encoder_half_runs_on_one_thread() -> None:
    assert encoder_threads("static-fast-ups01", 2) == 1
    assert encoder_threads("static-fast-ups01-fp16", 4) == 1
    assert encoder_threads("static-fast-ups01", 1) == 1
    assert encoder_threads(files.FP32, 2) == 2  # float kernels split well: kept
    assert encoder_threads(files.IMPORTED, 3) == 3


@pytest.mark.model
def test_the_int8_voice_encodes_on_one_thread_and_decodes_on_two() -> None:
    int8 = files.default_voice()
    if not int8.model.name.endswith(files.INT8_SUFFIX):
        pytest.skip("no INT8 build (scripts/setup makes one)")
    voice = Voice(int8, threads=2)
    voice.load()
    engine = voice._engine
    assert isinstance(engine, WindowedEngine)
    assert engine._encoder.get_session_options().intra_op_num_threads == 1
    assert {s.session.get_session_options().intra_op_num_threads for s in engine._stages} == {2}
    assert "encoder on 1 thread(s)" in engine.describe()
