"""Which connections the HTTP server serves (door.py): aiohttp's connection factory with
limits on connections, in all and per client address, a 503 for those beyond them, and
aiohttp's own errors answered as JSON."""

from __future__ import annotations

import asyncio
import ipaddress
import math
import time
from collections import Counter
from typing import Any

from aiohttp import web

from ..core.telemetry import Telemetry
from .errors import error_body, log_error

REFUSAL_LINGER_S = 2.0  # a refused client's request is read and dropped for this long
REFUSAL_LOG_INTERVAL_S = 1.0
LOCAL = "local"  # the clients of a unix socket


class Server(web.Server):
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

    def __init__(self, server: Server) -> None:
        self._server = server

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        protocol = self._server.admit(transport)
        transport.set_protocol(protocol)
        protocol.connection_made(transport)


class _Handler(web.RequestHandler):
    """One connection; aiohttp's errors (a request it cannot parse, a handler that
    escaped the middleware) answered as JSON, logged in one line with the address."""

    def __init__(self, manager: Server, telemetry: Telemetry, client: str, **kwargs: Any) -> None:
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
