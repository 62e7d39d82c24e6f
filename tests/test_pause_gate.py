"""The pause gate: quiet noise in pauses goes below the LSB, speech passes bit-exact."""

from __future__ import annotations

import numpy as np
import pytest

from edge_tts.audio.pause_gate import FRAME, RANGE_DB, PauseGate
from edge_tts.speech.direct import speak
from edge_tts.voice import files
from edge_tts.voice.base import SpeechOptions
from edge_tts.voice.model import Voice

RATE = 22050


def dbfs(audio: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(audio.astype(np.float64) ** 2) + 1e-30))


def tone(seconds: float, level_dbfs: float) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    amplitude = np.sqrt(2) * 10 ** (level_dbfs / 20)
    audio: np.ndarray = (amplitude * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    return audio


def hiss(seconds: float, level_dbfs: float, seed: int = 0) -> np.ndarray:
    noise = np.random.default_rng(seed).standard_normal(int(seconds * RATE))
    return (noise * 10 ** (level_dbfs / 20)).astype(np.float32)


@pytest.mark.unit
def test_speech_levels_pass_unchanged() -> None:
    speech = tone(1.0, -30.0)
    assert np.array_equal(PauseGate().process(speech), speech)


@pytest.mark.unit
def test_a_noise_floor_in_a_pause_goes_below_the_int16_lsb() -> None:
    pause = hiss(1.0, -76.0)  # the INT8 voice's floor in pauses, before the gate
    gated = PauseGate().process(pause)
    assert dbfs(gated) == pytest.approx(-76.0 - RANGE_DB, abs=1.0)
    assert dbfs(gated) < -96.0


@pytest.mark.unit
def test_the_gate_never_amplifies() -> None:
    rng = np.random.default_rng(1)
    levels = np.repeat(rng.uniform(-100, -20, 40), 300)
    audio = (rng.standard_normal(levels.size) * 10 ** (levels / 20)).astype(np.float32)
    gated = PauseGate().process(audio)
    assert np.all(np.abs(gated) <= np.abs(audio) + 1e-9)


@pytest.mark.unit
def test_a_word_is_not_cut_at_either_end() -> None:
    """The gate opens a frame before a word and closes a frame after it."""
    pause, word = hiss(0.2, -76.0), tone(0.3, -30.0)
    audio = np.concatenate([pause, word, pause])
    gated = PauseGate().process(audio)
    start, end = pause.size, pause.size + word.size
    assert np.array_equal(gated[start:end], audio[start:end])
    assert np.array_equal(gated[end : end + FRAME // 2], audio[end : end + FRAME // 2])


@pytest.mark.unit
def test_a_word_that_starts_a_piece_is_not_faded_in() -> None:
    gate = PauseGate()
    gate.process(hiss(0.3, -80.0))  # the last piece ended in a pause: the gate is closed
    word = tone(0.3, -30.0)
    assert np.array_equal(gate.process(word), word)


@pytest.mark.unit
def test_closing_across_a_seam_ramps_instead_of_jumping() -> None:
    gate = PauseGate()
    gate.process(tone(0.3, -30.0))  # open
    gated = gate.process(hiss(0.5, -76.0))
    gains = np.abs(gated[: 2 * FRAME]) / np.maximum(np.abs(hiss(0.5, -76.0)[: 2 * FRAME]), 1e-12)
    assert gains[0] > 0.9  # starts where the last piece ended
    assert np.all(np.diff(gains) <= 1e-6)  # then only goes down, gradually


@pytest.mark.model
def test_the_default_voice_is_silent_in_pauses() -> None:
    """The INT8 voice's quantization noise (-76 dBFS in pauses without the gate) must not
    be heard: the quietest frames of real synthesis are below the int16 LSB, as FP32's."""
    voice = Voice(files.default_voice())
    text = "Attention, please. The doors are closing; stand clear. Thank you."
    options = SpeechOptions(noise_scale=0.0, noise_w=0.0)
    pcm = np.concatenate([c.pcm for c in speak(text, voice, options)])
    audio = pcm.astype(np.float64) / 32768
    frames = audio[: audio.size // 512 * 512].reshape(-1, 512)
    levels = 10 * np.log10(np.mean(frames**2, axis=1) + 1e-30)
    assert np.percentile(levels, 5) < -90.0
    assert np.percentile(levels, 50) > -45.0  # and it is speech, not silence
