"""This process and its machine: memory, CPU, load and the SoC's temperature, as the
telemetry document's `process` and /metrics' gauges report them."""

from __future__ import annotations

import os
from pathlib import Path

import psutil

#: Raspberry Pi OS exposes the SoC sensor here, in millidegrees Celsius.
THERMAL_ZONE = Path("/sys/class/thermal/thermal_zone0/temp")

_process: psutil.Process | None = None


def _this_process() -> psutil.Process:
    # cpu_percent() measures since the previous call on the same object, so keep one.
    global _process
    if _process is None or _process.pid != os.getpid():
        _process = psutil.Process()
    return _process


def process_stats() -> dict[str, float | int | None]:
    """Memory, load, CPU and temperature of this process and its machine."""
    proc = _this_process()
    with proc.oneshot():
        stats: dict[str, float | int | None] = {
            **_memory(proc),
            "cpu_percent": proc.cpu_percent(interval=None),
            "threads": proc.num_threads(),
        }
    stats["system_mem_available_bytes"] = psutil.virtual_memory().available
    stats.update(_load())
    stats["soc_temp_c"] = soc_temperature()
    return stats


def _memory(proc: psutil.Process) -> dict[str, int | None]:
    try:
        full = proc.memory_full_info()
    except (psutil.AccessDenied, OSError):
        # USS needs /proc/<pid>/smaps, which a hardened unit may not be allowed to read.
        return {"rss_bytes": proc.memory_info().rss, "uss_bytes": None}
    return {"rss_bytes": full.rss, "uss_bytes": full.uss}


def _load() -> dict[str, float | None]:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return {"load_1m": None, "load_5m": None, "load_15m": None}
    return {"load_1m": one, "load_5m": five, "load_15m": fifteen}


def soc_temperature() -> float | None:
    """SoC temperature in °C, or None where no sensor is readable (containers, VMs)."""
    try:
        return round(int(THERMAL_ZONE.read_text().strip()) / 1000.0, 1)
    except (OSError, ValueError):
        pass
    return _psutil_temperature()


def _psutil_temperature() -> float | None:
    reader = getattr(psutil, "sensors_temperatures", None)
    if reader is None:
        return None
    try:
        sensors = reader()
    except (OSError, RuntimeError):
        return None
    # cpu_thermal is the Pi's SoC; the others cover x86 development machines.
    for name in ("cpu_thermal", "soc_thermal", "coretemp", "k10temp", *sensors):
        readings = sensors.get(name)
        if readings:
            return round(float(readings[0].current), 1)
    return None
