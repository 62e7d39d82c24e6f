"""What a client or a monitor asks about the device: `GET /voices` and `GET /health`."""

from __future__ import annotations

from aiohttp import web

from ..core.program import PROGRAM, program_version
from ..voice.base import SpeechVoice
from .shared import DOOR


async def voices(request: web.Request) -> web.Response:
    """Every configured voice by its name in the settings: language, speakers, rate and
    build. Nothing is loaded for it."""
    door = request.app[DOOR]
    default = door.voices.default
    listed = [_voice(name, v, v is default) for name, v in door.voices.all().items()]
    return web.json_response({"program": PROGRAM, "version": program_version(), "voices": listed})


def _voice(name: str, voice: SpeechVoice, default: bool) -> dict[str, object]:
    return {
        "name": name,
        "default": default,
        "model": voice.name,
        "language": voice.language,
        "speakers": voice.speakers,
        "sample_rate": voice.sample_rate,
        "loaded": voice.loaded,
        "sha256": voice.sha256,
        "build": voice.build.as_dict(),
    }


async def health(request: web.Request) -> web.Response:
    """200 {"status": "ok"}, or 503 {"status": "degraded", "problems": [...]}: what a
    load balancer or a fleet monitor polls. No token needed: it tells no secret."""
    problems = request.app[DOOR].problems()
    body = {"status": "degraded" if problems else "ok", "problems": problems}
    return web.json_response(body, status=503 if problems else 200)
