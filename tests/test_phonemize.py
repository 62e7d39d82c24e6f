"""Our phoneme ids are Piper's ids, byte for byte."""

from __future__ import annotations

import gc
import logging
import tracemalloc

import pytest
from piper import PiperVoice, espeakbridge

from edge_tts.text import normalize
from edge_tts.voice import espeak, files
from edge_tts.voice.model import load_config
from edge_tts.voice.phonemize import bound_phonemes, phonemes_to_ids, text_to_ids

from .support.texts import evaluation_lines


@pytest.fixture(scope="module")
def piper_voice(fp32_files: files.VoiceFiles) -> PiperVoice:
    return PiperVoice.load(fp32_files.model, fp32_files.config)


@pytest.mark.model
@pytest.mark.parametrize("line", evaluation_lines())
def test_ids_equal_pipers_on_corpus(
    line: str, piper_voice: PiperVoice, fp32_files: files.VoiceFiles
) -> None:
    text = normalize(line)
    expected = [piper_voice.phonemes_to_ids(p) for p in piper_voice.phonemize(text) if p]
    assert text_to_ids(text, load_config(fp32_files)) == expected


@pytest.mark.unit
def test_ids_are_bos_pad_interleaved_eos() -> None:
    id_map = {"^": [1], "_": [0], "$": [2], "a": [14], "b": [15]}
    assert phonemes_to_ids(["a", "b"], id_map) == [1, 0, 14, 0, 15, 0, 2]


@pytest.mark.unit
def test_unknown_phoneme_is_skipped_with_debug_log(caplog: pytest.LogCaptureFixture) -> None:
    id_map = {"^": [1], "_": [0], "$": [2], "a": [14]}
    with caplog.at_level(logging.DEBUG, logger="edge_tts.voice.phonemize"):
        assert phonemes_to_ids(["a", "ʘ", "a"], id_map) == [1, 0, 14, 0, 14, 0, 2]
    assert "'ʘ'" in caplog.text


@pytest.mark.unit
def test_bound_phonemes_cuts_at_word_gaps_and_never_exceeds_the_limit() -> None:
    word = ["a", "b", "c", " "]
    pieces = bound_phonemes(word * 10, 9)
    assert all(len(piece) <= 9 for piece in pieces)
    assert [p for piece in pieces for p in piece] == word * 10
    assert all(piece[-1] == " " for piece in pieces[:-1])  # cut after a word gap
    assert bound_phonemes(list("x" * 25), 10) == [list("x" * 10), list("x" * 10), list("x" * 5)]
    assert bound_phonemes(list("short"), None) == [list("short")]


@pytest.mark.unit
def test_phonemizing_frees_everything_it_allocates() -> None:
    # piper-tts's own bridge keeps every clause's tuple and string: ~160 B per clause,
    # 240 KB over these 500 calls, and the daemon's RSS grew with every request.
    def run() -> None:
        espeak.sentences("en-us", "Door open, lights off. Good night!")

    run()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for _ in range(500):
            run()
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert grown < 20_000, f"{grown} bytes kept after 500 calls"


@pytest.mark.unit
def test_espeak_voice_is_set_only_when_it_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each espeak_SetVoiceByName mallocs a copy of the voice that only synthesis frees:
    # set per call, it leaked ~1.4 KB of native heap per request (the soak's RSS growth).
    calls: list[str] = []
    set_voice = espeakbridge.set_voice

    def counted(voice: str) -> None:
        calls.append(voice)
        set_voice(voice)

    monkeypatch.setattr(espeakbridge, "set_voice", counted)
    monkeypatch.setattr(espeak, "_voice", None)
    first = [espeak.clauses("en-us", "Door open.") for _ in range(3)]
    espeak.clauses("de", "Tür offen.")
    again = espeak.clauses("en-us", "Door open.")
    assert calls == ["en-us", "de", "en-us"]
    assert first == [again] * 3
