"""A fixed-capacity ring of int16 mono PCM between the writer threads and the audio callback.

The storage is allocated once. The reader (the PortAudio callback) never allocates array
data and only holds the lock for a memcpy; writers block on a Condition while the ring is
full. Positions (`frames_written`, `frames_read`) only grow, so the player can mark where
an utterance starts and ends and compare with `frames_read` to know what was handed out.
Dropped frames (clear, cut) count as read: both positions stay monotonic.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from .dsp import as_mono_int16, fade_out_gain

# How often a blocked writer re-checks its stop event. Stop events are plain flags set by
# other components (some override is_set() without ever being "set"), so nobody notifies us.
_STOP_POLL_S = 0.05


class RingBuffer:
    def __init__(self, capacity_frames: int) -> None:
        if capacity_frames <= 0:
            raise ValueError(f"capacity_frames must be positive, not {capacity_frames}")
        self.capacity = capacity_frames
        self._buf = np.zeros(capacity_frames, dtype=np.int16)
        self._cond = threading.Condition(threading.Lock())
        self._written = 0
        self._read = 0
        self._waiters = 0  # threads blocked in write()/wait_until_read(): notify only then

    @property
    def frames_written(self) -> int:
        return self._written

    @property
    def frames_read(self) -> int:
        return self._read

    def available(self) -> int:
        with self._cond:
            return self._written - self._read

    def free(self) -> int:
        with self._cond:
            return self.capacity - (self._written - self._read)

    def write(self, pcm: np.ndarray, stop: threading.Event, timeout: float | None = None) -> int:
        """Copy `pcm` in, blocking while full; returns frames written (short on stop/timeout)."""
        data = as_mono_int16(pcm)
        deadline = None if timeout is None else time.monotonic() + timeout
        done = 0
        with self._cond:
            # stop is checked under the lock: once whoever sets it has taken the lock
            # (e.g. to cut the ring), no frame of ours can land after the cut.
            while done < data.size and not stop.is_set():
                room = self.capacity - (self._written - self._read)
                if room:
                    done += self._copy_in(data[done : done + room])
                    continue
                wait = _remaining(deadline)
                if wait <= 0:
                    break
                self._wait(min(wait, _STOP_POLL_S))
        return done

    def read_into(self, out: np.ndarray) -> int:
        """Copy up to len(out) frames into `out`; never blocks for long, never allocates data."""
        with self._cond:
            n: int = min(len(out), self._written - self._read)
            if n:
                start = self._read % self.capacity
                first = min(n, self.capacity - start)
                out[:first] = self._buf[start : start + first]
                if n > first:
                    out[first:n] = self._buf[: n - first]
                self._read += n
                if self._waiters:
                    self._cond.notify_all()
        return n

    def clear(self) -> int:
        """Drop every unread frame; returns how many."""
        with self._cond:
            dropped = self._written - self._read
            self._read = self._written
            self._cond.notify_all()
        return dropped

    def cut(self, keep: int) -> int:
        """Fade out over the next `keep` unread frames and drop the rest; returns frames dropped.

        The kept frames are moved to the end of the unread region so that the dropped ones
        count as read and both positions stay monotonic.
        """
        with self._cond:
            unread = self._written - self._read
            keep = max(0, min(keep, unread))
            head = self._copy_out(self._read, keep)
            if keep:
                head = (head * fade_out_gain(keep)).astype(np.int16)
            dropped = unread - keep
            self._read += dropped
            self._put(self._read, head)
            self._cond.notify_all()
        return dropped

    def fade_tail(self, frames: int, floor: int = 0) -> int:
        """Fade out the last `frames` unread frames (none at or below position `floor`)."""
        with self._cond:
            first = max(self._read, floor, self._written - frames)
            n = self._written - first
            if n <= 0:
                return 0
            tail = self._copy_out(first, n)
            self._put(first, (tail * fade_out_gain(n)).astype(np.int16))
        return n

    def wait_until_read(self, position: int, timeout: float) -> bool:
        """Block until `frames_read` reaches `position` (True) or `timeout` passes (False)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._read < position:
                wait = _remaining(deadline)
                if wait <= 0:
                    return False
                self._wait(wait)
        return True

    def _wait(self, timeout: float) -> None:
        self._waiters += 1
        try:
            self._cond.wait(timeout)
        finally:
            self._waiters -= 1

    def _copy_in(self, data: np.ndarray) -> int:
        self._put(self._written, data)
        self._written += data.size
        return int(data.size)

    def _put(self, position: int, data: np.ndarray) -> None:
        start = position % self.capacity
        first = min(data.size, self.capacity - start)
        self._buf[start : start + first] = data[:first]
        self._buf[: data.size - first] = data[first:]

    def _copy_out(self, position: int, n: int) -> np.ndarray:
        start = position % self.capacity
        first = min(n, self.capacity - start)
        return np.concatenate((self._buf[start : start + first], self._buf[: n - first]))


def _remaining(deadline: float | None) -> float:
    return float("inf") if deadline is None else deadline - time.monotonic()
