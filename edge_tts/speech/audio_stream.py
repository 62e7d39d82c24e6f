"""What a response hands its door, piece by piece: audio, then Finished or Failed; and
the bridge that carries it from a synthesis worker to an asyncio door's event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


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
