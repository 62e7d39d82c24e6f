"""Telemetry: percentiles match numpy, buffers stay bounded, counting is thread-safe."""

from __future__ import annotations

import ast
import json
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
import psutil
import pytest

from edge_tts.cli import oneshot
from edge_tts.core import host
from edge_tts.core.host import process_stats
from edge_tts.core.telemetry import (
    METRICS,
    Door,
    Figures,
    Telemetry,
    TelemetryPublisher,
    Window,
)
from edge_tts.daemon.app import FIGURES
from edge_tts.daemon.periodic import Duty, Tick

pytestmark = pytest.mark.unit

# The counters the daemon has always published (Home Assistant's sensors and fleets'
# dashboards read them): declared by their parts now, the same names.
DAEMON_COUNTERS = {
    "received",
    "played",
    "rejected",
    "expired",
    "interrupted",
    "errors",
    "underruns",
    "reconnects",
    "duplicates",
    "retained_skipped",
    "deferred",
    "wyoming_requests",
    "wyoming_errors",
    "cache_hits",
    "cache_misses",
    "http_requests",
    "http_errors",
    "http_busy",
}


@pytest.mark.parametrize(
    "data",
    [
        [42.0],
        [1.0, 2.0],
        list(range(1, 101)),
        list(np.random.default_rng(7).exponential(120.0, size=997)),
    ],
)
def test_window_percentiles_match_numpy_linear(data: list[float]) -> None:
    window = Window()
    for value in data:
        window.add(float(value))
    stats = window.percentiles()
    for name, q in (("p50", 50), ("p95", 95), ("p99", 99)):
        assert stats[name] == pytest.approx(float(np.percentile(data, q)), rel=1e-12)
    assert stats["count"] == len(data)
    assert stats["max"] == pytest.approx(max(data))


def test_empty_window_has_none_values() -> None:
    assert Window().percentiles() == {
        "p50": None,
        "p95": None,
        "p99": None,
        "count": 0,
        "max": None,
    }


def test_window_is_bounded_and_keeps_the_newest() -> None:
    window = Window(maxlen=1000)
    for i in range(100_000):
        window.add(float(i))
    assert len(window) == 1000
    assert window.percentiles()["max"] == 99_999.0
    assert min(window.values()) == 99_000.0


def test_window_rejects_zero_length() -> None:
    with pytest.raises(ValueError):
        Window(maxlen=0)


def test_counting_from_many_threads_loses_nothing() -> None:
    tel = Telemetry(figures=FIGURES)

    def hammer() -> None:
        for _ in range(20_000):
            tel.count("received")

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
        assert not thread.is_alive()
    counters = tel.snapshot({})["counters"]
    assert isinstance(counters, dict)
    assert counters["received"] == 160_000


def test_unknown_names_fail_loudly() -> None:
    tel = Telemetry(figures=FIGURES)
    with pytest.raises(KeyError):
        tel.count("recieved")
    with pytest.raises(KeyError):
        tel.set_counter("underrun", 3)
    with pytest.raises(KeyError):
        tel.observe("queue_wait", 1.0)


def test_set_counter_overrides_and_count_adds() -> None:
    tel = Telemetry(figures=FIGURES)
    tel.set_counter("underruns", 7)
    tel.count("errors", 3)
    tel.count("errors")
    counters = tel.snapshot({})["counters"]
    assert isinstance(counters, dict)
    assert counters["underruns"] == 7
    assert counters["errors"] == 4


def test_non_finite_samples_are_dropped() -> None:
    tel = Telemetry(figures=FIGURES)
    tel.observe("real_time_factor", float("inf"))
    tel.observe("real_time_factor", float("nan"))
    tel.observe("real_time_factor", 0.25)
    latency = tel.snapshot({})["latency"]
    assert isinstance(latency, dict)
    assert latency["real_time_factor"]["count"] == 1


def test_each_door_has_its_latency_and_only_local_playback_is_the_speakers() -> None:
    tel = Telemetry(figures=FIGURES)
    tel.answered("mqtt", 300.0, 0.2)
    tel.answered("wyoming", 150.0, None)  # no audio: no real-time factor
    tel.answered("wyoming", float("nan"), 0.1)
    snap = json.loads(json.dumps(tel.snapshot({}), allow_nan=False))
    by_door = snap["latency_by_door"]
    assert set(by_door) == {door.name for part in FIGURES for door in part.doors}
    assert by_door["mqtt"]["time_to_first_audio_ms"]["p50"] == 300.0
    assert by_door["wyoming"]["time_to_first_audio_ms"]["count"] == 1
    assert by_door["wyoming"]["real_time_factor"]["p50"] == 0.1
    # `latency` keeps its meaning: requests played here, what Home Assistant shows.
    assert snap["latency"]["time_to_first_audio_ms"]["count"] == 1
    assert snap["latency"]["real_time_factor"]["p50"] == 0.2
    with pytest.raises(KeyError, match="unknown door"):
        tel.answered("gopher", 1.0, 1.0)


