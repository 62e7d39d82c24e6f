"""The corpus of real-world documents (tests/support/ssml_corpus.py): each is read, not
refused, and says what it must; a few through the real voices."""

from __future__ import annotations

import numpy as np
import pytest

from edge_tts.speech.routing import Router
from edge_tts.speech.synthesis import render
from edge_tts.text import ssml
from edge_tts.text.document import Document
from edge_tts.text.readings import readable
from edge_tts.voice.base import SpeechOptions, SpeechVoice
from edge_tts.voice.two_stage import TwoStageVoice

from .support.ssml_corpus import CASES, Case
from .test_ssml import EN, ROUTER, real  # noqa: F401 (real: a fixture)


def speech(case: Case) -> str | Document:
    """As a door takes it: SSML when it looks like SSML, else plain text."""
    if ssml.looks_like_ssml(case.text):
        return ssml.parse(case.text, max_chars=5000)
    return case.text


@pytest.mark.unit
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_each_document_says_what_it_must(case: Case) -> None:
    chunks = ROUTER.plan(speech(case), EN, SpeechOptions())
    assert " | ".join(readable(chunk.text) for chunk in chunks) == case.said


@pytest.mark.unit
def test_the_corpus_covers_every_vendor() -> None:
    assert {case.source for case in CASES} >= {
        "Azure Speech",
        "Amazon Polly",
        "Alexa Skills Kit",
        "Google Cloud Text-to-Speech",
        "Home Assistant",
        "a language model's output",
    }


THROUGH_THE_VOICE = ("azure-voice-express-as", "azure-zh-voice", "polly-emphasis-and-xsampa")


@pytest.mark.model
@pytest.mark.parametrize("name", THROUGH_THE_VOICE)
def test_a_few_documents_through_the_real_voices(
    real: tuple[Router, SpeechVoice, TwoStageVoice],  # noqa: F811
    name: str,
) -> None:
    """Planned and rendered by the real voices: every chunk is speech (the phonemes an
    x-sampa reading becomes are the voice's), the Mandarin text by the Mandarin voice."""
    router, english, mandarin = real
    case = next(case for case in CASES if case.name == name)
    chunks = router.plan(speech(case), english, SpeechOptions(noise_scale=0.0, noise_w=0.0))
    for index, chunk in enumerate(chunks):
        pcm = np.concatenate(
            list(render(chunk.voice, chunk.text, chunk.options, index == 0, 22050))
        )
        assert len(pcm) / 22050 > 0.2 and np.abs(pcm).max() > 1000, chunk.text
    if name == "azure-zh-voice":
        assert [chunk.voice for chunk in chunks] == [mandarin]
