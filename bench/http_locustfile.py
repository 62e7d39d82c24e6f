"""Locust users for bench/http_load.py: each posts announcement-length texts to
`/synthesize` (Piper's JSON body, which both servers take) and reads the streamed WAV,
timing the first body byte and the last. Run by http_load.py in a process of its own
(locust patches the standard library with gevent); the timings go to $HTTP_LOAD_OUT."""

from __future__ import annotations

import json
import os
import random
import time
from typing import Any

from locust import HttpUser, events, task

TEXTS = (
    "The front door is open.",
    "The washing machine has finished its cycle.",
    "Motion detected in the garden. The camera is recording.",
    "Good morning. It is seven degrees outside, with light rain expected after noon.",
    "Reminder: the recycling goes out tonight, and the bins are collected at six.",
    "The garage door has been open for ten minutes. Please close it before you leave.",
    "The dishwasher is done. The kitchen lights will turn off in five minutes.",
    "Battery low on the smoke detector in the hallway. Please replace it soon.",
)
_SAMPLES: list[dict[str, Any]] = []


class Announcer(HttpUser):
    def on_start(self) -> None:
        self.rng = random.Random(id(self))

    @task
    def synthesize(self) -> None:
        started = time.perf_counter()
        first: float | None = None
        size = 0
        status = 0
        retry_after = None
        try:
            with self.client.post(
                "/synthesize",
                json={"text": self.rng.choice(TEXTS)},
                stream=True,
                catch_response=True,
                name="/synthesize",
            ) as response:
                status = response.status_code
                retry_after = response.headers.get("Retry-After")
                for chunk in response.iter_content(8192):
                    if first is None and chunk:
                        first = time.perf_counter()
                    size += len(chunk)
                if status != 200:
                    response.failure(f"HTTP {status}")
        except Exception as err:  # counted as an error, not a crash of the run
            status = -1
            retry_after = repr(err)[:100]
        end = time.perf_counter()
        _SAMPLES.append(
            {
                "status": status,
                "ttfb_s": (first - started) if first else None,
                "ttlb_s": end - started,
                "bytes": size,
                "retry_after": retry_after,
                "at": end,
            }
        )


@events.test_stop.add_listener
def _save(**_: Any) -> None:
    out = os.environ.get("HTTP_LOAD_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(_SAMPLES, f)