def test_histograms_count_every_sample_cumulatively_by_door() -> None:
    tel = Telemetry(window=2, figures=FIGURES)  # the windows forget; the histograms do not
    for ttfa in (25.0, 26.0, 400.0, 9000.0):
        tel.answered("http", ttfa, 0.2)
    tel.answered("http_say", 100.0, None)
    found = tel.histograms()
    buckets, total, count = found[("time_to_first_audio_ms", "http")]
    le = dict(buckets)
    assert (le[25], le[50], le[500], le[5000], le[float("inf")]) == (1, 2, 3, 3, 4)
    assert count == 4 and total == 25.0 + 26.0 + 400.0 + 9000.0
    # Played here: also in the door-less histogram, as `latency` has it.
    assert found[("time_to_first_audio_ms", None)][2] == 1
    assert found[("real_time_factor", "http")][2] == 4
    assert found[("real_time_factor", "http_say")][2] == 0


def test_snapshot_is_json_and_complete() -> None:
    tel = Telemetry(figures=FIGURES)
    for metric in METRICS:
        for value in (1.0, 2.0, 3.0):
            tel.observe(metric, value)
    tel.count("played", 2)
    snap = tel.snapshot({"queue_depth": 3, "in_flight": 1})
    decoded = json.loads(json.dumps(snap, allow_nan=False))
    assert {"ts", "uptime_s", "counters", "latency", "process", "queue_depth", "in_flight"} <= set(
        decoded
    )
    assert set(decoded["counters"]) == DAEMON_COUNTERS
    assert decoded["counters"]["played"] == 2
    assert set(decoded["latency"]) == set(METRICS)
    for stats in decoded["latency"].values():
        assert stats == {"p50": 2.0, "p95": 2.9, "p99": 2.98, "count": 3, "max": 3.0}
    assert abs(decoded["ts"] - time.time()) < 60
    assert decoded["uptime_s"] >= 0


def test_telemetry_counts_only_what_its_parts_declare() -> None:
    tel = Telemetry(figures=(Figures(counters=("pings",), doors=(Door("gopher", local=True),)),))
    tel.count("pings")
    tel.answered("gopher", 120.0, 0.3)
    snap = tel.snapshot({})
    assert snap["counters"] == {"pings": 1}
    assert snap["latency"]["time_to_first_audio_ms"]["p50"] == 120.0  # type: ignore[index]
    with pytest.raises(KeyError, match="unknown counter 'played'"):
        tel.count("played")
    with pytest.raises(KeyError, match="unknown door 'mqtt'"):
        tel.answered("mqtt", 1.0, 1.0)


def _named_in_code() -> tuple[set[str], set[str]]:
    """The counter and door names the package passes as literals to the telemetry."""
    counters: set[str] = set()
    doors: set[str] = set()
    for path in Path(host.__file__).parents[1].rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            first = node.args[0] if node.args else None
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue
            if node.func.attr in ("count", "set_counter"):
                counters.add(first.value)
            elif node.func.attr == "answered":
                doors.add(first.value)
    return counters, doors


def _origin_doors() -> set[str]:
    """The doors the package's requests name as literals: in an `Origin(...)` (the engine
    measures a finished request by its door) or as an Origin subclass's default."""
    doors: set[str] = set()
    for path in Path(host.__file__).parents[1].rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            value: ast.expr | None = None
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("Origin"):
                given = node.args[:1] + [k.value for k in node.keywords if k.arg == "door"]
                value = given[0] if given else None
            elif isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "door":
                value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                doors.add(value.value)
    return doors


def test_every_door_a_request_names_is_declared_by_its_program() -> None:
    # The daemon's doors and `edge-ttsd say`'s, the two programs that submit requests.
    doors = _origin_doors()
    assert {"mqtt", "http_say", "say"} <= doors  # the scan finds what it checks
    declared = {door.name for part in (*FIGURES, *oneshot.FIGURES) for door in part.doors}
    assert doors <= declared


def test_every_name_the_code_counts_is_declared_by_a_part() -> None:
    # A name no part declares would raise KeyError on a path tests may never take.
    counters, doors = _named_in_code()
    assert counters and doors  # the scan finds the calls it checks
    assert counters <= {name for part in FIGURES for name in part.counters}
    assert doors <= {door.name for part in FIGURES for door in part.doors}


def test_gauges_cannot_clobber_fixed_keys() -> None:
    snap = Telemetry(figures=FIGURES).snapshot({"counters": "oops", "queue_depth": 0})
    assert isinstance(snap["counters"], dict)
    assert snap["queue_depth"] == 0


