"""Counters, latency windows and process health, published as one retained JSON document.

Every buffer here is bounded (a fixed-length deque per metric, a fixed set of counters), so
the daemon's memory stays flat however many requests it serves.
"""

from __future__ import annotations

import bisect
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .host import process_stats

_LOGGER = logging.getLogger(__name__)

METRICS: tuple[str, ...] = (
    "queue_wait_ms",
    "time_to_first_audio_ms",
    "real_time_factor",
    "synthesis_ms",
)

DOOR_METRICS: tuple[str, ...] = ("time_to_first_audio_ms", "real_time_factor")

# Upper bounds of the cumulative histograms (`histograms()`, what /metrics exposes): a
# fleet's Prometheus adds them up across devices, which percentiles of a window cannot do.
MS_BUCKETS: tuple[float, ...] = (25, 50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000)
RTF_BUCKETS: tuple[float, ...] = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 5.0)

_QUANTILES = (("p50", 50.0), ("p95", 95.0), ("p99", 99.0))


def percentiles(values: Iterable[float]) -> dict[str, float | None]:
    """p50/p95/p99 by linear interpolation between closest ranks (numpy's default method)."""
    ordered = sorted(values)
    result: dict[str, float | None] = {name: _linear_quantile(ordered, q) for name, q in _QUANTILES}
    result["count"] = len(ordered)
    result["max"] = ordered[-1] if ordered else None
    return result


def _linear_quantile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


class Window:
    """The most recent `maxlen` samples of one metric; older ones fall off."""

    def __init__(self, maxlen: int = 1000) -> None:
        if maxlen < 1:
            raise ValueError(f"maxlen must be at least 1, got {maxlen}")
        self._values: deque[float] = deque(maxlen=maxlen)

    def add(self, value: float) -> None:
        self._values.append(value)

    def values(self) -> list[float]:
        return list(self._values)

    def percentiles(self) -> dict[str, float | None]:
        """{"p50", "p95", "p99", "count", "max"}; the value keys are None while empty."""
        return percentiles(self._values)

    def __len__(self) -> int:
        return len(self._values)


