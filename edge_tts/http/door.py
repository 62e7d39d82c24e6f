"""The HTTP server: one part of the daemon (core/lifecycle.py), on `http.uri`.

An asyncio loop in the thread `http` serves the application (routes.py) with aiohttp;
synthesis runs on the pipeline's workers as a remote response, below local playback
(speech/responses.py), never on the loop. aiohttp's own runner is used for the
application's start and stop only: the connections are served by `admission.Server`, which turns
away connections beyond its limits with a 503 and answers aiohttp's own errors
(a header too large, a broken request line) as JSON with one log line, not a traceback.

Bounds: connections in all and per client address (`max_connections`,
`max_connections_per_client`: one address that stalls cannot lock out another), headers
(MAX_LINE_BYTES, MAX_HEADERS), the time a request's head may take to arrive
(`header_timeout`: aiohttp closes a connection whose next request is not complete by then),
the body (`client_max_size`, from `queue.max_text_chars`, and `read_timeout` in
fields.py), and a client that takes none of its audio (`write_timeout`).

An address that cannot be bound degrades the daemon (its status says so) and is tried
again (core/loop_server.py); everything else goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlparse

from aiohttp import web

from ..config import ConfigError, Settings
from ..core.loop_server import STOP_TIMEOUT_S, LoopServer, remove_socket
from ..core.telemetry import Telemetry
from ..speech.jobs import Job
from ..speech.responses import Responses
from ..voice.registry import Voices
from .admission import Server
from .browser import Hosts
from .pool import AudioPool
from .routes import make_app
from .shared import Door
from .tracker import RequestTracker

_LOGGER = logging.getLogger("edge_tts.http")

MAX_LINE_BYTES = 8190  # the request line and each header line
MAX_HEADERS = 64


class Refused(ConfigError):
    """The server must not start as configured (beyond loopback without a token)."""


class HttpServer(LoopServer):
    kind = "HTTP"

    def __init__(
        self,
        settings: Settings,
        voices: Voices,
        responses: Responses,
        telemetry: Telemetry,
        tracker: RequestTracker,
        submit: Callable[[Job], None],
        problems: Callable[[], list[str]],
        gauges: Callable[[], Mapping[str, object]],
    ) -> None:
        http = settings.http
        if http.uri is None:
            raise ValueError("the HTTP server needs http.uri")
        token = http.token()  # ConfigError: unreadable or too short
        if token is None and not http.loopback:
            raise Refused(
                f"http.uri {http.uri} is reachable from other machines, so a bearer token "
                "is needed: set http.token_file, or give the systemd credential "
                '"http-token" (LoadCredential=http-token:/path/to/file)',
                "http.uri",
            )
        super().__init__(http.uri, "http")
        self.settings = http
        self.telemetry = telemetry
        self.pool = AudioPool(http.pool_entries, round(http.pool_mb * 1024 * 1024), http.pool_ttl)
        # A text of max_text_chars as JSON, each character escaped (\uXXXX\uXXXX at worst).
        self.max_body = settings.queue.max_text_chars * 12 + 4096
        self.door = Door(
            settings=http,
            queue=settings.queue,
            voices=voices,
            responses=responses,
            telemetry=telemetry,
            pool=self.pool,
            tracker=tracker,
            submit=submit,
            problems=problems,
            gauges=gauges,
            token=token,
            hosts=Hosts.of(http),
            max_body=self.max_body,
        )
        self._runner: web.AppRunner | None = None
        self._web: Server | None = None

    @property
    def connections(self) -> int:
        web_server = self._web
        return web_server.open if web_server is not None else 0

    def gauges(self) -> dict[str, object]:
        return {"http_connections": self.connections, "http_pool": self.pool.gauges()}

    # --- the loop (thread "http") -----------------------------------------------------

    async def _setup(self) -> None:
        runner = self._runner = web.AppRunner(make_app(self.door, self.max_body), access_log=None)
        await runner.setup()
        self._web = self._make_server(runner)

    async def _open(self) -> asyncio.Server:
        assert self._web is not None
        return await _start_server(self.uri, self._web)

    def _listening_note(self) -> str:
        return ", with " + ("a bearer token" if self.door.token else "no token (loopback only)")

    def _make_server(self, runner: web.AppRunner) -> Server:
        app_server = runner.server
        assert app_server is not None  # set up above
        return Server(
            app_server.request_handler,
            request_factory=app_server.request_factory,
            max_connections=self.settings.max_connections,
            per_client=self.settings.max_connections_per_client,
            telemetry=self.telemetry,
            handler_kwargs={
                # aiohttp closes a connection whose next request's head has not arrived
                # within this, idle or trickling in: the header deadline.
                "keepalive_timeout": self.settings.header_timeout,
                "max_line_size": MAX_LINE_BYTES,
                "max_field_size": MAX_LINE_BYTES,
                "max_headers": MAX_HEADERS,
                "access_log": None,
            },
        )

    async def _close_connections(self) -> None:
        if self._web is not None:
            self._web.pre_shutdown()  # idle connections close; requests in flight...
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STOP_TIMEOUT_S):
                    await self._web.shutdown(STOP_TIMEOUT_S / 2)  # ...are cancelled
        if self._runner is not None:
            await self._runner.cleanup()


async def _start_server(uri: str, factory: Callable[[], Any]) -> asyncio.Server:
    loop = asyncio.get_running_loop()
    parsed = urlparse(uri)
    if parsed.scheme == "unix":
        remove_socket(uri)  # one left by a daemon that was killed
        return await loop.create_unix_server(factory, path=parsed.path)
    return await loop.create_server(factory, host=parsed.hostname, port=parsed.port or 0)
