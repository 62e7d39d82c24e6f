"""The HTTP server: one part of the daemon (daemon/lifecycle.py), on `http.uri`.

An asyncio loop in the thread `http` serves the application (routes.py) with aiohttp;
synthesis runs on the pipeline's workers as a remote response, below local playback
(speech/responses.py), never on the loop. aiohttp's own runner is used for the
application's start and stop only: the connections are served by `_Server`, which turns
away connections beyond `max_connections` with a 503 and answers aiohttp's own errors
(a header too large, a broken request line) as JSON with one log line, not a traceback.

Bounds: headers (MAX_LINE_BYTES, MAX_HEADERS), the body (`client_max_size`, from
`queue.max_text_chars`), the time a request may take to arrive (`read_timeout`: aiohttp
closes a connection whose request is not complete by then; the body's read has its own
timeout in fields.py), and a client that takes none of its audio (`write_timeout`).

An address that cannot be bound degrades the daemon (its status says so) and is tried
again every LISTEN_RETRY_S; everything else goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from aiohttp import web

from ..config import ConfigError, Settings
from ..daemon.telemetry import Telemetry
from ..speech.jobs import Job
from ..speech.responses import Responses
from ..voice.registry import Voices
from .errors import error_body, log_error
from .pool import AudioPool
from .routes import make_app
from .shared import Door
from .tracker import RequestTracker

_LOGGER = logging.getLogger("edge_tts.http")

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
LISTEN_RETRY_S = 10.0
MAX_LINE_BYTES = 8190  # the request line and each header line
MAX_HEADERS = 64
REFUSAL_LINGER_S = 2.0  # a refused client's request is read and dropped for this long


class Refused(ConfigError):
    """The server must not start as configured (beyond loopback without a token)."""


class HttpServer:
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
        self.uri = http.uri
        self.settings = http
        self.telemetry = telemetry
        self.pool = AudioPool(http.pool_entries, round(http.pool_mb * 1024 * 1024), http.pool_ttl)
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
        )
        # A text of max_text_chars as JSON, each character escaped (\uXXXX\uXXXX at worst).
        self.max_body = settings.queue.max_text_chars * 12 + 4096
        self.problem: str | None = None  # why it cannot listen, while it cannot
        self._thread = threading.Thread(target=self._run, name="http", daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._stop_requested = False
        self._tried = threading.Event()
        self._server: asyncio.Server | None = None
        self._web: _Server | None = None

    # --- the part (any thread) -------------------------------------------------------

    def start(self) -> None:
        """Listen; returns once the first attempt is done (bound, or degraded)."""
        self._thread.start()
        if not self._tried.wait(START_TIMEOUT_S):
            raise RuntimeError(f"the HTTP server did not start within {START_TIMEOUT_S:g} s")

    def stop(self) -> None:
        self._stop_requested = True
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop has ended already
                loop.call_soon_threadsafe(stopping.set)
        if self._thread.is_alive():
            self._thread.join(STOP_TIMEOUT_S)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def connections(self) -> int:
        web_server = self._web
        return web_server.open if web_server is not None else 0

    @property
    def address(self) -> str | tuple[str, int] | None:
        server = self._server
        if server is None or not server.sockets:
            return None
        name = server.sockets[0].getsockname()
        return (str(name[0]), int(name[1])) if isinstance(name, tuple) else str(name)

    def gauges(self) -> dict[str, object]:
        return {"http_connections": self.connections, "http_pool": self.pool.gauges()}

    # --- the loop (thread "http") -----------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        finally:
            self._tried.set()

    async def _main(self) -> None:
        stopping = self._stopping = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        if self._stop_requested:
            stopping.set()
        runner = web.AppRunner(make_app(self.door, self.max_body), access_log=None)
        await runner.setup()
        self._web = self._make_server(runner)
        try:
            while not await self._listen():
                self._tried.set()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(LISTEN_RETRY_S):
                        await stopping.wait()
                if stopping.is_set():
                    return
            self._tried.set()
            await stopping.wait()
        finally:
            await self._shutdown(runner)

    def _make_server(self, runner: web.AppRunner) -> _Server:
        app_server = runner.server
        assert app_server is not None  # set up above
        return _Server(
            app_server.request_handler,
            request_factory=app_server.request_factory,
            max_connections=self.settings.max_connections,
            telemetry=self.telemetry,
            handler_kwargs={
                "keepalive_timeout": self.settings.read_timeout,
                "max_line_size": MAX_LINE_BYTES,
                "max_field_size": MAX_LINE_BYTES,
                "max_headers": MAX_HEADERS,
                "access_log": None,
            },
        )

    async def _listen(self) -> bool:
        assert self._web is not None
        try:
            self._server = await _start_server(self.uri, self._web)
        except OSError as err:
            problem = f"cannot listen on {self.uri}: {err.strerror or err}"
            if problem != self.problem:
                _LOGGER.error("HTTP server %s; trying again every %g s", problem, LISTEN_RETRY_S)
            self.problem = problem
            return False
        if self.problem is not None:
            _LOGGER.info("HTTP server recovered")
        self.problem = None
        address = self.address
        where = f"{address[0]}:{address[1]}" if isinstance(address, tuple) else self.uri
        token = "a bearer token" if self.door.token else "no token (loopback only)"
        _LOGGER.info("HTTP server listening on %s, with %s", where, token)
        return True

    async def _shutdown(self, runner: web.AppRunner) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        if self._web is not None:
            self._web.pre_shutdown()  # idle connections close; requests in flight...
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STOP_TIMEOUT_S):
                    await self._web.shutdown(STOP_TIMEOUT_S / 2)  # ...are cancelled
        await runner.cleanup()
        if server is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STOP_TIMEOUT_S):
                    await server.wait_closed()
        _remove_socket(self.uri)


class _Server(web.Server):
    """aiohttp's connection factory with a limit on connections and JSON errors. A
    client that goes away cancels its handler (`handler_cancellation`): its response is
    dropped from the engine at once."""

    def __init__(
        self,
        handler: Any,
        *,
        request_factory: Any,
        max_connections: int,
        telemetry: Telemetry,
        handler_kwargs: dict[str, Any],
    ) -> None:
        super().__init__(handler, request_factory=request_factory, handler_cancellation=True)
        self.max_connections = max_connections
        self.telemetry = telemetry
        self.open = 0  # connections made and not lost
        self._pending = 0  # handlers made whose connection is not made yet
        self._handler_kwargs = handler_kwargs

    def __call__(self) -> Any:
        if self.open + self._pending >= self.max_connections:
            self.telemetry.count("http_busy")
            return _Refusal(self.max_connections)
        self._pending += 1
        return _Handler(
            self, self.telemetry, loop=asyncio.get_running_loop(), **self._handler_kwargs
        )

    def connection_made(self, handler: web.RequestHandler, transport: asyncio.Transport) -> None:
        self._pending -= 1
        self.open += 1
        super().connection_made(handler, transport)

    def connection_lost(
        self, handler: web.RequestHandler, exc: BaseException | None = None
    ) -> None:
        self.open -= 1
        super().connection_lost(handler, exc)


class _Handler(web.RequestHandler):
    """One connection; aiohttp's errors (a request it cannot parse, a handler that
    escaped the middleware) answered as JSON, logged in one line with the address."""

    def __init__(self, manager: _Server, telemetry: Telemetry, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._telemetry = telemetry

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        self._telemetry.count("http_errors")
        reason = message or (str(exc) if exc else "") or "error"
        log_error(request.remote, "the request", status, reason.splitlines()[0][:200])
        if request.writer.output_size > 0:
            raise ConnectionError("the response is under way: no error can be sent")
        code = "bad_request" if status < 500 else "internal_error"
        resp = web.Response(
            status=status,
            body=error_body(
                status, code, reason.splitlines()[0][:200] if status < 500 else "internal error"
            ),
            content_type="application/json",
        )
        resp.force_close()
        return resp


class _Refusal(asyncio.Protocol):
    """A connection beyond `max_connections`: a 503 with Retry-After, then closed. The
    client's request is read and dropped meanwhile: a socket closed with unread data
    resets the connection, and the client would lose the answer."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        message = f"busy: {self._limit} connections are open; try again shortly"
        body = error_body(503, "too_many_connections", message)
        head = (
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
        )
        transport.write(head.encode() + body)
        if transport.can_write_eof():
            transport.write_eof()
        asyncio.get_running_loop().call_later(REFUSAL_LINGER_S, transport.close)
        peer = transport.get_extra_info("peername")
        log_error(str(peer[0]) if isinstance(peer, tuple) else None, "a connection", 503, message)

    def data_received(self, data: bytes) -> None:
        pass  # dropped: see the class

    def eof_received(self) -> bool:
        if self._transport is not None:
            self._transport.close()
        return False


async def _start_server(uri: str, factory: Callable[[], Any]) -> asyncio.Server:
    loop = asyncio.get_running_loop()
    parsed = urlparse(uri)
    if parsed.scheme == "unix":
        _remove_socket(uri)  # one left by a daemon that was killed
        return await loop.create_unix_server(factory, path=parsed.path)
    return await loop.create_server(factory, host=parsed.hostname, port=parsed.port or 0)


def _remove_socket(uri: str) -> None:
    parsed = urlparse(uri)
    if parsed.scheme == "unix":
        path = Path(parsed.path)
        if path.is_socket():
            path.unlink(missing_ok=True)
