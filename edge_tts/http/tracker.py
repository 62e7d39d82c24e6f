"""What became of each request, for `GET /requests/{id}`: a listener on the pipeline's
reporters (speech/listeners.py) that keeps the latest event of every request, by id: it
overrides `on_event` alone, as it keeps every kind alike.

Requests of every door are kept (an MQTT sender may ask over HTTP too), the most recent
MAX_REQUESTS, each for at most MAX_AGE_S after its last event: memory stays bounded
however many requests pass. A waiter (`?wait=true`) is woken on its event loop when the
request's final event comes.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ..speech.listeners import Listener
from ..speech.outcome import Event

MAX_REQUESTS = 1000
MAX_AGE_S = 3600.0


@dataclass
class Tracked:
    event: dict[str, Any]
    final: bool
    at: float
    waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = field(default_factory=list)


class RequestTracker(Listener):
    def __init__(self, max_requests: int = MAX_REQUESTS, max_age_s: float = MAX_AGE_S) -> None:
        self.max_requests = max_requests
        self.max_age_s = max_age_s
        self._lock = threading.Lock()
        self._requests: OrderedDict[str, Tracked] = OrderedDict()  # least recent first

    # --- from the pipeline (any thread) ----------------------------------------------

    def on_event(self, event: Event) -> None:
        body = json.loads(event.payload)  # the very event the MQTT reporter publishes
        final = event.final
        request_id = event.job.request.id
        with self._lock:
            old = self._requests.pop(request_id, None)
            if old is not None and old.final and not final:
                # A new request under an id used before (another text): its own entry.
                old = None
            tracked = Tracked(body, final, time.monotonic(), old.waiters if old else [])
            self._requests[request_id] = tracked
            self._trim()
            waiters, tracked.waiters = (tracked.waiters, []) if final else ([], tracked.waiters)
        for loop, ready in waiters:
            loop.call_soon_threadsafe(ready.set)

    def _trim(self) -> None:
        oldest_kept = time.monotonic() - self.max_age_s
        while self._requests:
            request_id, tracked = next(iter(self._requests.items()))
            if len(self._requests) <= self.max_requests and tracked.at >= oldest_kept:
                break
            del self._requests[request_id]
            for loop, ready in tracked.waiters:  # they find it gone and answer 404
                loop.call_soon_threadsafe(ready.set)

    # --- from the event loop ---------------------------------------------------------

    def get(self, request_id: str) -> tuple[dict[str, Any], bool] | None:
        """The latest event of the request, and whether it is final; None: unknown."""
        with self._lock:
            self._trim()
            tracked = self._requests.get(request_id)
            return None if tracked is None else (tracked.event, tracked.final)

    async def wait_final(
        self, request_id: str, timeout: float
    ) -> tuple[dict[str, Any], bool] | None:
        """As `get`, once the request's final event has come or `timeout` has passed."""
        ready = asyncio.Event()
        with self._lock:
            tracked = self._requests.get(request_id)
            if tracked is None or tracked.final:
                return None if tracked is None else (tracked.event, True)
            tracked.waiters.append((asyncio.get_running_loop(), ready))
        try:
            async with asyncio.timeout(timeout):
                await ready.wait()
        except TimeoutError:
            pass
        finally:
            self._forget(request_id, ready)
        return self.get(request_id)

    def _forget(self, request_id: str, ready: asyncio.Event) -> None:
        with self._lock:
            tracked = self._requests.get(request_id)
            if tracked is not None:
                tracked.waiters = [(lp, r) for lp, r in tracked.waiters if r is not ready]
