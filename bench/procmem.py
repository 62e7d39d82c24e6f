"""A process's memory as Linux shows it: VmRSS and friends from /proc/PID/status, PSS and
USS from smaps_rollup and psutil, the VmHWM reset, and a thread that samples VmRSS at a
fixed interval (MB = 10^6 bytes)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from bench.report_io import MB


def proc_status(pid: int | str) -> dict[str, float]:
    """VmRSS, VmHWM, RssAnon, RssFile, RssShmem of `pid` ("self": this process), in MB."""
    out: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                out[key] = int(value.split()[0]) * 1024 / MB
    return out


def own_rss_mb() -> float:
    """This process's resident memory (MB)."""
    return proc_status("self")["VmRSS"]


def proc_detail(pid: int) -> dict[str, float | None]:
    """PSS (and its anonymous and file parts) from smaps_rollup, USS from psutil; MB."""
    import psutil

    out: dict[str, float | None] = {"pss": None, "pss_anon": None, "pss_file": None, "uss": None}
    names = {"Pss": "pss", "Pss_Anon": "pss_anon", "Pss_File": "pss_file"}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                key, _, value = line.partition(":")
                if key in names:
                    out[names[key]] = round(int(value.split()[0]) * 1024 / MB, 1)
        out["uss"] = round(psutil.Process(pid).memory_full_info().uss / MB, 1)
    except (OSError, psutil.Error):
        pass
    return out


def reset_hwm(pid: int) -> bool:
    """VmHWM back to the current VmRSS (Linux >= 4.0); False where not allowed."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        return False
    return True


@dataclass
class Sample:
    t: float  # monotonic
    phase: str  # "ready", "requests", "idle"
    completed: int  # final events received so far
    rss: float
    anon: float
    file: float
    hwm: float


class Sampler:
    """The daemon's /proc/PID/status every `interval` seconds, in its own thread."""

    def __init__(self, pid: int, interval: float) -> None:
        self.pid = pid
        self.interval = interval
        self.samples: list[Sample] = []
        self.phase = "ready"
        self.completed = 0
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def start(self) -> None:
        self.take()
        self._thread.start()

    def take(self) -> Sample | None:
        try:
            s = proc_status(self.pid)
        except OSError:  # exited
            return None
        sample = Sample(
            time.monotonic(),
            self.phase,
            self.completed,
            s["VmRSS"],
            s["RssAnon"],
            s["RssFile"],
            s["VmHWM"],
        )
        with self._cond:
            self.samples.append(sample)
            self._cond.notify_all()
        return sample

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if self.take() is None:
                return

    def wait_phase_samples(self, phase: str, n: int, timeout: float) -> bool:
        """Until `n` samples of `phase` are taken (a measurement window, not a wait for
        the daemon): True, or False after `timeout`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while sum(1 for s in self.samples if s.phase == phase) < n:
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return False
                self._cond.wait(left)
        return True

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
