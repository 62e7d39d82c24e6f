"""What every route of one HTTP server shares (apart from the server module, which
builds it, so that the routes import no server)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aiohttp import web

from ..config import HttpSettings, QueueSettings
from ..core.telemetry import Telemetry
from ..speech.jobs import Job
from ..speech.responses import Responses
from ..voice.registry import Voices
from .browser import Hosts
from .pool import AudioPool
from .tracker import RequestTracker


@dataclass(frozen=True)
class Door:
    settings: HttpSettings
    queue: QueueSettings
    voices: Voices
    responses: Responses  # the engine's, shared with every remote door
    telemetry: Telemetry
    pool: AudioPool  # /invoke's audio until /download takes it
    tracker: RequestTracker  # what became of each request (/say, GET /requests/{id})
    submit: Callable[[Job], None]  # the pipeline's: a request to play here
    problems: Callable[[], list[str]]  # the daemon's, for /health
    gauges: Callable[[], Mapping[str, object]]  # the daemon's, for /metrics
    token: str | None  # clients must send it as a bearer token; None: no token
    hosts: Hosts  # the names clients may reach the server by (the Host header)
    max_body: int  # bytes a request's body may have


DOOR = web.AppKey("door", Door)  # the application's shared state, for every route
