"""`GET /metrics`: what the MQTT telemetry carries, in Prometheus' text format, so a fleet's
Prometheus can scrape every device.

prometheus_client writes the exposition (escaping, types, the histogram conventions) and
reads the process' own figures (RSS, CPU seconds, open files); a custom collector reads
the daemon's telemetry at each scrape, so nothing is kept twice. Latencies are cumulative
histograms in seconds (telemetry.Histogram), which a fleet's Prometheus can add up across
devices; the latency windows' percentiles (MQTT telemetry) are per device only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from ..core.host import soc_temperature
from ..core.telemetry import Telemetry

PREFIX = "edge_tts"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Telemetry's metric → (exposed name, divisor to the base unit, help).
_HISTOGRAMS = {
    "time_to_first_audio_ms": (
        "time_to_first_audio_seconds",
        1000.0,
        "From a request's arrival to its first audio: played here, or sent to the client",
    ),
    "real_time_factor": ("real_time_factor", 1.0, "Synthesis time per second of audio"),
    "queue_wait_ms": ("queue_wait_seconds", 1000.0, "A played request's wait in the queue"),
    "synthesis_ms": ("synthesis_seconds", 1000.0, "A played request's synthesis time"),
}


class TelemetryCollector(Collector):
    """The daemon's counters, latency histograms and gauges, read at each scrape."""

    def __init__(self, telemetry: Telemetry, gauges: Callable[[], Mapping[str, object]]) -> None:
        self._telemetry = telemetry
        self._gauges = gauges

    def collect(self) -> Iterator[Metric]:
        gauges = self._gauges()  # first: it brings the counters it owns up to date
        for name, value in self._telemetry.counters().items():
            yield CounterMetricFamily(f"{PREFIX}_{name}", _COUNTER_HELP.get(name, name), value)
        yield from self._histograms()
        yield from _gauges(gauges)

    def _histograms(self) -> Iterator[Metric]:
        families: dict[str, HistogramMetricFamily] = {}
        for (metric, door), (buckets, total, _) in self._telemetry.histograms().items():
            exposed, divisor, help_text = _HISTOGRAMS[metric]
            per_door = metric in ("time_to_first_audio_ms", "real_time_factor")
            if per_door == (door is None):
                continue  # by door only; the local aggregate is the sum of local doors
            family = families.get(exposed)
            if family is None:
                labels = ["door"] if per_door else []
                family = HistogramMetricFamily(f"{PREFIX}_{exposed}", help_text, labels=labels)
                families[exposed] = family
            scaled = [(_le(bound / divisor), float(count)) for bound, count in buckets]
            family.add_metric([door] if door else [], scaled, total / divisor)
        yield from families.values()


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)


_COUNTER_HELP = {
    "received": "Requests queued to play here",
    "played": "Requests played to their end",
    "rejected": "Requests refused",
    "errors": "Synthesis or playback errors",
    "underruns": "Audio output underruns",
    "cache_hits": "Chunks served from the phrase cache",
    "cache_misses": "Chunks looked up in the phrase cache and synthesized",
    "http_requests": "HTTP requests answered",
    "http_errors": "HTTP requests answered with an error, or cut",
    "http_busy": "HTTP requests or connections turned away with 503",
}


def _gauge(name: str, help_text: str, value: object) -> GaugeMetricFamily | None:
    if isinstance(value, bool):
        value = int(value)
    if not isinstance(value, int | float):
        return None
    return GaugeMetricFamily(f"{PREFIX}_{name}", help_text, value=float(value))


def _gauges(g: Mapping[str, object]) -> Iterator[Metric]:
    problems = g.get("problems")
    listed = problems if isinstance(problems, list) else []
    simple = {
        "healthy": ("1 when nothing is wrong (see edge_tts_problem)", not listed),
        "queue_depth": ("Requests waiting to play", g.get("queue_depth")),
        "syntheses_in_flight": ("Syntheses running", g.get("syntheses_in_flight")),
        "mqtt_connected": ("1 while connected to the broker", g.get("mqtt_connected")),
        "wyoming_clients": ("Wyoming clients connected", g.get("wyoming_clients")),
        "http_connections": ("HTTP connections open", g.get("http_connections")),
        "soc_temperature_celsius": ("The SoC's temperature", soc_temperature()),
    }
    for name, (help_text, value) in simple.items():
        family = _gauge(name, help_text, value)
        if family is not None:
            yield family
    problem = GaugeMetricFamily(f"{PREFIX}_problem", "What is wrong now", labels=["problem"])
    for text in listed:
        problem.add_metric([str(text)], 1.0)
    yield problem
    yield from _nested("cache", "Phrase cache", g.get("cache"))
    yield from _nested("http_pool", "The /invoke audio pool", g.get("http_pool"))
    yield _voices(g.get("voices"))


def _nested(prefix: str, what: str, values: object) -> Iterator[Metric]:
    """The numbers of a gauge that is a mapping (the cache's stats), one gauge each."""
    if not isinstance(values, Mapping):
        return
    for key, value in values.items():
        family = _gauge(f"{prefix}_{key}", f"{what}: {key}", value)
        if family is not None:
            yield family


def _voices(voices: object) -> Metric:
    info = GaugeMetricFamily(
        f"{PREFIX}_voice_info",
        "A configured voice: its build and whether it is loaded",
        labels=["voice", "scheme", "sha256", "loaded"],
    )
    for name, about in voices.items() if isinstance(voices, Mapping) else []:
        build: Any = about.get("build") or {}
        labels = [
            name,
            str(build.get("scheme")),
            str(about.get("sha256")),
            str(about.get("loaded")),
        ]
        info.add_metric(labels, 1.0)
    return info


def registry_for(
    telemetry: Telemetry, gauges: Callable[[], Mapping[str, object]]
) -> CollectorRegistry:
    """What /metrics exposes: the daemon's telemetry and the process' own figures."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(TelemetryCollector(telemetry, gauges))
    ProcessCollector(registry=registry)
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
