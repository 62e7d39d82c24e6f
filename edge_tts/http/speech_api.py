"""Speech for a client that plays it itself: OpenAI's `POST /v1/audio/speech` and Piper's
`POST /synthesize`, both streamed as the decoder makes the audio (audio_out.py)."""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from ..voice.base import Tuning
from ..voice.registry import Voices
from . import fields
from .audio_out import Answer, stream
from .errors import bad_request
from .shared import DOOR

FORMATS = ("wav", "pcm")
OPENAI_PCM_RATE = 24_000  # OpenAI's contract: pcm is 24 kHz 16-bit mono, whatever the voice
# OpenAI's voice names (alloy, ash, nova, marin, cedar, and the ones it adds): one
# lower-case word of three letters or more. Not one of ours or a language, such a name is
# the default voice, so a tool written for OpenAI works unchanged; a name like ours
# (en_US-joe-medium) or a language code ("fr") must be one we have.
OPENAI_VOICE_NAME = re.compile(r"[a-z]{3,20}")
_OPENAI_FIELDS = {"model", "input", "voice", "response_format", "speed", "instructions"}
_OPENAI_FIELDS |= {"stream_format", "text_format"}


async def openai_speech(request: web.Request) -> web.StreamResponse:
    """OpenAI's speech API: `input` (text, or SSML as on every door), `voice` (a voice's
    name, a language, or an OpenAI voice name for the default voice; also as `{"id":
    ...}`), `response_format` wav (at the voice's rate, default) or pcm (24 kHz, as
    OpenAI's contract fixes it), `speed` 0.25-4; `model` and `instructions` are accepted
    and ignored."""
    door = request.app[DOOR]
    body = await fields.read_json(request, door.settings.read_timeout)
    fields.unknown(body, _OPENAI_FIELDS)
    text = fields.speech(body, "input", door.queue.max_text_chars)
    fmt = _format(body)
    if body.get("stream_format") not in (None, "audio"):
        raise bad_request("stream_format must be 'audio' (no server-sent events)", "stream_format")
    voice, language = voice_or_language(door.voices, _openai_voice(body))
    speed = fields.number(body, "speed", 0.25, 4.0)
    answer = Answer.open(door, text, "input", voice=voice, language=language, speed=speed)
    return await stream(request, answer, fmt, OPENAI_PCM_RATE if fmt == "pcm" else None)


def _openai_voice(body: dict[str, Any]) -> str | None:
    """The voice's name; the SDK sends a custom voice as {"id": name}."""
    given = body.get("voice")
    if isinstance(given, dict):
        if set(given) != {"id"}:
            raise bad_request('a voice object must be {"id": name}', "voice", "invalid_voice")
        return fields.optional_text(given, "id")
    return fields.optional_text(body, "voice")


def _format(body: dict[str, Any]) -> str:
    fmt = body.get("response_format", "wav")  # OpenAI's default, mp3, is not made here
    if fmt is None:
        fmt = "wav"
    if not isinstance(fmt, str) or fmt not in FORMATS:
        raise bad_request(
            f"response_format {str(fmt)[:20]!r} is not supported; supported: wav (at the "
            "voice's rate), pcm (16-bit mono at 24 kHz, as OpenAI's)",
            "response_format",
            "unsupported_format",
        )
    return str(fmt)


def voice_or_language(voices: Voices, voice: str | None) -> tuple[str | None, str | None]:
    """(voice name, language) for the engine from what a client calls a voice."""
    if voice in voices.all():
        return voice, None
    if voice is None:
        return None, None
    if voices.for_language(voice) is not None:
        return None, voice
    if OPENAI_VOICE_NAME.fullmatch(voice.lower()):
        return None, None
    names = ", ".join(voices.all())
    languages = ", ".join(sorted({v.language for v in voices.all().values()}))
    raise bad_request(
        f"no voice {voice!r}: give a voice's name ({names}) or a language ({languages})",
        "voice",
        "invalid_voice",
    )


# --- Piper's /synthesize ---------------------------------------------------------------


async def piper_synthesize(request: web.Request) -> web.StreamResponse:
    """The JSON body of Piper's `python -m piper.http_server` (on `/synthesize`, and on
    `/` as Piper 1.3 documents it): `text`, `voice`, `speaker`, `speaker_id`,
    `length_scale`, `noise_scale`, `noise_w_scale` → audio/wav; also ours, `text_format`
    ("ssml" or "text"). As Piper does: an unknown voice is the default voice, the scales
    may be numbers written as strings ("1.5"), other fields are ignored."""
    door = request.app[DOOR]
    body = await fields.read_json(request, door.settings.read_timeout)
    text = fields.speech(body, "text", door.queue.max_text_chars)
    name = fields.optional_text(body, "voice")
    voice = name if name in door.voices.all() else None
    speaker = fields.speaker(body, "speaker_id") or fields.speaker(body, "speaker")
    if not door.voices.get(voice).speakers:
        speaker = None  # a one-speaker voice: Piper ignores what a client names
    tuning = Tuning(
        length_scale=fields.number(body, "length_scale", 0.1, 10.0, strings=True),
        noise_scale=fields.number(body, "noise_scale", 0.0, 2.0, strings=True),
        noise_w=_noise_w(body),
    )
    answer = Answer.open(door, text, "text", voice=voice, speaker=speaker, tuning=tuning)
    return await stream(request, answer, "wav")


def _noise_w(body: dict[str, Any]) -> float | None:
    # Piper's server reads noise_w_scale; its docstring and older clients say noise_w.
    given = fields.number(body, "noise_w_scale", 0.0, 2.0, strings=True)
    return given if given is not None else fields.number(body, "noise_w", 0.0, 2.0, strings=True)


async def piper_info(request: web.Request) -> web.Response:
    """Piper's `GET /info`: the default voice's name, language and speakers. `last` (the
    latest synthesis, for Piper's test page) is not kept here: always null."""
    door = request.app[DOOR]
    voice = door.voices.default
    speakers = max(1, len(voice.speakers))
    described = {"name": voice.name, "language": voice.language, "num_speakers": speakers}
    return web.json_response({"voice": described, "last": None})
