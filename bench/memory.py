"""The daemon's memory on small boards: steady and peak RSS of the real daemon process with
the default voice (our INT8 build, or its FP32 original) and with the Mandarin voice too.

    python -m bench.memory                                   # the 4 configurations, 100 each
    python -m bench.memory --requests 100 --out /tmp/memory.json > /tmp/memory.txt
    python -m bench.memory --configs int8,int8+zh --requests 20 --idle 5   # a quick look

Issue 13 ("Memory on small boards"): the figures MemoryHigh=/MemoryMax= in the unit are set
from. Configurations, one after another in this one invocation, each a fresh daemon:

  int8      the default config: the default English voice as our INT8 build
  fp32      `voices: {default: {build: fp32}}`: the same voice as its FP32 original
  int8+zh   `voices: {default: {}, mandarin: {path: DIR}}, languages: {zh: mandarin}`
  fp32+zh   the same with `default: {build: fp32}`

Each through the real daemon, as bench/daemon_rig.py runs it: Mosquitto on a free port,
`python -m edge_tts run --config F` with a fake NOTIFY_SOCKET, preload on, the wav-dir sink
(no sound card; each WAV is deleted when its `finished` event arrives), the phrase cache
off (the mix repeats its texts: a cached chunk would be read from disk, not synthesized),
everything else the config's defaults (`synthesis.max_concurrent` 2, `max_phonemes` 300).
The daemon's first telemetry says which build of each voice loaded; it is checked against
the configuration (and the INT8 build's digest against its manifest).

Memory (MB = 10^6 bytes), all read from /proc/PID of the daemon:
  at READY (voices loaded and warmed up): VmRSS (RssAnon + RssFile), VmHWM (the peak of
  the start-up), PSS and USS (/proc/PID/smaps_rollup, psutil's memory_full_info);
  then VmHWM is reset (`echo 5 > /proc/PID/clear_refs`), so the VmHWM read at the end is
  the peak during the requests, including any between two samples;
  VmRSS every --sample-interval seconds (default 0.1) by a sampler thread, throughout;
  steady: after the last request's final event, the daemon idle for --idle seconds
  (default 10): the median of those samples, with PSS/USS at the end of it and the
  daemon's own figures from its telemetry (rss_bytes, uss_bytes);
  peak: the largest sample and VmHWM;
  plateau: the largest and the median sample in each quarter of the requests (by final
  events received) and the growth between the second and the last quarter.

Requests: --requests per configuration (default 100), a fixed mix drawn with a seeded RNG
(--seed): for the English configurations 44 % short English sentences (~2 s of audio),
44 % 1-3 word announcements, 12 % long English texts (3-4 sentences, ~11 s, 4-5 chunks);
for the Mandarin configurations 22 / 18 / 6 % of those, 28 % short and 6 % long Chinese
texts (bench/mandarin.py's), 20 % Chinese with Latin words in it (the router gives those
to the English voice: both voices in one request). Few long texts, as in use, and to keep
the four configurations under ~15 minutes on a busy 2-core machine; enough of them that
every configuration plays several multi-chunk requests, where both workers synthesize
chunks of one request and the pipeline trims the heap afterwards. Sent in blocks of 10,
alternately two in flight (so two syntheses overlap, as `max_concurrent: 2` allows) and
one at a time; the next request goes out when a final event arrives, never after a
sleep. How many requests' syntheses overlapped the previous one's is counted from the
events (see Driver.overlap).

Not measured here: the daemon's cgroup (on this machine every process shares one), which
MemoryHigh=/MemoryMax= act on: it charges the process's anonymous memory plus the page
cache its files bring in (the model files it reads, the WAVs of this sink); RssAnon is the
part only the daemon can free, RssFile its mapped files (the shared libraries of Python,
numpy and onnxruntime), which the kernel can drop and read again.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.daemon_rig import (
    Rig,
    Tracker,
    add_daemon_options,
    daemon_run,
    record_events,
    voice_check,
)
from bench.mandarin import EN_LONG, EN_SHORT, ZH_LONG, ZH_SHORT
from bench.procmem import Sample, Sampler, proc_detail, proc_status, reset_hwm
from bench.report_io import MB, fields, fmt, log, machine_info, machine_line, run_and_emit, table
from bench.soak import MIXED_TEXTS
from bench.zh_quant import DEFAULT_VOICE_DIR
from tests.support.broker import Recorder

CONFIG_NAMES = ("int8", "fp32", "int8+zh", "fp32+zh")
# Chinese announcements with Latin words in them: the router splits them by script, the
# Latin runs to the English voice, so one request uses both voices.
ZH_MIXED = (
    "GPS信号丢失，请检查天线连接。",
    "蓝牙设备AirPods已连接。",
    "正在播放Taylor Swift的新专辑，音量已调到30%。",
    "WiFi网络Home已断开，正在重新连接。",
    "您的Model Y电量剩余15%，请尽快充电。",
    "下一站是Central Park，请准备下车。",
)
TEXTS: dict[str, tuple[str, ...]] = {
    "en-short": EN_SHORT,
    "en-word": MIXED_TEXTS,
    "en-long": EN_LONG,
    "zh-short": ZH_SHORT,
    "zh-long": ZH_LONG,
    "zh-mixed": ZH_MIXED,
}
MIX_EN = {"en-short": 0.44, "en-word": 0.44, "en-long": 0.12}
MIX_ZH = {
    "en-short": 0.22,
    "en-word": 0.18,
    "en-long": 0.06,
    "zh-short": 0.28,
    "zh-long": 0.06,
    "zh-mixed": 0.2,
}
BLOCK = 10  # requests per block; blocks alternate one in flight and two in flight
STEADY_TAIL = 0.5  # steady = the median of the last half of the idle samples
REQUEST_TIMEOUT_S = 600.0  # no final event for this long: give up on the configuration


def config_for(name: str, zh_voice: Path) -> dict[str, Any]:
    """The daemon settings of configuration `name` (merged into Rig's: preload, wav-dir)."""
    default: dict[str, Any] = {"build": "fp32"} if name.startswith("fp32") else {}
    settings: dict[str, Any] = {"cache": {"enabled": False}}
    if name.endswith("+zh"):
        settings["voices"] = {"default": default, "mandarin": {"path": str(zh_voice)}}
        settings["languages"] = {"zh": "mandarin"}
    elif default:
        settings["voices"] = {"default": default}
    return settings


def mix(name: str, n: int, seed: int) -> list[tuple[str, str]]:
    """The requests of a configuration: (class, text), a fixed number per class (the
    largest remainders get the rounding), shuffled with `seed`; texts cycle per class."""
    weights = MIX_ZH if name.endswith("+zh") else MIX_EN
    counts = {k: int(n * w) for k, w in weights.items()}
    by_remainder = sorted(weights, key=lambda k: n * weights[k] - counts[k], reverse=True)
    for k in by_remainder[: n - sum(counts.values())]:
        counts[k] += 1
    rng = random.Random(seed)
    out = []
    for key, count in counts.items():
        texts = TEXTS[key]
        start = rng.randrange(len(texts))
        out += [(key, texts[(start + i) % len(texts)]) for i in range(count)]
    rng.shuffle(out)
    return out


# --- one configuration ---------------------------------------------------------------------


class Driver(Tracker):
    def __init__(self, rig: Rig, rec: Recorder) -> None:
        super().__init__(rig, rec)
        self.sampler: Sampler | None = None
        self.windows: dict[str, int] = {}  # request id: requests in flight when it was sent

    def run(self, plan: Sequence[tuple[str, str]]) -> bool:
        """Every request of `plan`; blocks of BLOCK alternate 2 and 1 in flight. False if
        the daemon died or stopped answering."""
        assert self.sampler is not None
        index = 0
        while index < len(plan) or self.outstanding:
            window = 2 if (index // BLOCK) % 2 == 0 else 1
            # A block boundary: the previous block's requests finish first (1 in flight
            # means one at a time, not one more beside the last pair).
            boundary = index % BLOCK == 0
            while index < len(plan) and len(self.outstanding) < window:
                if boundary and self.outstanding:
                    break
                cls, text = plan[index]
                self.send(index, text, f"mem-{index}", tag=cls)
                self.windows[f"mem-{index}"] = window
                index += 1
                boundary = index % BLOCK == 0
            before = len(self.outstanding)
            if not before:
                continue
            if not self.rig.alive():
                log("  the daemon exited during the run")
                return False
            if not self.until(self._fewer_than(before), REQUEST_TIMEOUT_S, "a final event"):
                return False
            self.sampler.completed = sum(1 for r in self.order if r.kind is not None)
            done = self.sampler.completed
            if done % 20 == 0:
                last = self.sampler.samples[-1]
                log(f"  {done}/{len(plan)} requests, RSS {last.rss:.1f} MB")
        return True

    def _fewer_than(self, n: int) -> Callable[[], bool]:
        return lambda: len(self.outstanding) < n

    def overlap(self) -> dict[str, int]:
        """Requests whose synthesis began while the one before them was still being
        synthesized: their first chunk's synthesis started (publish time + the event's
        `stages_ms.synthesis_started`) before the previous request's final event arrived.
        The wav-dir sink is not paced by a clock, so a request ends right after its last
        chunk is synthesized, and `started`/`finished` (first sample written, last
        played) never overlap: playback is one request at a time. Also: requests of
        more than one chunk (the two workers take a request's next chunks together)."""
        ordered = sorted(
            (r for r in self.order if r.final_at is not None), key=lambda r: r.final_at or 0
        )
        overlapped = 0
        for before, request in itertools.pairwise(ordered):
            stages = (request.event or {}).get("stages_ms") or {}
            began = stages.get("synthesis_started")
            if isinstance(began, (int, float)) and before.final_at is not None:
                overlapped += request.sent + began / 1000 < before.final_at
        chunks = [int((r.event or {}).get("chunks") or 0) for r in self.order]
        return {
            "overlapped": overlapped,
            "max_in_flight": max(self.windows.values(), default=0),
            "multi_chunk": sum(1 for c in chunks if c > 1),
            "chunks": sum(chunks),
        }


def r1(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def quarters(samples: Sequence[Sample], n: int) -> list[dict[str, Any]]:
    """The largest and the median RSS sample in each quarter of the requests (by final
    events received when the sample was taken)."""
    rows = []
    for q in range(4):
        low, high = n * q / 4, n * (q + 1) / 4
        chosen = [s.rss for s in samples if s.phase == "requests" and low <= s.completed < high]
        rows.append(
            {
                "requests": f"{int(low) + 1}-{int(high)}",
                "samples": len(chosen),
                "max_mb": r1(max(chosen)) if chosen else None,
                "median_mb": r1(statistics.median(chosen)) if chosen else None,
            }
        )
    return rows


def expected_build(name: str, telemetry: dict[str, Any] | None) -> dict[str, Any]:
    """Which builds loaded (the daemon's telemetry) and whether they are the config's."""
    voices = (telemetry or {}).get("voices", {})
    builds = {k: (v.get("build") or {}).get("scheme") for k, v in voices.items()}
    default = builds.get("default")
    ok = default == "fp32" if name.startswith("fp32") else default not in (None, "fp32")
    if name.endswith("+zh"):
        ok = ok and builds.get("mandarin") is not None and voices["mandarin"].get("loaded")
    else:
        ok = ok and set(builds) == {"default"}
    return {"builds": builds, "as_configured": bool(ok)}


def measure(name: str, args: argparse.Namespace) -> dict[str, Any]:
    settings = config_for(name, args.voice)
    plan = mix(name, args.requests, args.seed)
    load_start = os.getloadavg()
    device = "mem-" + name.replace("+", "-")  # '+' is an MQTT wildcard
    log(f"{name}: starting the daemon ({json.dumps(settings)})")
    result: dict[str, Any] = {"config": settings, "requests": len(plan)}
    result["classes"] = dict(Counter(cls for cls, _ in plan))
    started = time.monotonic()
    run = daemon_run(device, args.set, args.keep, record_events, settings, ready_timeout=300)
    with run as (rig, rec):
        assert rig.pid is not None
        pid = rig.pid
        ready_s = proc_status(pid)
        ready_detail = proc_detail(pid)
        result["ready"] = {
            "rss_mb": r1(ready_s["VmRSS"]),
            "anon_mb": r1(ready_s["RssAnon"]),
            "file_mb": r1(ready_s["RssFile"]),
            "hwm_startup_mb": r1(ready_s["VmHWM"]),
            **{f"{k}_mb": v for k, v in ready_detail.items()},
            "start_to_ready_s": round(time.monotonic() - started, 1),
        }
        log(f"  READY: RSS {ready_s['VmRSS']:.1f} MB (start-up peak {ready_s['VmHWM']:.1f})")
        driver = Driver(rig, rec)
        first_telemetry = driver.telemetry_after(0.0)
        result["voices"] = expected_build(name, first_telemetry)
        if not name.startswith("fp32"):
            result["voices"]["int8_digest"] = voice_check(first_telemetry)
        result["hwm_reset"] = reset_hwm(pid)
        sampler = Sampler(pid, args.sample_interval)
        driver.sampler = sampler
        sampler.start()
        sampler.phase = "requests"
        t0 = time.monotonic()
        complete = driver.run(plan)
        result["requests_s"] = round(time.monotonic() - t0, 1)
        sampler.phase = "idle"
        idle_at = time.monotonic()
        idle_n = max(4, round(args.idle / args.sample_interval))
        sampler.wait_phase_samples("idle", idle_n, args.idle * 3 + 10)
        end_s = proc_status(pid) if rig.alive() else None
        end_detail = proc_detail(pid) if rig.alive() else {}
        sampler.stop()
        telemetry = driver.telemetry_after(idle_at, timeout=15)
        rig.same_pid_at_end = rig.same_process()
    samples = sampler.samples
    idle = [s.rss for s in samples if s.phase == "idle"]
    tail = idle[int(len(idle) * (1 - STEADY_TAIL)) :] or idle
    during = [s.rss for s in samples if s.phase in ("requests", "idle")]
    q = quarters(samples, len(plan))
    kinds = Counter(r.kind or "none" for r in driver.order)
    finished = [r.event for r in driver.order if r.kind == "finished" and r.event]
    stats = (telemetry or {}).get("process", telemetry or {})
    result.update(
        {
            "complete": complete,
            "final_events": dict(sorted(kinds.items())),
            "stray_events": len(driver.strays),
            "overlap": driver.overlap(),
            "audio_s": round(sum(float(e.get("audio_ms") or 0) for e in finished) / 1000, 1),
            "voices_used": dict(
                Counter(",".join(e.get("voices") or []) for e in finished).most_common()
            ),
            "steady": {
                "rss_mb": r1(statistics.median(tail)) if tail else None,
                "idle_samples": len(idle),
                "idle_s": round((samples[-1].t - idle_at), 1) if idle else None,
                "anon_mb": r1(end_s["RssAnon"]) if end_s else None,
                "file_mb": r1(end_s["RssFile"]) if end_s else None,
                **{f"{k}_mb": v for k, v in end_detail.items()},
                "daemon_telemetry_rss_mb": _mb(_find(stats, "rss_bytes")),
                "daemon_telemetry_uss_mb": _mb(_find(stats, "uss_bytes")),
            },
            "peak": {
                "max_sample_mb": r1(max(during)) if during else None,
                "hwm_requests_mb": r1(end_s["VmHWM"]) if end_s and result["hwm_reset"] else None,
                "hwm_overall_mb": r1(
                    max(ready_s["VmHWM"], end_s["VmHWM"]) if end_s else ready_s["VmHWM"]
                ),
                "samples": len(during),
            },
            "quarters": q,
            "growth_q2_to_q4_max_mb": _diff(q[3]["max_mb"], q[1]["max_mb"]),
            "growth_q2_to_q4_median_mb": _diff(q[3]["median_mb"], q[1]["median_mb"]),
            "daemon": rig.summary(),
            "loadavg_start": [round(x, 2) for x in load_start],
            "loadavg_end": [round(x, 2) for x in os.getloadavg()],
            "elapsed_s": round(time.monotonic() - started, 1),
        }
    )
    log(
        f"  {name}: ready {result['ready']['rss_mb']}, steady {result['steady']['rss_mb']}, "
        f"peak {result['peak']['max_sample_mb']} (VmHWM {result['peak']['hwm_requests_mb']}) MB"
        f"; {result['elapsed_s']} s"
    )
    return result


def _find(tree: Any, key: str) -> Any:
    """The first value of `key` anywhere in a JSON tree (telemetry's layout may nest it)."""
    if isinstance(tree, dict):
        if key in tree:
            return tree[key]
        for value in tree.values():
            found = _find(value, key)
            if found is not None:
                return found
    return None


def _mb(value: Any) -> float | None:
    return round(value / MB, 1) if isinstance(value, (int, float)) else None


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 1)


def run(args: argparse.Namespace) -> dict[str, Any]:
    load_before = os.getloadavg()
    configs: dict[str, Any] = {}
    for name in args.configs:
        try:
            configs[name] = measure(name, args)
        except (AssertionError, RuntimeError, OSError) as error:  # one failing config
            log(f"{name}: failed: {error}")
            configs[name] = {"error": str(error)[:2000]}
    return {
        "benchmark": "memory",
        "requests_per_config": args.requests,
        "seed": args.seed,
        "idle_s": args.idle,
        "sample_interval_s": args.sample_interval,
        "mandarin_voice": str(args.voice),
        "configs": configs,
        "machine": machine_info(load_before),
    }


def print_report(r: dict[str, Any]) -> None:
    print(
        f"The daemon's memory (MB = 10^6 B), {r['requests_per_config']} requests per "
        f"configuration (seed {r['seed']}), steady = median of the last half of "
        f"{r['idle_s']:g} s idle"
    )
    print(machine_line(r["machine"]) + "\n")
    rows = []
    for name, c in r["configs"].items():
        if "error" in c:
            rows.append((name, f"failed: {c['error'][:150]}"))
            continue
        rd, st, pk = c["ready"], c["steady"], c["peak"]
        builds = ",".join(f"{k}={v}" for k, v in c["voices"]["builds"].items())
        flag = "" if c["voices"]["as_configured"] else " (!)"
        fin = c["final_events"].get("finished", 0)
        mb = [rd["rss_mb"], rd["hwm_startup_mb"], st["rss_mb"], st["anon_mb"], st["file_mb"],
              st["pss_mb"], st["uss_mb"], pk["max_sample_mb"], pk["hwm_requests_mb"]]  # fmt: skip
        rows.append(
            (name, builds + flag, *(fmt(v, ".1f") for v in mb),
             f"{fin}/{c['requests']}", c["overlap"]["overlapped"])
        )  # fmt: skip
    table(
        ("config", "builds", "ready", "start", "steady", "anon", "file", "PSS", "USS", "peak",
         "VmHWM", "fin/n", "ovl"),
        rows,
    )  # fmt: skip
    print(
        "ready: VmRSS at READY (loaded, warmed up); start: VmHWM at READY (start-up peak);\n"
        "steady: after the requests, idle; anon/file/PSS/USS at the end of the idle time;\n"
        "peak: largest sample during the requests and idle; VmHWM: reset at READY, read at\n"
        "the end (the peak between samples too); ovl: requests whose synthesis began\n"
        "before the previous request's ended.\n"
    )
    for name, c in r["configs"].items():
        if "error" not in c:
            print_config(name, c)


def print_config(name: str, c: dict[str, Any]) -> None:
    st, d = c["steady"], c["daemon"]
    fields(
        name,
        {
            "requests": f"{c['requests']} {json.dumps(c['classes'])}",
            "audio, time": f"{c['audio_s']} s of audio in {c['requests_s']} s",
            "chunks (requests of several)": (
                f"{c['overlap']['chunks']} ({c['overlap']['multi_chunk']})"
            ),
            "start to READY (s)": c["ready"]["start_to_ready_s"],
            "RSS median/max per quarter of the requests": "  ".join(
                f"{q['requests']}: {fmt(q['median_mb'], '.1f')}/{fmt(q['max_mb'], '.1f')}"
                for q in c["quarters"]
            ),
            "growth 2nd -> 4th quarter, median / max (MB)": (
                f"{fmt(c['growth_q2_to_q4_median_mb'], '+.1f')} / "
                f"{fmt(c['growth_q2_to_q4_max_mb'], '+.1f')}"
            ),
            "ready PSS / USS": f"{fmt(c['ready']['pss_mb'])} / {fmt(c['ready']['uss_mb'])}",
            "daemon's telemetry, idle RSS / USS": (
                f"{fmt(st['daemon_telemetry_rss_mb'])} / {fmt(st['daemon_telemetry_uss_mb'])}"
            ),
            "final events": c["final_events"],
            "voices": f"{c['voices_used']} {c['voices'].get('int8_digest', '')}",
            "daemon: same PID, exit": f"{d['same_pid_at_end']}, {d['exit_code']}",
            "daemon log: errors, warnings": f"{d['log']['errors']}, {d['log']['warnings']}",
            "daemon warnings": " / ".join(line[:160] for line in d["log"]["warning_lines"]),
            "load average, time": (
                f"{c['loadavg_start'][0]} -> {c['loadavg_end'][0]}, {c['elapsed_s']} s"
            ),
        },
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--configs",
        type=lambda s: [x for x in s.split(",") if x],
        default=list(CONFIG_NAMES),
        help=f"comma-separated, of {', '.join(CONFIG_NAMES)} (default: all, in that order)",
    )
    parser.add_argument("--requests", type=int, default=100, help="per configuration (100)")
    parser.add_argument("--seed", type=int, default=1, help="the mix's order (default 1)")
    parser.add_argument("--idle", type=float, default=10.0, help="idle seconds at the end (10)")
    parser.add_argument(
        "--sample-interval", type=float, default=0.1, help="RSS sample interval, s (0.1)"
    )
    parser.add_argument("--voice", type=Path, default=DEFAULT_VOICE_DIR, help="Mandarin voice")
    add_daemon_options(parser)
    args = parser.parse_args(argv)
    unknown = [c for c in args.configs if c not in CONFIG_NAMES]
    if unknown:
        parser.error(f"unknown configuration(s) {unknown}; known: {', '.join(CONFIG_NAMES)}")
    if args.requests < 1 or args.idle <= 0 or args.sample_interval <= 0:
        parser.error("--requests, --idle and --sample-interval must be positive")
    return run_and_emit(run, args, print_report)


if __name__ == "__main__":
    sys.exit(main())
