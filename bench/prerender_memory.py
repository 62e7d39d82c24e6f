"""The pre-renderer's memory: the real daemon's peak RSS over its start with one
`cache.phrases` entry (FP32 build loaded, the phrase rendered, the build dropped) against
the same daemon without one, and its RSS once the pass is over.

    python -m bench.prerender_memory                      # 3 rounds of each
    python -m bench.prerender_memory --rounds 1 --out /tmp/prerender.json

Each round starts a fresh daemon twice, as bench/daemon_rig.py runs it (Mosquitto on a
free port, preload, the wav-dir sink, our INT8 default voice, an empty cache directory):
"phrase" with `cache.phrases: [PHRASE]`, "plain" with none. From /proc/PID/status
(MB = 10^6 bytes): VmHWM at READY (the build is loaded before READY: Prerenderer.prepare),
VmHWM once telemetry says the pass is done (`cache.prerender.state`), the peak of the
whole start, and VmRSS --idle seconds after that (the build dropped), next to plain's.

The check (exit status 1 when it fails): the phrase daemon's peak stays under --limit-mb
(default 400: the unit's MemoryHigh=400M, above which the kernel throttles it), and its
RSS after the pass within 10 MB of plain's (the build and its memory are given back).
docs/benchmarks.md, "The pre-renderer's memory", has the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from bench.daemon_rig import add_daemon_options, daemon_run, record_events
from bench.procmem import proc_status
from bench.report_io import (
    fmt,
    log,
    machine_info,
    machine_line,
    print_targets,
    run_and_emit,
    table,
    target,
)

PHRASE = "The garage door is open."  # as bench/cache.py and tests/test_cache_daemon.py
RETAINED_LIMIT_MB = 10.0


def settings_for(name: str) -> dict[str, Any]:
    return {"cache": {"phrases": [PHRASE] if name == "phrase" else []}}


def pass_done(rec: Any, topic: str) -> bool:
    for payload in reversed(rec.on_topic(topic)):
        state = json.loads(payload).get("cache", {}).get("prerender", {}).get("state")
        return bool(state == "done")
    return False


def measure(name: str, args: argparse.Namespace) -> dict[str, Any]:
    device = f"pre-{name}"
    with daemon_run(device, args.set, args.keep, record_events, settings_for(name), 300) as (
        rig,
        rec,
    ):
        assert rig.pid is not None
        ready = proc_status(rig.pid)
        topic = rig.topic("telemetry")
        if name == "phrase":
            rec.wait_for(lambda: pass_done(rec, topic), 600, "the pre-render pass")
        else:  # the same moment of the plain daemon's life: its first telemetry
            rec.wait_for(lambda: bool(rec.on_topic(topic)), 60, "telemetry")
        done = proc_status(rig.pid)
        samples, end = [], time.monotonic() + args.idle
        while time.monotonic() < end:
            samples.append(proc_status(rig.pid)["VmRSS"])
            time.sleep(0.2)  # a sampling interval, not a synchronization
    return {
        "hwm_ready_mb": round(ready["VmHWM"], 1),
        "rss_ready_mb": round(ready["VmRSS"], 1),
        "hwm_mb": round(done["VmHWM"], 1),
        "rss_after_mb": round(statistics.median(samples), 1),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    load = os.getloadavg()
    rounds: list[dict[str, Any]] = []
    for index in range(args.rounds):
        found = {name: measure(name, args) for name in ("phrase", "plain")}
        log(f"round {index + 1}: {json.dumps(found)}")
        rounds.append(found)

    def median(name: str, key: str) -> float:
        return round(float(statistics.median(r[name][key] for r in rounds)), 1)

    summary = {
        name: {key: median(name, key) for key in rounds[0][name]} for name in ("phrase", "plain")
    }
    peak, after = summary["phrase"]["hwm_mb"], summary["phrase"]["rss_after_mb"]
    retained = round(after - summary["plain"]["rss_after_mb"], 1)
    return {
        "benchmark": "prerender_memory",
        "phrase": PHRASE,
        "rounds": rounds,
        "median": summary,
        "peak_over_plain_mb": round(peak - summary["plain"]["hwm_mb"], 1),
        "retained_after_pass_mb": retained,
        "limit_mb": args.limit_mb,
        "passed": peak < args.limit_mb and retained < RETAINED_LIMIT_MB,
        "machine": machine_info(load),
    }


def print_report(r: dict[str, Any]) -> None:
    print(machine_line(r["machine"]))
    keys = ("hwm_ready_mb", "hwm_mb", "rss_ready_mb", "rss_after_mb")
    table(
        ("daemon", "VmHWM at READY", "VmHWM after the pass", "RSS at READY", "RSS after"),
        [(name, *(fmt(r["median"][name][k], ".1f") for k in keys)) for name in ("phrase", "plain")],
        f"pre-render memory, {len(r['rounds'])} round(s), medians (MB):",
    )
    peak = r["median"]["phrase"]["hwm_mb"]
    checks = [
        target(
            f"the phrase daemon's peak < {r['limit_mb']} MB",
            f"{peak} MB (+{r['peak_over_plain_mb']} over plain)",
            peak < r["limit_mb"],
            failed="FAIL",
        ),
        target(
            f"RSS after the pass within {RETAINED_LIMIT_MB:.0f} MB of plain's",
            f"{r['retained_after_pass_mb']} MB",
            r["retained_after_pass_mb"] < RETAINED_LIMIT_MB,
            failed="FAIL",
        ),
    ]
    print_targets(checks)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="daemons of each kind (3)")
    parser.add_argument("--idle", type=float, default=5.0, help="s of RSS after the pass (5)")
    parser.add_argument("--limit-mb", type=float, default=400.0, help="peak limit (400)")
    add_daemon_options(parser)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.idle <= 0:
        parser.error("--rounds and --idle must be positive")
    return run_and_emit(run, args, print_report, passed=lambda result: bool(result["passed"]))


if __name__ == "__main__":
    sys.exit(main())
