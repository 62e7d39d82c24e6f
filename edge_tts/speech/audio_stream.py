"""What a response hands its door, piece by piece: audio, then Finished or Failed; and
`AudioStream`, the one adapter that carries it from the synthesis workers to an asyncio
door's event loop (Wyoming's sender, the HTTP answer).

The stream stamps the response's timing as its door takes the pieces: first audio when
the door takes the first piece for its client, finished when it takes the end. A piece
counts as written (`Response.written`, the backlog bound) only when the door says its
client took it (`taken`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import numpy as np

from .timing import Timing


@dataclass(frozen=True)
class Failed:
    """The response cannot go on: `text` and `code` for the client's `error` event."""

    text: str
    code: str


@dataclass(frozen=True)
class Finished:
    """Every piece of the response has been emitted."""


Out = np.ndarray | Failed | Finished  # what a response hands its connection, in order
Emit = Callable[[Out], None]


def emit_to(queue: asyncio.Queue[Out], loop: asyncio.AbstractEventLoop) -> Emit:
    """An `Emit` that hands each piece from a synthesis worker to an asyncio door's
    `queue` (unbounded: the response's backlog limit bounds it)."""

    def emit(item: Out) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the door stopped
            loop.call_soon_threadsafe(queue.put_nowait, item)

    return emit


class StreamFailed(Exception):
    """The response failed: `text` and `code` say why, for the client."""

    def __init__(self, failed: Failed) -> None:
        super().__init__(failed.text)
        self.text = failed.text
        self.code = failed.code


class Streamed(Protocol):
    """What the stream needs of its response (responses.py's `Response`)."""

    @property
    def timing(self) -> Timing: ...
    @property
    def rate(self) -> int: ...
    @property
    def synth_seconds(self) -> float: ...
    def written(self, seconds: float) -> None: ...
    def cancel(self) -> None: ...


R = TypeVar("R", bound=Streamed)


class AudioStream(Generic[R]):
    """One response's audio, in order, on the door's event loop."""

    def __init__(self, open_response: Callable[[Emit], R]) -> None:
        """Opens the response (`open_response` with the emit that feeds this stream); on
        the door's running loop. What `open_response` raises goes to the caller."""
        queue: asyncio.Queue[Out] = asyncio.Queue()  # bounded by the response's backlog
        self._queue = queue
        self.response = open_response(emit_to(queue, asyncio.get_running_loop()))
        self.over = False  # the end (Finished or Failed) was taken

    @property
    def timing(self) -> Timing:
        return self.response.timing

    async def pieces(self) -> AsyncIterator[np.ndarray]:
        """Each piece as it is made, until the last; StreamFailed when it fails."""
        timing, rate = self.response.timing, self.response.rate
        while True:
            item = await self._queue.get()
            if isinstance(item, np.ndarray):
                timing.first_audio()
                timing.audio_seconds += len(item) / rate
                yield item
            elif isinstance(item, Failed):
                self.over = True
                raise StreamFailed(item)
            else:
                self.over = True
                timing.synth_seconds = self.response.synth_seconds  # its steps are done
                timing.finished()
                return

    def taken(self, pcm: np.ndarray) -> None:
        """The client (or the door for it) has this piece: the engine may make more."""
        self.response.written(len(pcm) / self.response.rate)

    def cancel(self) -> None:
        """The client is gone or the door gives up: the engine drops what is left. A
        stream that ended needs none (a finished response is out of the work already)."""
        if not self.over:
            self.response.cancel()
