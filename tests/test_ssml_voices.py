"""SSML's `<voice>` by what it asks for, as the W3C orders it: a configured name wins;
else the first of its `languages` a voice speaks (else the text's writing system); then,
among the voices of that language, one of its `gender` (voices.*.gender) where one is
known to be; else the voice chosen so far stays (the language's, or the default)."""

from __future__ import annotations

from typing import Any

import pytest

from edge_tts.config import SynthesisSettings, settings_from_mapping
from edge_tts.config.sections import GENDERS
from edge_tts.speech.routing import Router
from edge_tts.text import ssml_elements
from edge_tts.text.ssml import parse
from edge_tts.voice.base import SpeechOptions
from edge_tts.voice.registry import Voices

from .support.fakes import FakeVoice
from .test_ssml import FakeMandarin

pytestmark = pytest.mark.unit


def fake(name: str, language: str = "en-us") -> FakeVoice:
    voice = FakeVoice()
    voice.name, voice.language = name, language
    return voice


JOE, JENNY, ALBA = fake("joe"), fake("jenny"), fake("alba", "en-gb")
BAKER = FakeMandarin()


def router(genders: dict[str, str | None]) -> Router:
    made = {"default": JOE, "jenny": JENNY, "alba": ALBA, "mandarin": BAKER}
    configured: dict[str, Any] = {name: {"gender": genders.get(name)} for name in made}
    settings = settings_from_mapping(
        {"device_id": "pi", "voices": configured, "default_voice": "default"}
    )
    return Router(SynthesisSettings(), Voices(settings, made))


KNOWN = router({"default": "male", "jenny": "female", "alba": "female", "mandarin": "female"})
UNKNOWN = router({})


def voices_of(body: str, routing: Router = KNOWN) -> list[str]:
    document = parse(f"<speak>{body}</speak>", max_chars=1000)
    return [c.voice.name for c in routing.plan(document, JOE, SpeechOptions())]


@pytest.mark.parametrize(
    ("body", "voices"),
    [
        ('<voice gender="female">Hello there.</voice>', ["jenny"]),  # the language's first
        ('<voice gender="male">Hello there.</voice>', ["joe"]),
        ('<voice gender="neutral">Hello there.</voice>', ["joe"]),  # none is: the default
        ('<voice gender="female">你好。</voice>', ["baker"]),
        ('<voice gender="male">你好。</voice>', ["baker"]),  # the language before the gender
        ('<voice languages="fr-FR zh-CN">Bonjour.</voice>', ["baker"]),  # the first we speak
        ('<voice languages="fr-FR de-DE">Bonjour.</voice>', ["joe"]),  # none: the text's
        ('<voice languages="en-GB" gender="female">Hello.</voice>', ["alba"]),
        ('<voice xml:lang="en-US" gender="female">Hello.</voice>', ["jenny"]),
        ('<voice name="default" gender="female">Hello.</voice>', ["joe"]),  # the name wins
        ('<voice name="en-US-JennyNeural" gender="female">Hello.</voice>', ["jenny"]),
        ('Hi. <voice gender="female">Hello. <lang xml:lang="zh">你好。</lang></voice>', None),
    ],
)
def test_voice_attributes_choose_the_best_configured_match(
    body: str, voices: list[str] | None
) -> None:
    expected = voices or ["joe", "jenny", "baker"]
    assert voices_of(body) == expected


def test_without_known_genders_the_language_decides_alone() -> None:
    assert voices_of('<voice gender="female">Hello there.</voice>', UNKNOWN) == ["joe"]
    assert voices_of('<voice gender="female">你好。</voice>', UNKNOWN) == ["baker"]


def test_the_genders_ssml_knows_are_the_settings() -> None:
    assert ssml_elements.GENDERS == GENDERS  # text/ cannot import config/: the same list
