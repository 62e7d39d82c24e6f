"""`describe` → `info`: the configured voices as Home Assistant lists them."""

from __future__ import annotations

from wyoming.event import Event
from wyoming.info import Attribution, Info, TtsProgram, TtsVoice, TtsVoiceSpeaker

from ..core.program import PROGRAM, program_version
from ..voice.base import SpeechVoice
from ..voice.registry import Voices

_ATTRIBUTION = Attribution(name=PROGRAM, url="")  # not published anywhere to link to
# Home Assistant's pipelines name Chinese with a region (zh-cn, zh-tw, zh-hk); the Baker
# corpus our Mandarin voice comes from is Mainland Mandarin.
_REGION_OF_BARE_LANGUAGE = {"zh": "CN"}


def info_event(voices: Voices) -> Event:
    """The answer to describe. wyoming 1.10 reads SSML (`text_format`) but has no field
    to advertise it: `supports_ssml` is ours, beside the program's own fields (a client
    that does not know it skips it), and the description says it too."""
    event = describe(voices).event()
    for program in event.data["tts"]:
        program["supports_ssml"] = True
    return event


def describe(voices: Voices) -> Info:
    """Every configured voice, by its name in the settings, with its language and speakers.
    Nothing is loaded: a voice that is not loaded yet is listed all the same."""
    listed = [_voice(name, voice) for name, voice in voices.all().items()]
    program = TtsProgram(
        name=PROGRAM,
        attribution=_ATTRIBUTION,
        installed=True,
        description="Piper voices on onnxruntime, from the edge-tts daemon; reads SSML",
        version=program_version(),
        voices=listed,
        supports_synthesize_streaming=True,
    )
    return Info(tts=[program])


def wyoming_language(language: str) -> str:
    """Our front-end's code ("en-us", "zh") as Piper's Wyoming voices give it ("en_US",
    "zh_CN"), which Home Assistant matches against a pipeline's language."""
    primary, _, region = language.strip().replace("-", "_").partition("_")
    region = region or _REGION_OF_BARE_LANGUAGE.get(primary.lower(), "")
    return f"{primary.lower()}_{region.upper()}" if region else primary.lower()


def _voice(name: str, voice: SpeechVoice) -> TtsVoice:
    speakers = [TtsVoiceSpeaker(name=speaker) for speaker in voice.speakers]
    return TtsVoice(
        name=name,
        attribution=_ATTRIBUTION,
        installed=True,
        description=f"{name} ({voice.name})",
        version=None,
        languages=[wyoming_language(voice.language)],
        speakers=speakers or None,
    )