class Histogram:
    """Counts of every sample ever added, by bucket, with their sum: fixed size."""

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one: above every bound
        self.total = 0.0

    def add(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def cumulative(self) -> tuple[list[tuple[float, int]], float, int]:
        """([(upper bound, samples at or below it), ..., (inf, all)], sum, count)."""
        running, buckets = 0, []
        for bound, count in zip((*self.bounds, math.inf), self.counts, strict=True):
            running += count
            buckets.append((bound, running))
        return buckets, self.total, running


@dataclass(frozen=True)
class Door:
    """Where requests come in, as its answers' latency is labelled (`latency_by_door`).
    A `local` door's requests play here: their latency also goes into `latency`, the
    speaker's own figures (what Home Assistant's sensors show)."""

    name: str
    local: bool = False


@dataclass(frozen=True)
class Figures:
    """What one part counts: its counters and its doors. Each part declares its own (the
    engine, the cache, each front door: their package's `FIGURES`), and the program that
    wires them hands them all to `Telemetry`, which knows none of them by name."""

    counters: tuple[str, ...] = ()
    doors: tuple[Door, ...] = ()


HistogramKey = tuple[str, str | None]  # (metric, door): door None is `latency`'s own


def _buckets(metric: str) -> tuple[float, ...]:
    return RTF_BUCKETS if metric == "real_time_factor" else MS_BUCKETS


class Telemetry:
    """Thread-safe counters, latency windows and histograms; one lock, held only for O(1)
    updates."""

    def __init__(self, window: int = 1000, figures: Iterable[Figures] = ()) -> None:
        """`figures`: every part's counters and doors; counting anything else is an error."""
        parts = tuple(figures)
        doors = [door for part in parts for door in part.doors]
        self._lock = threading.Lock()
        self._counters = dict.fromkeys((name for part in parts for name in part.counters), 0)
        self._windows = {metric: Window(window) for metric in METRICS}
        self._doors = {d.name: {m: Window(window) for m in DOOR_METRICS} for d in doors}
        self._local = frozenset(d.name for d in doors if d.local)
        self._histograms: dict[HistogramKey, Histogram] = {
            **{(m, None): Histogram(_buckets(m)) for m in METRICS},
            **{(m, d.name): Histogram(_buckets(m)) for d in doors for m in DOOR_METRICS},
        }
        self._started = time.monotonic()

    def count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counters[self._counter_key(name)] += n

    def set_counter(self, name: str, value: int) -> None:
        """For counters another component owns and reports as a total (the player's underruns)."""
        with self._lock:
            self._counters[self._counter_key(name)] = value

    def observe(self, metric: str, value: float) -> None:
        window = self._windows.get(metric)
        if window is None:
            raise KeyError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
        self._add(window, (metric, None), value)

    def answered(self, door: str, ttfa_ms: float | None, rtf: float | None) -> None:
        """One answer's time to first audio and real-time factor (None: not known)."""
        windows = self._doors.get(door)
        if windows is None:
            raise KeyError(f"unknown door {door!r}; known: {', '.join(self._doors)}")
        for metric, value in (("time_to_first_audio_ms", ttfa_ms), ("real_time_factor", rtf)):
            if value is None:
                continue
            self._add(windows[metric], (metric, door), value)
            if door in self._local:
                self._add(self._windows[metric], (metric, None), value)

    def _add(self, window: Window, key: HistogramKey, value: float) -> None:
        if not math.isfinite(value):
            # A NaN or inf would poison every percentile and is not valid JSON either.
            _LOGGER.debug("dropping non-finite %s sample %r", key[0], value)
            return
        with self._lock:
            window.add(value)
            self._histograms[key].add(value)

    def counters(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counters)

    def histograms(self) -> dict[HistogramKey, tuple[list[tuple[float, int]], float, int]]:
        """Every histogram's cumulative buckets, sum and count, by (metric, door); door None
        holds the requests played here, as `latency` does."""
        with self._lock:
            return {key: histogram.cumulative() for key, histogram in self._histograms.items()}

    def snapshot(self, gauges: Mapping[str, object]) -> dict[str, object]:
        """A JSON-ready document; the fixed keys win over a gauge of the same name."""
        with self._lock:
            counters = dict(self._counters)
            samples = {metric: window.values() for metric, window in self._windows.items()}
            by_door = {
                door: {metric: window.values() for metric, window in windows.items()}
                for door, windows in self._doors.items()
            }
        # Sorting happens outside the lock so recording threads never wait on a snapshot.
        latency = _summary(samples)
        return {
            **gauges,
            "ts": round(time.time(), 3),
            "uptime_s": round(time.monotonic() - self._started, 3),
            "counters": counters,
            "latency": latency,
            "latency_by_door": {door: _summary(values) for door, values in by_door.items()},
            "process": process_stats(),
        }

    def _counter_key(self, name: str) -> str:
        if name not in self._counters:
            raise KeyError(f"unknown counter {name!r}; known: {', '.join(self._counters)}")
        return name


def _summary(samples: Mapping[str, list[float]]) -> dict[str, dict[str, float | None]]:
    return {metric: _rounded(percentiles(values)) for metric, values in samples.items()}


def _rounded(stats: Mapping[str, float | None]) -> dict[str, float | None]:
    # Microsecond precision is plenty and keeps the retained payload readable.
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in stats.items()}


class TelemetryPublisher:
    """Publishes a snapshot (a duty of the daemon's tick, periodic.py)."""

    def __init__(
        self,
        telemetry: Telemetry,
        gauges: Callable[[], Mapping[str, object]],
        publish: Callable[[dict[str, object]], None],
    ) -> None:
        self._telemetry = telemetry
        self._gauges = gauges
        self._publish = publish
        self._failing = False

    def publish_once(self) -> bool:
        """One snapshot and publish; never raises, so the loop (or a final flush) survives."""
        try:
            self._publish(self._telemetry.snapshot(self._gauges()))
        except Exception:
            self._log_failure()
            return False
        if self._failing:
            _LOGGER.info("telemetry publishing works again")
        self._failing = False
        return True

    def _log_failure(self) -> None:
        # A full traceback once per failure streak; a broker outage must not flood the journal.
        if self._failing:
            _LOGGER.warning("telemetry publish failed again", exc_info=False)
        else:
            _LOGGER.exception("telemetry publish failed")
        self._failing = True
