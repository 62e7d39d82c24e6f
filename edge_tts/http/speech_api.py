"""Speech for a client that plays it itself: OpenAI's `POST /v1/audio/speech` and Piper's
`POST /synthesize`, both streamed as the decoder makes the audio (audio_out.py)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..voice.base import Tuning
from ..voice.registry import Voices
from . import fields
from .audio_out import Answer, stream
from .errors import bad_request
from .shared import DOOR

FORMATS = ("wav", "pcm")
# What OpenAI's clients send unless told otherwise: these are the default voice here, so
# a tool written for OpenAI works unchanged.
OPENAI_VOICES = frozenset(
    ["alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage", "shimmer", "verse"]
)
_OPENAI_FIELDS = {"model", "input", "voice", "response_format", "speed", "instructions"}
_OPENAI_FIELDS |= {"stream_format"}


async def openai_speech(request: web.Request) -> web.StreamResponse:
    """OpenAI's speech API: `input`, `voice` (a voice's name, a language, or one of
    OpenAI's voice names for the default voice), `response_format` wav or pcm (default
    wav), `speed` 0.25-4; `model` and `instructions` are accepted and ignored."""
    door = request.app[DOOR]
    body = await fields.read_json(request, door.settings.read_timeout)
    fields.unknown(body, _OPENAI_FIELDS)
    text = fields.text(body, "input", door.queue.max_text_chars)
    fmt = _format(body)
    if body.get("stream_format") not in (None, "audio"):
        raise bad_request("stream_format must be 'audio' (no server-sent events)", "stream_format")
    voice, language = voice_or_language(door.voices, fields.optional_text(body, "voice"))
    speed = fields.number(body, "speed", 0.25, 4.0)
    answer = Answer.open(door, text, voice=voice, language=language, speed=speed)
    return await stream(request, answer, fmt)


def _format(body: dict[str, Any]) -> str:
    fmt = body.get("response_format", "wav")  # OpenAI's default, mp3, is not made here
    if fmt is None:
        fmt = "wav"
    if not isinstance(fmt, str) or fmt not in FORMATS:
        raise bad_request(
            f"response_format {str(fmt)[:20]!r} is not supported; supported: wav, pcm "
            "(16-bit mono at the voice's rate, given in the X-Sample-Rate header)",
            "response_format",
            "unsupported_format",
        )
    return str(fmt)


def voice_or_language(voices: Voices, voice: str | None) -> tuple[str | None, str | None]:
    """(voice name, language) for the engine from what a client calls a voice."""
    if voice in voices.all():
        return voice, None
    if voice is None or voice.lower() in OPENAI_VOICES:
        return None, None
    if voices.for_language(voice) is not None:
        return None, voice
    names = ", ".join(voices.all())
    languages = ", ".join(sorted({v.language for v in voices.all().values()}))
    raise bad_request(
        f"no voice {voice!r}: give a voice's name ({names}) or a language ({languages})",
        "voice",
        "invalid_voice",
    )


# --- Piper's /synthesize ---------------------------------------------------------------


async def piper_synthesize(request: web.Request) -> web.StreamResponse:
    """The JSON body of Piper's `python -m piper.http_server`: `text`, `voice`,
    `speaker`, `speaker_id`, `length_scale`, `noise_scale`, `noise_w_scale` → audio/wav;
    also ours, `text_format` ("ssml" or "text"). As Piper does: an unknown voice is the
    default voice, other fields are ignored."""
    door = request.app[DOOR]
    body = await fields.read_json(request, door.settings.read_timeout)
    text = fields.speech(body, "text", door.queue.max_text_chars)
    name = fields.optional_text(body, "voice")
    voice = name if name in door.voices.all() else None
    speaker = fields.speaker(body, "speaker_id") or fields.speaker(body, "speaker")
    if not door.voices.get(voice).speakers:
        speaker = None  # a one-speaker voice: Piper ignores what a client names
    tuning = Tuning(
        length_scale=fields.number(body, "length_scale", 0.1, 10.0),
        noise_scale=fields.number(body, "noise_scale", 0.0, 2.0),
        noise_w=_noise_w(body),
    )
    answer = Answer.open(door, text, voice=voice, speaker=speaker, tuning=tuning)
    return await stream(request, answer, "wav")


def _noise_w(body: dict[str, Any]) -> float | None:
    # Piper's server reads noise_w_scale; its docstring and older clients say noise_w.
    given = fields.number(body, "noise_w_scale", 0.0, 2.0)
    return given if given is not None else fields.number(body, "noise_w", 0.0, 2.0)
