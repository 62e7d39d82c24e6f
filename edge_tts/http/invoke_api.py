"""The seed's service: `POST /invoke` {text, speed} → {"audio_id"}, then
`GET /download?audio_id=…` → the WAV, once. The audio waits in a bounded pool (pool.py):
a full pool answers 503 with Retry-After before any synthesis starts, and audio that
cannot fit it 413, before the synthesis when the text's length tells, else as soon as
the audio made passes the pool's size."""

from __future__ import annotations

import numpy as np
from aiohttp import web

from ..text.scripts import script_of
from . import fields
from .audio_out import WAV_HEADER_BYTES, Answer, wav_bytes
from .errors import ApiError
from .pool import PoolFull, Reservation, TooLarge
from .shared import DOOR, Door
from .speech_api import voice_or_language

_FIELDS = {"text", "text_format", "speed", "voice", "speaker"}
# Seconds of speech per character at speed 1, as the voices read (measured on the
# packaged voices: ~14 Latin characters a second, ~4 Chinese ones): what a request
# reserves. A text is refused before synthesis only when even speech FASTEST times
# quicker than that would not fit.
SECONDS_PER_CHAR = 0.075
SECONDS_PER_HAN = 0.25
FASTEST = 2.5


async def invoke(request: web.Request) -> web.Response:
    door = request.app[DOOR]
    body = await fields.read_json(request, door.settings.read_timeout)
    fields.unknown(body, _FIELDS)
    text = fields.speech(body, "text", door.queue.max_text_chars)
    speed = fields.number(body, "speed", 0.25, 4.0)
    voice, language = voice_or_language(door.voices, fields.optional_text(body, "voice"))
    speaker = fields.speaker(body, "speaker")
    rate = door.voices.choose(voice, language).sample_rate
    try:
        # Before the synthesis starts: a full pool, or a text too long for it, costs nothing.
        reservation = _reserve(door, expected_bytes(body["text"], rate, speed))
        try:
            answer = Answer.open(
                door, text, "text", voice=voice, language=language, speaker=speaker, speed=speed
            )
            try:
                pcm = await _made(door, answer, reservation)
            finally:
                answer.cancel()
            audio_id = door.pool.put(reservation, wav_bytes(pcm, answer.rate))
        except BaseException:
            door.pool.release(reservation)
            raise
    except TooLarge as large:
        raise _too_large(door, large) from None
    except PoolFull as full:
        raise _busy(full) from None
    return web.json_response(
        {
            "audio_id": audio_id,
            "audio_ms": round(len(pcm) / answer.rate * 1000),
            "sample_rate": answer.rate,
            "expires_in_s": door.settings.pool_ttl,
        }
    )


async def download(request: web.Request) -> web.Response:
    door = request.app[DOOR]
    audio_id = request.query.get("audio_id", "")
    data = door.pool.take(audio_id) if audio_id else None
    if data is None:
        raise ApiError(
            404,
            "unknown_audio_id",
            "no audio with this audio_id: it was downloaded already, it expired, or it "
            "was never made",
            param="audio_id",
        )
    return web.Response(body=data, content_type="audio/wav", headers={"Cache-Control": "no-store"})


def expected_bytes(text: str, rate: int, speed: float | None) -> int:
    """The WAV a text is expected to make (see SECONDS_PER_CHAR)."""
    han = sum(1 for c in text if script_of(c) == "CJK")
    seconds = ((len(text) - han) * SECONDS_PER_CHAR + han * SECONDS_PER_HAN) / (speed or 1.0)
    return WAV_HEADER_BYTES + round(seconds * rate) * 2


def _reserve(door: Door, expected: int) -> Reservation:
    least = WAV_HEADER_BYTES + (expected - WAV_HEADER_BYTES) // FASTEST
    if least > door.pool.max_bytes:
        raise TooLarge(int(least), door.pool.max_bytes)
    return door.pool.reserve(expected)


async def _made(door: Door, answer: Answer, reservation: Reservation) -> np.ndarray:
    """The whole audio, its reservation grown with every piece (TooLarge, PoolFull)."""
    parts = []
    size = WAV_HEADER_BYTES
    async for pcm in answer.pieces():
        size += len(pcm) * 2
        door.pool.grow(reservation, size)
        parts.append(pcm)
        answer.taken(pcm)
    return np.concatenate(parts) if parts else np.zeros(0, np.int16)


def _too_large(door: Door, large: TooLarge) -> ApiError:
    limit_mb = door.pool.max_bytes / 1024 / 1024
    return ApiError(
        413,
        "audio_too_large",
        f"the audio of this text ({large.size} bytes or more) cannot fit the audio pool "
        f"(http.pool_mb {limit_mb:g} MiB): send a shorter text, or use /v1/audio/speech, "
        "which streams",
        param="text",
    )


def _busy(full: PoolFull) -> ApiError:
    return ApiError(
        503,
        "pool_full",
        f"the audio pool is full ({full}); download what was made, or try again later",
        headers={"Retry-After": str(full.retry_after)},
    )
