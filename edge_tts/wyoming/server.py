"""The Wyoming TTS server: one part of the daemon (lifecycle.py), on `wyoming.uri`.

An asyncio loop in the thread `wyoming` accepts connections (at most
`wyoming.max_clients` at once; one more gets an `error` event and is closed) and runs a
`Connection` for each. Synthesis runs on the pipeline's workers, below local playback
(speech/responses.py, speech/schedule.py), never on the loop. The wyoming package gives
the event types and their writer; its AsyncServer is not used, because its reader reads
any data length a client announces and it has no limit on connections and no idle
timeout.

An address that cannot be bound (the port is taken) degrades the daemon, which says so
in its status and telemetry and tries again (core/loop_server.py); MQTT requests are
spoken all the same.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlparse

from ..config import Settings
from ..core.loop_server import LoopServer, remove_socket
from ..core.telemetry import Telemetry
from ..speech.responses import Responses
from ..voice.registry import Voices
from .connection import Connection
from .context import Context
from .info import info_event
from .protocol import data_limit

_LOGGER = logging.getLogger(__name__)


class WyomingServer(LoopServer):
    kind = "Wyoming"

    def __init__(
        self,
        settings: Settings,
        voices: Voices,
        responses: Responses,
        telemetry: Telemetry,
    ) -> None:
        if settings.wyoming.uri is None:
            raise ValueError("the Wyoming server needs wyoming.uri")
        super().__init__(settings.wyoming.uri, "wyoming")
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
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def clients(self) -> int:
        return len(self._connections)

    # --- the loop (thread "wyoming") -------------------------------------------------

    async def _open(self) -> asyncio.Server:
        return await _start_server(self.uri, self._accept, self._ctx.max_data)

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

    async def _close_connections(self) -> None:
        for task in self._connections:
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)


async def _start_server(
    uri: str, accept: Callable[..., Awaitable[None]], limit: int
) -> asyncio.Server:
    """Listen on tcp://HOST:PORT or unix:///PATH (checked by the settings already);
    `limit` bounds the header line a client may send."""
    parsed = urlparse(uri)
    if parsed.scheme == "unix":
        remove_socket(uri)  # one left by a daemon that was killed
        return await asyncio.start_unix_server(accept, path=parsed.path, limit=limit)
    return await asyncio.start_server(accept, host=parsed.hostname, port=parsed.port, limit=limit)
