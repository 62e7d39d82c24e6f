"""Waiting for conditions, never for time, and stopping what a test started.

A test on a busy machine (CI, a Pi running other things) gets a fraction of a core at
unpredictable moments: a sleep long enough on an idle laptop is too short there. So a
test waits for the condition it needs (a log line, a message, a file, a counter) with a
generous deadline, and a timeout says what was awaited and what was seen instead.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# Generous on purpose: a deadline only matters when something is broken, and then the
# failure message (not the wait) is what helps. Speed is measured in bench/, not here.
DEFAULT_TIMEOUT_S = 30.0
POLL_INTERVAL_S = 0.02
# A daemon start: loading and warming up the voice (two longest-possible sentences: about
# 15 s of CPU) took a few seconds on an idle 2-core machine, 60-240 s and more at a load
# average of 10-12. So the wait for READY=1 has a nominal deadline that is extended while
# the daemon keeps using CPU (see daemon_proc.wait_ready), up to a cap.
READY_TIMEOUT_S = 120.0
READY_STALL_S = 60.0  # no CPU used for this long: hung, or waiting for something else
READY_MAX_S = 900.0
# One request: synthesis and real-time playback, behind others, on a busy machine.
REQUEST_TIMEOUT_S = 120.0


def wait_until(
    check: Callable[[], T | None],
    timeout: float = DEFAULT_TIMEOUT_S,
    what: str = "",
    detail: Callable[[], str] | None = None,
    interval: float = POLL_INTERVAL_S,
) -> T:
    """Call `check` until it returns something truthy, and return that.

    For conditions nothing notifies about (a file, a log line, another process's state);
    where a Condition or an Event exists, wait on it instead. On timeout the
    AssertionError names `what` and appends `detail()` (a log tail, the messages seen).
    """
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() >= deadline:
            message = f"timed out after {timeout:g} s waiting for {what or check}"
            if detail is not None:
                message += f"\n{detail()}"
            raise AssertionError(message)
        time.sleep(interval)


def stop_process(proc: subprocess.Popen[bytes] | subprocess.Popen[str], timeout: float = 15) -> int:
    """SIGTERM, wait up to `timeout`, then SIGKILL: the process is gone when this returns,
    also when it ignored the polite request. Returns its exit status."""
    if proc.poll() is None:
        proc.terminate()
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait(timeout)
