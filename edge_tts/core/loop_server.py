"""A front door's server as a part of the daemon: an asyncio loop in a thread of its own,
listening on a `tcp://HOST:PORT` or `unix:///PATH` URI (the Wyoming and HTTP servers).

`start` returns once the first attempt to listen is done. An address that cannot be
bound degrades the daemon, which says so (`problem`) and tries again every
`retry_s`; everything else goes on. `stop` closes the listener, then the subclass's
connections (`_close_connections`), and removes a unix socket it made.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from pathlib import Path
from urllib.parse import urlparse

_LOGGER = logging.getLogger(__name__)

START_TIMEOUT_S = 30.0  # for the loop to come up and try the address once
STOP_TIMEOUT_S = 10.0
LISTEN_RETRY_S = 10.0


class LoopServer:
    """Subclasses give `_open` (start listening) and `_close_connections`; `kind` names
    the server in logs ("HTTP", "Wyoming")."""

    kind = "server"
    retry_s = LISTEN_RETRY_S

    def __init__(self, uri: str, thread_name: str) -> None:
        self.uri = uri
        self.problem: str | None = None  # why it cannot listen, while it cannot
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._stop_requested = False
        self._tried = threading.Event()  # the first attempt to listen is done
        self._server: asyncio.Server | None = None

    # --- the part (any thread) -------------------------------------------------------

    def start(self) -> None:
        """Listen; returns once the first attempt is done (bound, or degraded)."""
        self._thread.start()
        if not self._tried.wait(START_TIMEOUT_S):
            raise RuntimeError(f"the {self.kind} server did not start within {START_TIMEOUT_S:g} s")

    def stop(self) -> None:
        """Close every connection and stop listening."""
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
    def address(self) -> str | tuple[str, int] | None:
        """Where it listens (the bound port, for tcp://HOST:0), None while it does not."""
        server = self._server
        if server is None or not server.sockets:
            return None
        name = server.sockets[0].getsockname()
        return (str(name[0]), int(name[1])) if isinstance(name, tuple) else str(name)

    # --- for subclasses (on the loop) --------------------------------------------------

    async def _setup(self) -> None:
        """Before the first attempt to listen."""

    async def _open(self) -> asyncio.Server:
        raise NotImplementedError

    async def _close_connections(self) -> None:
        """After the listener is closed, before waiting for it."""

    def _listening_note(self) -> str:
        """Said after the address when it listens."""
        return ""

    # --- the loop (its own thread) -----------------------------------------------------

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
        await self._setup()
        try:
            while not await self._listen():
                self._tried.set()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.retry_s):
                        await stopping.wait()
                if stopping.is_set():
                    return
            self._tried.set()
            await stopping.wait()
        finally:
            await self._shutdown()

    async def _listen(self) -> bool:
        try:
            self._server = await self._open()
        except OSError as err:
            problem = f"cannot listen on {self.uri}: {err.strerror or err}"
            if problem != self.problem:
                _LOGGER.error(
                    "%s server %s; trying again every %g s", self.kind, problem, self.retry_s
                )
            self.problem = problem
            return False
        if self.problem is not None:
            _LOGGER.info("%s server recovered", self.kind)
        self.problem = None
        address = self.address
        where = f"{address[0]}:{address[1]}" if isinstance(address, tuple) else self.uri
        _LOGGER.info("%s server listening on %s%s", self.kind, where, self._listening_note())
        return True

    async def _shutdown(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        await self._close_connections()
        if server is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STOP_TIMEOUT_S):
                    await server.wait_closed()
        remove_socket(self.uri)


def remove_socket(uri: str) -> None:
    """The unix socket `uri` names, if it is one (one left by a daemon that was killed)."""
    parsed = urlparse(uri)
    if parsed.scheme == "unix":
        path = Path(parsed.path)
        if path.is_socket():  # never anything else a mistyped path might name
            path.unlink(missing_ok=True)
