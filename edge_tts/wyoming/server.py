"""The Wyoming TTS server: one part of the daemon (lifecycle.py), on `wyoming.uri`.

An asyncio loop in the thread `wyoming` accepts connections (at most
`wyoming.max_clients` at once; one more gets an `error` event and is closed) and runs a
`Connection` for each. Synthesis runs on the pipeline's workers, below local playback
(speech/responses.py, speech/schedule.py), never on the loop. The wyoming package gives
the event types and their writer; its AsyncServer is not used, because its reader reads
any data length a client announces and it has no limit on connections and no idle
timeout.

An address that cannot be bound (the port is taken) degrades the daemon, which says so
in its status and telemetry and tries again every LISTEN_RETRY_S; MQTT requests are
spoken all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlparse

from ..config import Settings
from ..daemon.telemetry import Telemetry
from ..speech.responses import Responses
from ..voice.registry import Voices
from .connection import Connection
from .context import Context
from .info import info_event
from .protocol import data_limit

_LOGGER = logging.getLogger(__name__)

START_TIMEOUT_S = 30.0  # for the loop to come up and try the address once
STOP_TIMEOUT_S = 10.0
LISTEN_RETRY_S = 10.0


class WyomingServer:
    def __init__(
        self,
        settings: Settings,
        voices: Voices,
        responses: Responses,
        telemetry: Telemetry,
    ) -> None:
        if settings.wyoming.uri is None:
            raise ValueError("the Wyoming server needs wyoming.uri")
        self.uri = settings.wyoming.uri
        self.max_clients = settings.wyoming.max_clients
        self.responses = responses  # the engine's, shared with every remote door
        max_data = data_limit(settings.queue.max_text_chars)
        self._ctx = Context(
            responses=responses,
            telemetry=telemetry,
            info=info_event(voices),
            max_text_chars=settings.queue.max_text_chars,
            max_data=max_data,
            idle_timeout=settings.wyoming.idle_timeout,
            lead_in_ms=settings.audio.lead_in_ms,
        )
        self.problem: str | None = None  # why it cannot listen, while it cannot
        self._thread = threading.Thread(target=self._run, name="wyoming", daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._stop_requested = False
        self._tried = threading.Event()  # the first attempt to listen is done
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    # --- the part (any thread) -------------------------------------------------------

    def start(self) -> None:
        """Listen; returns once the first attempt is done (bound, or degraded)."""
        self._thread.start()
        if not self._tried.wait(START_TIMEOUT_S):
            raise RuntimeError(f"the Wyoming server did not start within {START_TIMEOUT_S:g} s")

    def stop(self) -> None:
        """Close every connection (their responses are dropped) and stop listening."""
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
    def clients(self) -> int:
        return len(self._connections)

    @property
    def address(self) -> str | tuple[str, int] | None:
        """Where it listens (the bound port, for tcp://HOST:0), None while it does not."""
        server = self._server
        if server is None or not server.sockets:
            return None
        name = server.sockets[0].getsockname()
        return (str(name[0]), int(name[1])) if isinstance(name, tuple) else str(name)

    # --- the loop (thread "wyoming") -------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        finally:
            self._tried.set()  # a start() still waiting learns of the end at once

    async def _main(self) -> None:
        stopping = self._stopping = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        if self._stop_requested:
            stopping.set()
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
            await self._shutdown()

    async def _listen(self) -> bool:
        try:
            self._server = await _start_server(self.uri, self._accept, self._ctx.max_data)
        except OSError as err:
            problem = f"cannot listen on {self.uri}: {err.strerror or err}"
            if problem != self.problem:
                _LOGGER.error("Wyoming server %s; trying again every %g s", problem, LISTEN_RETRY_S)
            self.problem = problem
            return False
        if self.problem is not None:
            _LOGGER.info("Wyoming server recovered")
        self.problem = None
        address = self.address
        where = f"{address[0]}:{address[1]}" if isinstance(address, tuple) else self.uri
        _LOGGER.info("Wyoming server listening on %s", where)
        return True

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = Connection(self._ctx, reader, writer)
        task = asyncio.current_task()
        if len(self._connections) >= self.max_clients or task is None:
            await connection.refuse(f"busy: {self.max_clients} clients are connected", "busy")
            return
        _LOGGER.debug("Wyoming %s connected", connection.peer)
        self._connections.add(task)
        try:
            await connection.serve()
        except asyncio.CancelledError:
            # The server stops (nothing awaits this task but the stop). Ending normally
            # spares asyncio 3.11's stream callback, which logs a cancelled task as an error.
            pass
        finally:
            self._connections.discard(task)

    async def _shutdown(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in self._connections:
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if server is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STOP_TIMEOUT_S):
                    await server.wait_closed()
        _remove_socket(self.uri)


async def _start_server(
    uri: str, accept: Callable[..., Awaitable[None]], limit: int
) -> asyncio.Server:
    """Listen on tcp://HOST:PORT or unix:///PATH (checked by the settings already);
    `limit` bounds the header line a client may send."""
    parsed = urlparse(uri)
    if parsed.scheme == "unix":
        _remove_socket(uri)  # one left by a daemon that was killed
        return await asyncio.start_unix_server(accept, path=parsed.path, limit=limit)
    return await asyncio.start_server(accept, host=parsed.hostname, port=parsed.port, limit=limit)


def _remove_socket(uri: str) -> None:
    parsed = urlparse(uri)
    if parsed.scheme == "unix":
        path = Path(parsed.path)
        if path.is_socket():  # never anything else a mistyped path might name
            path.unlink(missing_ok=True)
