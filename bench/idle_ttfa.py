"""Time to first audio after a quiet spell: the first announcement of the morning.

    .venv/bin/python -m bench.idle_ttfa                      # idle 1, 10 and 60 minutes
    .venv/bin/python -m bench.idle_ttfa --idle 60,600 --pageout

One daemon (our INT8 default voice, wav-dir sink, the phrase cache off, Wyoming on a
free port, a real Mosquitto), warmed up with three requests; then, for each idle time,
it is left alone that long and asked three Wyoming `synthesize` requests one after the
other. For each: time to the first `audio-chunk` (client side), and the daemon's page faults (major:
read back from disk) and CPU seconds during it. `--pageout` first asks the kernel to
page out the daemon's file-backed memory (process_madvise MADV_PAGEOUT, Linux 5.10+,
root), as memory pressure on a 1 GB Pi does while the device is idle: this machine has
no such pressure, so without it a quiet spell costs little here. `--set K=V` is passed
to the daemon (e.g. `--set synthesis.keep_warm_s=0` turns keeping warm off).
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from wyoming.audio import AudioChunk
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize

from bench.daemon_rig import running
from bench.report_io import (
    add_output_options,
    log,
    machine_info,
    machine_line,
    run_and_emit,
    table,
)
from tests.support.broker import Broker, free_port

# A new text for every request (the phrase cache is off too).
TEXTS = [
    f"The {thing} is {state} at {hour} o'clock."
    for hour in ("six", "seven", "eight", "nine", "ten", "eleven")
    for thing in ("front door", "garage", "kitchen window", "back gate")
    for state in ("locked", "open")
]
WARM_UPS = 3
ASKS = 3
_MADV_PAGEOUT = 21
_SYS_PIDFD_OPEN = 434
_SYS_PROCESS_MADVISE = 440


async def ask(port: int, text: str) -> float:
    """Milliseconds from the request to its first audio."""
    async with AsyncTcpClient("127.0.0.1", port) as client:
        started = time.monotonic()
        await client.write_event(Synthesize(text=text).event())
        first: float | None = None
        while True:
            event = await asyncio.wait_for(client.read_event(), 120)
            if event is None or event.type == "error":
                raise RuntimeError(f"no answer: {event}")
            if first is None and AudioChunk.is_type(event.type):
                first = time.monotonic()
            if event.type == "audio-stop":
                assert first is not None
                return (first - started) * 1000


def faults(pid: int) -> tuple[int, int]:
    """(minor, major) page faults of the process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[7]), int(fields[9])


def rss_parts(pid: int) -> dict[str, float]:
    """RssAnon and RssFile in MB (file-backed pages are what reclaim takes first)."""
    parts: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("RssAnon", "RssFile"):
            parts[key] = round(int(value.split()[0]) / 1024, 1)
    return parts


def page_out(pid: int) -> int:
    """Ask the kernel to reclaim the process's file-backed mappings; bytes advised."""
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = libc.syscall(_SYS_PIDFD_OPEN, pid, 0)
    if pidfd < 0:
        raise OSError(ctypes.get_errno(), "pidfd_open")

    class IoVec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

    advised = 0
    try:
        for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
            parts = line.split()
            if len(parts) < 6 or not parts[5].startswith("/"):
                continue  # anonymous memory: no swap here, nothing to page out
            start, end = (int(x, 16) for x in parts[0].split("-"))
            vec = IoVec(start, end - start)
            done = libc.syscall(_SYS_PROCESS_MADVISE, pidfd, ctypes.byref(vec), 1, _MADV_PAGEOUT, 0)
            if done > 0:
                advised += end - start
    finally:
        os.close(pidfd)
    return advised


def measure(port: int, pid: int) -> dict[str, float]:
    process = psutil.Process(pid)
    cpu0, (minor0, major0) = sum(process.cpu_times()[:2]), faults(pid)
    ttfa = asyncio.run(ask(port, TEXTS.pop()))
    minor1, major1 = faults(pid)
    return {
        "ttfa_ms": round(ttfa, 1),
        "minor_faults": minor1 - minor0,
        "major_faults": major1 - major0,
        "cpu_s": round(sum(process.cpu_times()[:2]) - cpu0, 3),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="idle-ttfa-") as tmp:
        root, port = Path(tmp), free_port()
        broker = Broker(root)
        broker.start()
        settings: dict[str, Any] = {
            "audio": {"sink": "wav-dir", "wav_dir": str(root / "wav")},
            "wyoming": {"uri": f"tcp://127.0.0.1:{port}"},
            "telemetry": {"interval": 60},
            "cache": {"enabled": False},  # it is the voice's first audio that is measured
        }
        try:
            with running(root / "daemon", broker.port, settings, sets=args.set) as daemon:
                assert daemon.proc is not None
                pid = daemon.proc.pid
                warm = [measure(port, pid) for _ in range(WARM_UPS)]
                rounds = [idle_round(port, pid, seconds, args.pageout) for seconds in args.idle]
        finally:
            broker.stop()
    return {
        "benchmark": "idle_ttfa",
        "sets": args.set,
        "pageout": args.pageout,
        "warm": warm,
        "warm_ttfa_p50_ms": statistics.median(m["ttfa_ms"] for m in warm),
        "rounds": rounds,
        "machine": machine_info(load_before),
    }


def idle_round(port: int, pid: int, seconds: float, pageout: bool) -> dict[str, Any]:
    process = psutil.Process(pid)
    cpu0 = sum(process.cpu_times()[:2])
    before = rss_parts(pid)
    time.sleep(seconds)  # the quiet spell itself (a benchmark, not a test)
    idle_cpu = sum(process.cpu_times()[:2]) - cpu0
    advised = page_out(pid) if pageout else 0
    after = rss_parts(pid)
    asks = [measure(port, pid) for _ in range(ASKS)]
    log(f"idle {seconds:g} s: {[a['ttfa_ms'] for a in asks]} ms")
    return {
        "idle_s": seconds,
        "idle_cpu_s": round(idle_cpu, 3),
        "rss_before_idle_mb": before,
        "rss_after_idle_mb": after,
        "paged_out_mb": round(advised / 2**20, 1),
        "asks": asks,
    }


def print_table(result: dict[str, Any]) -> None:
    paged = [r["paged_out_mb"] for r in result["rounds"]]
    print(f"settings: {result['sets'] or 'defaults'}; paged out before asking (MB): {paged}")
    print(f"warm TTFA p50: {result['warm_ttfa_p50_ms']} ms")
    headers = [
        "idle",
        "TTFA 1st ask",
        "2nd",
        "3rd",
        "major faults, 1st",
        "minor, 1st",
        "idle CPU s",
    ]
    rows = [
        [
            f"{r['idle_s']:g} s",
            *(a["ttfa_ms"] for a in r["asks"]),
            r["asks"][0]["major_faults"],
            r["asks"][0]["minor_faults"],
            r["idle_cpu_s"],
        ]
        for r in result["rounds"]
    ]
    table(headers, rows)
    print(machine_line(result["machine"]))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--idle",
        type=lambda s: [float(x) for x in s.split(",")],
        default=[60.0, 600.0, 3600.0],
        help="idle times in seconds, comma-separated (60,600,3600)",
    )
    parser.add_argument("--pageout", action="store_true", help="page out file-backed memory")
    parser.add_argument("--set", action="append", default=[], metavar="K=V", help="daemon setting")
    add_output_options(parser)
    return run_and_emit(run, parser.parse_args(), print_table)


if __name__ == "__main__":
    sys.exit(main())
