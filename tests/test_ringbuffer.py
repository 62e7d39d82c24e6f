"""The PCM ring between writers and the audio callback."""

from __future__ import annotations

import threading
import time
import tracemalloc

import numpy as np
import pytest

from edge_tts.audio.ringbuffer import RingBuffer

from .support.waiting import DEFAULT_TIMEOUT_S, wait_until

pytestmark = [
    pytest.mark.unit,
    pytest.mark.serial,
]  # serial: timing-sensitive

NEVER = threading.Event()


def ramp(n: int, start: int = 0) -> np.ndarray:
    return np.arange(start, start + n, dtype=np.int16)


def read(ring: RingBuffer, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=np.int16)
    return out[: ring.read_into(out)]


class Writer:
    """ring.write() in a thread of its own: the caller plays the audio callback."""

    def __init__(self, ring: RingBuffer, pcm: np.ndarray, stop: threading.Event) -> None:
        self.result: list[int] = []
        self._thread = threading.Thread(
            target=lambda: self.result.append(ring.write(pcm, stop)), name="writer", daemon=True
        )
        self._thread.start()

    def join(self, timeout: float = DEFAULT_TIMEOUT_S) -> list[int]:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"write() still blocked after {timeout:g} s"
        return self.result


def test_wraparound_keeps_order() -> None:
    ring = RingBuffer(8)
    assert ring.write(ramp(5), NEVER) == 5
    np.testing.assert_array_equal(read(ring, 3), ramp(3))
    assert ring.write(ramp(6, 5), NEVER) == 6  # wraps past the end of the storage
    assert (ring.available(), ring.free()) == (8, 0)
    np.testing.assert_array_equal(read(ring, 100), ramp(8, 3))
    assert (ring.frames_written, ring.frames_read) == (11, 11)


def test_exact_bytes_round_trip_through_many_wraps() -> None:
    rng = np.random.default_rng(7)
    data = rng.integers(-32768, 32767, size=50_000, dtype=np.int16)
    ring = RingBuffer(997)  # a prime: writes and reads land everywhere
    out, pos = [], 0
    while pos < data.size or ring.available():
        n = int(rng.integers(0, ring.free() + 1))
        pos += ring.write(data[pos : pos + n], NEVER)
        out.append(read(ring, int(rng.integers(1, 700))))
    assert np.concatenate(out).tobytes() == data.tobytes()


def test_concurrent_writer_and_reader_round_trip() -> None:
    data = np.random.default_rng(3).integers(-32768, 32767, size=40_000, dtype=np.int16)
    ring = RingBuffer(1000)
    writer = Writer(ring, data, NEVER)
    chunks: list[np.ndarray] = []
    deadline = time.monotonic() + DEFAULT_TIMEOUT_S
    while sum(c.size for c in chunks) < data.size and time.monotonic() < deadline:
        chunks.append(read(ring, 333))
    assert writer.join() == [data.size]
    assert np.concatenate(chunks).tobytes() == data.tobytes()


def test_write_blocks_while_full_and_resumes_when_read() -> None:
    ring = RingBuffer(100)
    writer = Writer(ring, ramp(150), NEVER)
    wait_until(lambda: ring.frames_written == 100, what="the writer to fill the ring")
    assert not writer.result  # filled, then waiting
    cpu = time.process_time()
    time.sleep(0.3)  # the behaviour under test: what the waiting writer costs meanwhile
    assert time.process_time() - cpu < 0.05  # waiting on a Condition, not spinning
    np.testing.assert_array_equal(read(ring, 60), ramp(60))
    assert writer.join() == [150]
    np.testing.assert_array_equal(read(ring, 100), ramp(90, 60))


def test_stop_event_unblocks_a_writer() -> None:
    ring = RingBuffer(100)
    stop = threading.Event()
    writer = Writer(ring, ramp(150), stop)
    wait_until(lambda: ring.frames_written == 100, what="the writer to fill the ring")
    stopped = time.monotonic()
    stop.set()  # nobody notifies the ring: the writer notices within its poll interval
    assert writer.join() == [100]
    # The poll is 50 ms; a bound of seconds still tells polling from "never" (join's
    # timeout) and leaves room for a machine too busy to run the writer at once.
    assert time.monotonic() - stopped < 5


def test_write_timeout_returns_what_fit() -> None:
    ring = RingBuffer(10)
    started = time.monotonic()
    assert ring.write(ramp(25), NEVER, timeout=0.1) == 10
    # Not before its timeout; the upper bound only catches a hang (a busy machine is slow).
    assert 0.09 < time.monotonic() - started < 10


def test_stopped_before_writing_writes_nothing() -> None:
    stop = threading.Event()
    stop.set()
    assert RingBuffer(10).write(ramp(5), stop) == 0


def test_clear_drops_unread_frames_and_keeps_positions_monotonic() -> None:
    ring = RingBuffer(16)
    ring.write(ramp(10), NEVER)
    read(ring, 4)
    assert ring.clear() == 6
    assert ring.available() == 0 and ring.free() == 16
    assert (ring.frames_written, ring.frames_read) == (10, 10)
    ring.write(ramp(3, 100), NEVER)
    np.testing.assert_array_equal(read(ring, 8), ramp(3, 100))


def test_cut_fades_the_next_frames_and_drops_the_rest() -> None:
    ring = RingBuffer(64)
    ring.write(np.full(40, 1000, np.int16), NEVER)
    read(ring, 30)  # the kept frames straddle the end of the storage after this
    ring.write(np.full(40, 1000, np.int16), NEVER)
    assert ring.cut(8) == 42
    assert ring.frames_read == 72 and ring.frames_written == 80
    tail = read(ring, 100)
    assert tail.size == 8 and tail[0] > 800 and tail[-1] < 200
    assert np.all(np.diff(tail) < 0)


def test_fade_tail_shapes_only_the_last_unread_frames() -> None:
    ring = RingBuffer(32)
    ring.write(np.full(20, 1000, np.int16), NEVER)
    assert ring.fade_tail(5, floor=0) == 5
    frames = read(ring, 32)
    assert (frames[:15] == 1000).all() and np.all(np.diff(frames[15:]) < 0)
    ring.write(np.full(3, 1000, np.int16), NEVER)
    assert ring.fade_tail(5, floor=21) == 2  # not before the utterance's start


def test_wait_until_read() -> None:
    ring = RingBuffer(10)
    ring.write(ramp(5), NEVER)
    assert ring.wait_until_read(5, timeout=0.05) is False  # the behaviour: it times out
    reader = threading.Timer(0.05, lambda: read(ring, 5))  # a reader that comes later
    reader.start()
    assert ring.wait_until_read(5, timeout=DEFAULT_TIMEOUT_S) is True
    reader.join(DEFAULT_TIMEOUT_S)


def test_read_into_never_allocates() -> None:
    ring = RingBuffer(48_000)
    out = np.zeros(4096, dtype=np.int16)  # 8 KiB: a copy through a temporary would show
    ring.write(np.ones(47_000, np.int16), NEVER)
    ring.read_into(out)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for _ in range(100):  # runs dry after 11 calls: covers the empty path too
            ring.read_into(out)
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 256 and peak - before < 1024


def test_rejects_what_is_not_int16_mono() -> None:
    ring = RingBuffer(10)
    with pytest.raises(TypeError, match="int16"):
        ring.write(np.zeros(4, np.float32), NEVER)
    with pytest.raises(ValueError, match="mono"):
        ring.write(np.zeros((4, 2), np.int16), NEVER)
    assert ring.write(np.zeros((4, 1), np.int16), NEVER) == 4
    with pytest.raises(ValueError):
        RingBuffer(0)
