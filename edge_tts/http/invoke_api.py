"""The seed's service: `POST /invoke` {text, speed} → {"audio_id"}, then
`GET /download?audio_id=…` → the WAV, once. The audio waits in a bounded pool (pool.py);
a full pool answers 503 with Retry-After before any synthesis starts."""

from __future__ import annotations

from aiohttp import web

from . import fields
from .audio_out import Answer, wav_bytes
from .errors import ApiError
from .pool import PoolFull
from .shared import DOOR
from .speech_api import voice_or_language

_FIELDS = {"text", "text_format", "speed", "voice", "speaker"}


async def invoke(request: web.Request) -> web.Response:
    door = request.app[DOOR]
    body = await fields.read_json(request, door.settings.read_timeout)
    fields.unknown(body, _FIELDS)
    text = fields.speech(body, "text", door.queue.max_text_chars)
    speed = fields.number(body, "speed", 0.25, 4.0)
    voice, language = voice_or_language(door.voices, fields.optional_text(body, "voice"))
    speaker = fields.speaker(body, "speaker")
    try:
        door.pool.reserve()
    except PoolFull as full:
        raise _busy(full) from None
    answer: Answer | None = None
    try:
        answer = Answer.open(
            door, text, voice=voice, language=language, speaker=speaker, speed=speed
        )
        pcm = await answer.whole()
    except BaseException:
        door.pool.release()
        if answer is not None:
            answer.cancel()
        raise
    try:
        audio_id = door.pool.put(wav_bytes(pcm, answer.rate))
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


def _busy(full: PoolFull) -> ApiError:
    return ApiError(
        503,
        "pool_full",
        f"the audio pool is full ({full}); download what was made, or try again later",
        headers={"Retry-After": str(full.retry_after)},
    )