def test_process_stats_are_sane() -> None:
    stats = process_stats()
    expected = {
        "rss_bytes",
        "uss_bytes",
        "system_mem_available_bytes",
        "load_1m",
        "load_5m",
        "load_15m",
        "cpu_percent",
        "soc_temp_c",
        "threads",
    }
    assert set(stats) == expected
    rss = stats["rss_bytes"]
    assert isinstance(rss, int) and 1_000_000 < rss < 20_000_000_000
    uss = stats["uss_bytes"]
    assert uss is None or 0 < uss <= rss
    available = stats["system_mem_available_bytes"]
    assert isinstance(available, int) and available > 0
    threads = stats["threads"]
    assert isinstance(threads, int) and threads >= 1
    cpu = stats["cpu_percent"]
    assert isinstance(cpu, float) and cpu >= 0
    json.dumps(stats, allow_nan=False)


def test_soc_temperature_reads_the_thermal_zone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zone = tmp_path / "temp"
    zone.write_text("48312\n")
    monkeypatch.setattr(host, "THERMAL_ZONE", zone)
    assert host.soc_temperature() == 48.3


def test_soc_temperature_is_none_when_unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(host, "THERMAL_ZONE", tmp_path / "missing")
    monkeypatch.setattr(psutil, "sensors_temperatures", lambda: {}, raising=False)
    assert host.soc_temperature() is None


def test_memory_stays_flat_over_many_observations() -> None:
    tel = Telemetry(window=1000, figures=FIGURES)

    def record(n: int) -> None:
        for i in range(n):
            tel.count("received")
            for metric in METRICS:
                tel.observe(metric, float(i % 977))

    record(2_000)  # fill every window first
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        record(20_000)
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert after - before < 64_000


class _Recorder:
    def __init__(self, fail_first: int = 0) -> None:
        self.times: list[float] = []
        self.snapshots: list[dict[str, object]] = []
        self.fail_first = fail_first
        self.got_two = threading.Event()

    def __call__(self, snapshot: dict[str, object]) -> None:
        self.times.append(time.monotonic())
        if len(self.times) <= self.fail_first:
            raise ConnectionError("broker down")
        self.snapshots.append(snapshot)
        if len(self.snapshots) >= 2:
            self.got_two.set()


def ticking(publisher: TelemetryPublisher, every: float) -> Tick:
    return Tick([Duty("telemetry", every, publisher.publish_once)], name="telemetry")


def test_publisher_publishes_at_the_interval_and_stops_promptly() -> None:
    recorder = _Recorder()
    tick = ticking(
        TelemetryPublisher(Telemetry(figures=FIGURES), lambda: {"queue_depth": 0}, recorder), 0.1
    )
    started = time.monotonic()
    tick.start()
    try:
        assert recorder.got_two.wait(timeout=30)
    finally:
        stop_began = time.monotonic()
        tick.stop(timeout=30)
    # Promptly: not a whole interval late. The upper bounds here only catch a hang; a busy
    # machine runs the thread late, never early.
    assert time.monotonic() - stop_began < 5
    assert not any(t.name == "telemetry" and t.is_alive() for t in threading.enumerate())
    first, second = recorder.times[0], recorder.times[1]
    assert 0.05 <= first - started < 5
    assert 0.05 <= second - first < 5
    assert recorder.snapshots[0]["queue_depth"] == 0


def test_publisher_survives_a_publish_that_raises(caplog: pytest.LogCaptureFixture) -> None:
    recorder = _Recorder(fail_first=2)
    tick = ticking(TelemetryPublisher(Telemetry(figures=FIGURES), dict, recorder), 0.05)
    tick.start()
    try:
        assert recorder.got_two.wait(timeout=30)
    finally:
        tick.stop(timeout=30)
    assert len(recorder.times) >= 4
    assert "telemetry publish failed" in caplog.text


def test_publisher_survives_failing_gauges() -> None:
    def broken_gauges() -> dict[str, object]:
        raise RuntimeError("queue gone")

    publisher = TelemetryPublisher(Telemetry(figures=FIGURES), broken_gauges, _Recorder())
    assert publisher.publish_once() is False


def test_stop_without_start_is_harmless(caplog: pytest.LogCaptureFixture) -> None:
    """A daemon that fails to start stops its parts, started or not: no wait, no noise."""
    recorder = _Recorder()
    began = time.monotonic()
    ticking(TelemetryPublisher(Telemetry(figures=FIGURES), dict, recorder), 1).stop(timeout=30)
    assert time.monotonic() - began < 5  # no join on a thread that never ran
    assert recorder.times == [] and recorder.snapshots == []
    assert caplog.records == []
    assert not any(t.name == "telemetry" for t in threading.enumerate())
