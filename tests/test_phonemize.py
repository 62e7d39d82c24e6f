"""Our phoneme ids are Piper's ids, byte for byte."""

from __future__ import annotations

import logging

import pytest
from piper import PiperVoice

from edge_tts.text import normalize
from edge_tts.voice import files
from edge_tts.voice.model import load_config
from edge_tts.voice.phonemize import phonemes_to_ids, text_to_ids

from .conftest import corpus_lines


@pytest.fixture(scope="module")
def piper_voice(fp32_files: files.VoiceFiles) -> PiperVoice:
    return PiperVoice.load(fp32_files.model, fp32_files.config)


@pytest.mark.parametrize("line", corpus_lines())
def test_ids_equal_pipers_on_corpus(
    line: str, piper_voice: PiperVoice, fp32_files: files.VoiceFiles
) -> None:
    text = normalize(line)
    expected = [piper_voice.phonemes_to_ids(p) for p in piper_voice.phonemize(text) if p]
    assert text_to_ids(text, load_config(fp32_files)) == expected


def test_ids_are_bos_pad_interleaved_eos() -> None:
    id_map = {"^": [1], "_": [0], "$": [2], "a": [14], "b": [15]}
    assert phonemes_to_ids(["a", "b"], id_map) == [1, 0, 14, 0, 15, 0, 2]


def test_unknown_phoneme_is_skipped_with_debug_log(caplog: pytest.LogCaptureFixture) -> None:
    id_map = {"^": [1], "_": [0], "$": [2], "a": [14]}
    with caplog.at_level(logging.DEBUG, logger="edge_tts.voice.phonemize"):
        assert phonemes_to_ids(["a", "ʘ", "a"], id_map) == [1, 0, 14, 0, 14, 0, 2]
    assert "'ʘ'" in caplog.text
