"""The HTTP server: one part of the daemon (core/lifecycle.py), on `http.uri`.

An asyncio loop in the thread `http` serves the application (routes.py) with aiohttp;
synthesis runs on the pipeline's workers as a remote response, below local playback
(speech/responses.py), never on the loop. aiohttp's own runner is used for the
application's start and stop only: the connections are served by `_Server`, which turns
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
import ipaddress
import logging
import math
import time
from collections import Counter
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
from .browser import Hosts
from .errors import error_body, log_error
from .pool import AudioPool
from .routes import make_app
from .shared import Door
from .tracker import RequestTracker

_LOGGER = logging.getLogger("edge_tts.http")

MAX_LINE_BYTES = 8190  # the request line and each header line
MAX_HEADERS = 64
REFUSAL_LINGER_S = 2.0  # a refused client's request is read and dropped for this long
REFUSAL_LOG_INTERVAL_S = 1.0
LOCAL = "local"  # the clients of a unix socket


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
        self._web: _Server | None = None

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

    def _make_server(self, runner: web.AppRunner) -> _Server:
        app_server = runner.server
        assert app_server is not None  # set up above
        return _Server(
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


class _Server(web.Server):
    """aiohttp's connection factory with limits on connections, in all and per client
    address, and JSON errors. A client that goes away cancels its handler
    (`handler_cancellation`): its response is dropped from the engine at once."""

    def __init__(
        self,
        handler: Any,
        *,
        request_factory: Any,
        max_connections: int,
        per_client: int,
        telemetry: Telemetry,
        handler_kwargs: dict[str, Any],
    ) -> None:
        super().__init__(handler, request_factory=request_factory, handler_cancellation=True)
        self.max_connections = max_connections
        self.per_client = per_client
        self.telemetry = telemetry
        self.open = 0  # connections admitted and not lost
        self.by_client: Counter[str] = Counter()
        self._refused = 0  # refusals since the last logged one
        self._logged_at = -math.inf
        self._handler_kwargs = handler_kwargs

    def __call__(self) -> Any:
        return _Admission(self)

    def admit(self, transport: asyncio.Transport) -> asyncio.Protocol:
        """The protocol that serves a new connection: a handler, or a refusal when the
        server, or the client's own share of it, is full."""
        client = client_key(transport.get_extra_info("peername"))
        if self.open >= self.max_connections:
            return self._refuse(client, f"busy: {self.max_connections} connections are open")
        if client != LOCAL and self.by_client[client] >= self.per_client:
            return self._refuse(client, f"this address has {self.per_client} connections open")
        self.by_client[client] += 1
        return _Handler(
            self,
            self.telemetry,
            client,
            loop=asyncio.get_running_loop(),
            **self._handler_kwargs,
        )

    def _refuse(self, client: str, reason: str) -> asyncio.Protocol:
        """A 503; logged at most once a second (with how many went unlogged): a client
        that opens connections in a loop must not flood the journal."""
        self.telemetry.count("http_busy")
        message = f"{reason}; try again shortly"
        self._refused += 1
        now = time.monotonic()
        if now - self._logged_at >= REFUSAL_LOG_INTERVAL_S:
            also = f" ({self._refused - 1} more since the last line)" if self._refused > 1 else ""
            log_error(client, "a connection", 503, message + also)
            self._logged_at, self._refused = now, 0
        return _Refusal(message)

    def connection_made(self, handler: web.RequestHandler, transport: asyncio.Transport) -> None:
        self.open += 1
        super().connection_made(handler, transport)

    def connection_lost(
        self, handler: web.RequestHandler, exc: BaseException | None = None
    ) -> None:
        self.open -= 1
        if isinstance(handler, _Handler):
            self.by_client[handler.client] -= 1
            if self.by_client[handler.client] <= 0:
                del self.by_client[handler.client]
        super().connection_lost(handler, exc)


def client_key(peer: object) -> str:
    """What one client's connections are counted under: its address; for IPv6 its /64
    (one host is given a whole /64 to pick addresses from); LOCAL for a unix socket,
    whose clients (a reverse proxy among them) have no per-client limit."""
    if not isinstance(peer, tuple) or not peer:
        return LOCAL
    try:
        address = ipaddress.ip_address(str(peer[0]).split("%")[0])
    except ValueError:
        return str(peer[0])
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{address}/64", strict=False))
    return str(address)


class _Admission(asyncio.Protocol):
    """A new connection, before it is served: hands the transport to what `admit`
    chooses. Only once the connection is made is the client's address known."""

    def __init__(self, server: _Server) -> None:
        self._server = server

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        protocol = self._server.admit(transport)
        transport.set_protocol(protocol)
        protocol.connection_made(transport)


class _Handler(web.RequestHandler):
    """One connection; aiohttp's errors (a request it cannot parse, a handler that
    escaped the middleware) answered as JSON, logged in one line with the address."""

    def __init__(self, manager: _Server, telemetry: Telemetry, client: str, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._telemetry = telemetry
        self.client = client  # what its connection is counted under (client_key)

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
    """A connection beyond a limit: a 503 with Retry-After, then closed. The client's
    request is read and dropped meanwhile: a socket closed with unread data resets the
    connection, and the client would lose the answer."""

    def __init__(self, message: str) -> None:
        self._message = message
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        message = self._message
        body = error_body(503, "too_many_connections", message)
        head = (
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
        )
        transport.write(head.encode() + body)
        if transport.can_write_eof():
            transport.write_eof()
        asyncio.get_running_loop().call_later(REFUSAL_LINGER_S, transport.close)

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
        remove_socket(uri)  # one left by a daemon that was killed
        return await loop.create_unix_server(factory, path=parsed.path)
    return await loop.create_server(factory, host=parsed.hostname, port=parsed.port or 0)
