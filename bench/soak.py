"""Soak: N short requests through ONE daemon process; RSS curve, latency over time, and
exactly one final event per request.

    python -m bench.soak                                  # 10,000 requests
    python -m bench.soak --requests 300 --out soak.json   # a quick check
    python -m bench.soak --set synthesis.max_concurrent=1 # any daemon setting (--set)

A real Mosquitto on a free port (tests/support/broker.py) and the daemon as `python -m edge_tts
run --config F [--set K=V ...]` with a fake NOTIFY_SOCKET (tests/support/daemon_proc.py), the
default voice (our INT8 build: EDGE_TTS_DATA_DIR is this user's data directory; the
digest in the daemon's telemetry is checked against the INT8 manifest), `audio.sink:
wav-dir` (one WAV per request, not paced by a clock: faster than real time), the phrase
cache off. Each WAV is deleted once its `finished` event arrives (and any leftover at every
RSS sample).

Requests are 1-3 word announcements drawn from a fixed list with a seeded RNG, each with
a unique id, QoS 1, kept at most --window in flight (default 8, below the daemon's queue
of 32): the next is published when one gets its final event.

Recorded:
  RSS (psutil, the daemon's PID) right after READY and every --sample-every completed
  requests (default 100), with threads, open fds and CPU seconds: first, after warm-up
  (--warmup, default N/10), max, last, growth, and the least-squares slope in MB per
  1,000 requests over the second half of the run;
  per window of --latency-window requests (default 1,000, by send order): p50/p95/p99
  of publish -> `finished` received (includes waiting behind the other requests in
  flight), of the daemon's `synthesis_ms` (the request's own synthesis time) and of its
  `time_to_first_audio_ms` (message received -> first sample written to the WAV, so it
  includes the queue wait);
  final events by kind; requests with no final event, or more than one.

At the end a last request is sent and awaited, so any late or doubled final event of
the N requests (published before it) is counted; then the daemon gets SIGTERM and its
exit code is recorded. Target (issue "the daemon"): RSS grows < 5 MB over 10,000
requests (after warm-up; also projected from the second-half slope).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from bench.daemon_rig import (
    Rig,
    Tracker,
    add_daemon_options,
    daemon_run,
    print_daemon,
    record_events,
    voice_check,
)
from bench.report_io import fields, fmt, log, print_targets, run_and_emit, stats, table, target
from tests.support.broker import Recorder

# One word each (the default): the shortest texts that still run the whole path (text
# front-end, encoder, decoder windows, WAV), about half a second of audio.
SHORT_TEXTS = (
    "Hi.",
    "Yes.",
    "No.",
    "Okay.",
    "Hello.",
    "Done.",
    "Ready.",
    "Stop.",
    "Go.",
    "Wait.",
    "Doorbell.",
    "Goodbye.",
)
# 1-3 words each (--texts mixed): one chunk, under 1.3 s of audio.
MIXED_TEXTS = (
    "Hello.",
    "Door open.",
    "Lights off.",
    "Timer done.",
    "Good morning.",
    "Motion detected.",
    "Garage closed.",
    "Rain expected.",
    "Battery low.",
    "Package arrived.",
    "Dinner is ready.",
    "Window open.",
    "Alarm armed.",
    "Alarm disarmed.",
    "Washer finished.",
    "Incoming call.",
    "Low tire pressure.",
    "Turn left.",
    "Doorbell.",
    "Welcome home.",
    "Heating on.",
    "Oven is hot.",
    "Water leak.",
    "Back door unlocked.",
    "Zone three armed.",
    "Charging complete.",
    "Goodbye.",
    "Seven degrees.",
)
RSS_GROWTH_MAX_MB = 5.0
TARGET_REQUESTS = 10_000


class Soak(Tracker):
    def __init__(self, args: argparse.Namespace, rig: Rig, rec: Recorder) -> None:
        super().__init__(rig, rec)
        self.args = args
        self.samples: list[dict[str, float]] = []
        self.elapsed = 0.0
        self.end_marker: str | None = None

    def sample(self, completed: int) -> None:
        self.wavs_deleted += self.rig.sweep_wavs()
        row = {"requests": float(completed), **self.rig.sample()}
        self.samples.append(row)

    def run(self) -> None:
        args = self.args
        rng = random.Random(args.seed)
        pool = SHORT_TEXTS if args.texts == "short" else MIXED_TEXTS
        texts = [rng.choice(pool) for _ in range(args.requests)]
        self.sample(0)
        started = last_progress = time.monotonic()
        next_index = completed = 0
        while completed < args.requests:
            if not self.rig.alive():
                log("the daemon exited during the run")
                break
            while len(self.outstanding) < args.window and next_index < args.requests:
                self.send(next_index, texts[next_index], f"soak-{next_index}")
                next_index += 1
            if self.wait_messages(5.0):
                done = self.process()
                if done:
                    last_progress = time.monotonic()
                for _ in done:
                    completed += 1
                    if completed % args.sample_every == 0 or completed == args.requests:
                        self.sample(completed)
                    if completed % args.progress_every == 0:
                        rate = completed / (time.monotonic() - started)
                        log(
                            f"  {completed}/{args.requests} requests, "
                            f"RSS {self.samples[-1]['rss_mb']:.1f} MB, {rate:.1f} req/s"
                        )
            if time.monotonic() - last_progress > args.stall:
                log(f"no final event for {args.stall:.0f} s: giving up on the rest")
                break
        self.elapsed = time.monotonic() - started
        # Everything the daemon published for the N requests comes before the final
        # event of a request sent after them: then no late or doubled event is missed.
        if self.rig.alive():
            marker = self.send(args.requests, "Soak finished.", "soak-end")
            self.order.remove(marker)  # not one of the N
            self.until(lambda: marker.kind is not None, 120, "the end marker's final event")
            self.end_marker = marker.kind
            self.telemetry_after(time.monotonic(), 20)

    # --- results -----------------------------------------------------------------------

    def results(self) -> dict[str, Any]:
        args = self.args
        n = args.requests
        kinds = Counter(r.kind or "none" for r in self.order)
        missing = [r.id for r in self.order if r.kind is None]
        rss = [(s["requests"], s["rss_mb"]) for s in self.samples]
        warmup = self._warmup_sample()
        second_half = [(x, y) for x, y in rss if x >= n / 2]
        per_request = slope(second_half)
        per_1000 = None if per_request is None else per_request * 1000
        first, last = rss[0][1], rss[-1][1]
        growth_after_warmup = None if warmup is None else last - warmup[1]
        windows = []
        size = args.latency_window
        for start in range(0, len(self.order), size):
            chunk = self.order[start : start + size]
            fin = [r for r in chunk if r.kind == "finished" and r.event is not None]
            at_end = [s for s in self.samples if s["requests"] <= start + len(chunk)]
            windows.append(
                {
                    "requests": f"{start + 1}-{start + len(chunk)}",
                    "n": len(chunk),
                    "finished": len(fin),
                    "sent_to_finished_ms": stats(
                        [((r.final_at or 0) - r.sent) * 1000 for r in fin]
                    ),
                    "synthesis_ms": stats(
                        [_num(r.event.get("synthesis_ms")) for r in fin if r.event]
                    ),
                    "ttfa_ms": stats(
                        [_num(r.event.get("time_to_first_audio_ms")) for r in fin if r.event]
                    ),
                    "queue_wait_ms": stats(
                        [_num(r.event.get("queue_wait_ms")) for r in fin if r.event]
                    ),
                    "rss_mb_end": round(at_end[-1]["rss_mb"], 1) if at_end else None,
                }
            )
        first_s, last_s = self.samples[0], self.samples[-1]
        telemetry = self.latest_telemetry or {}
        result: dict[str, Any] = {
            "requests": n,
            "completed": n - len(missing),
            "window": args.window,
            "seed": args.seed,
            "texts": args.texts,
            "set": args.set,
            "elapsed_s": round(self.elapsed, 1),
            "requests_per_s": round((n - len(missing)) / self.elapsed, 2) if self.elapsed else 0,
            "final_events": dict(sorted(kinds.items())),
            "other_events": dict(sorted(self.nonfinal.items())),
            "missing": missing[:100],
            "missing_count": len(missing),
            "doubled": [{"id": k, "extra": v} for k, v in list(self.doubled.items())[:100]],
            "doubled_count": len(self.doubled),
            "stray_final_events": self.strays[:20],
            "stray_count": len(self.strays),
            "rejection_reasons": dict(
                Counter(
                    str(r.event.get("reason"))
                    for r in self.order
                    if r.kind == "rejected" and r.event
                ).most_common(10)
            ),
            "end_marker": self.end_marker,
            "rss": {
                "sample_every": args.sample_every,
                "warmup_requests": None if warmup is None else int(warmup[0]),
                "first_mb": round(first, 1),
                "after_warmup_mb": None if warmup is None else round(warmup[1], 1),
                "max_mb": round(max(y for _, y in rss), 1),
                "last_mb": round(last, 1),
                "growth_total_mb": round(last - first, 2),
                "growth_after_warmup_mb": _round(growth_after_warmup, 2),
                "slope_second_half_mb_per_1000": _round(per_1000, 3),
                "second_half_samples": len(second_half),
                "projected_growth_10000_mb": _round(
                    None if per_1000 is None else per_1000 * TARGET_REQUESTS / 1000, 2
                ),
                "threads_first_last": [int(first_s["threads"]), int(last_s["threads"])],
                "fds_first_last": [int(first_s["fds"]), int(last_s["fds"])],
                "cpu_s": round(last_s["cpu_s"] - first_s["cpu_s"], 1),
                "samples": [
                    [int(s["requests"]), round(s["rss_mb"], 2), int(s["threads"]), int(s["fds"])]
                    for s in self.samples
                ],
            },
            "latency_windows": windows,
            "latency_all": {
                "sent_to_finished_ms": stats(
                    [
                        ((r.final_at or 0) - r.sent) * 1000
                        for r in self.order
                        if r.kind == "finished"
                    ]
                ),
                "ttfa_ms": stats(
                    [
                        _num(r.event.get("time_to_first_audio_ms"))
                        for r in self.order
                        if r.kind == "finished" and r.event
                    ]
                ),
            },
            "by_text": self._by_text(),
            "wavs_deleted": self.wavs_deleted,
            "daemon_counters": telemetry.get("counters"),
            "voice": voice_check(self.latest_telemetry),
        }
        return result

    def _by_text(self) -> list[dict[str, Any]]:
        """Medians per text: what one request costs the daemon."""
        rows = []
        for text in sorted({r.text for r in self.order}):
            fin = [r for r in self.order if r.text == text and r.kind == "finished" and r.event]
            if not fin:
                continue
            events = [r.event for r in fin if r.event is not None]
            rows.append(
                {
                    "text": text,
                    "n": len(fin),
                    "audio_ms": statistics.median(_num(e.get("audio_ms")) or 0 for e in events),
                    "synthesis_ms": statistics.median(
                        _num(e.get("synthesis_ms")) or 0 for e in events
                    ),
                    "real_time_factor": round(
                        statistics.median(_num(e.get("real_time_factor")) or 0 for e in events),
                        3,
                    ),
                }
            )
        return rows

    def _warmup_sample(self) -> tuple[float, float] | None:
        after = [(s["requests"], s["rss_mb"]) for s in self.samples if s["requests"] >= self.warmup]
        return after[0] if after else None

    @property
    def warmup(self) -> int:
        if self.args.warmup is not None:
            return int(self.args.warmup)
        every = int(self.args.sample_every)
        return max(every, int(self.args.requests) // 10 // every * every)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def slope(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of y over x, or None with fewer than two distinct x."""
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    rss, daemon = r["rss"], r["daemon"]
    growth = rss["growth_after_warmup_mb"]
    projected = rss["projected_growth_10000_mb"]
    judged = rss["second_half_samples"] >= 10  # a slope over a few samples is noise
    return [
        target(
            f"RSS growth after warm-up < {RSS_GROWTH_MAX_MB:.0f} MB "
            f"(requests {rss['warmup_requests']}-{r['requests']})",
            f"{fmt(growth, '+.2f')} MB",
            None if growth is None else growth < RSS_GROWTH_MAX_MB,
        ),
        target(
            f"RSS growth over 10,000 requests at the second-half slope < "
            f"{RSS_GROWTH_MAX_MB:.0f} MB",
            f"{fmt(projected, '+.2f')} MB ({fmt(rss['slope_second_half_mb_per_1000'], '+.3f')}"
            f" MB/1000{'' if judged else '; not judged: under 10 samples'})",
            None if projected is None or not judged else projected < RSS_GROWTH_MAX_MB,
        ),
        target(
            "every request exactly one final event",
            f"{r['missing_count']} missing, {r['doubled_count']} doubled, {r['stray_count']} stray",
            r["missing_count"] == 0 and r["doubled_count"] == 0,
        ),
        target(
            "daemon still the same process, exits 0 on SIGTERM",
            f"same PID: {daemon['same_pid_at_end']}, exit {daemon['exit_code']}",
            daemon["same_pid_at_end"] and daemon["exit_code"] == 0,
        ),
    ]


def print_report(r: dict[str, Any]) -> None:
    rss = r["rss"]
    samples = rss["samples"]
    step = max(1, len(samples) // 10)
    curve = samples[::step] + ([samples[-1]] if (len(samples) - 1) % step else [])
    fields(
        "soak",
        {
            "requests, window, seed": f"{r['requests']} ({r['texts']}), {r['window']}, {r['seed']}",
            "time": f"{r['elapsed_s']:.0f} s ({r['requests_per_s']} requests/s)",
            "--set": " ".join(r["set"]),
            "voice": r["voice"],
            "final events": ", ".join(f"{k} {v}" for k, v in r["final_events"].items()),
            "missing, doubled, stray": (
                f"{r['missing_count']}, {r['doubled_count']}, {r['stray_count']}"
            ),
            "end marker": r["end_marker"],
            "rejection reasons": "; ".join(f"{k} ({v})" for k, v in r["rejection_reasons"].items()),
        },
    )
    fields(
        "RSS (MB)",
        {
            "first": rss["first_mb"],
            f"after warm-up ({rss['warmup_requests']} requests)": rss["after_warmup_mb"],
            "max, last": f"{rss['max_mb']}, {rss['last_mb']}",
            "growth: total, after warm-up": (
                f"{rss['growth_total_mb']:+.2f}, {fmt(rss['growth_after_warmup_mb'], '+.2f')}"
            ),
            "slope over the second half (MB/1000 requests)": fmt(
                rss["slope_second_half_mb_per_1000"], "+.3f"
            ),
            "threads, open fds (first -> last)": (
                f"{rss['threads_first_last'][0]} -> {rss['threads_first_last'][1]}, "
                f"{rss['fds_first_last'][0]} -> {rss['fds_first_last'][1]}"
            ),
            "daemon CPU (s)": rss["cpu_s"],
            "curve (requests: MB)": "  ".join(f"{n}:{mb:.1f}" for n, mb, _, _ in curve),
        },
    )
    rows = []
    for w in r["latency_windows"]:
        a, b, c = w["sent_to_finished_ms"], w["synthesis_ms"], w["ttfa_ms"]
        rows.append(
            (w["requests"], w["finished"], a["p50"], a["p95"], a["p99"], b["p50"], b["p95"],
             b["p99"], c["p50"], c["p95"], c["p99"], fmt(w["rss_mb_end"], ".1f"))
        )  # fmt: skip
    table(
        ("requests", "finished", "sent->finished p50", "p95", "p99", "synthesis p50", "p95",
         "p99", "daemon TTFA p50", "p95", "p99", "RSS"),
        rows,
        "latency (ms) per window, by send order",
    )  # fmt: skip
    table(
        ("text", "n", "audio ms", "synthesis ms", "real-time factor"),
        [(t["text"], t["n"], t["audio_ms"], t["synthesis_ms"], t["real_time_factor"])
         for t in r["by_text"]],
        "per text (medians)",
    )  # fmt: skip
    print_daemon(r["daemon"], r["daemon_counters"])
    print_targets(r["targets"])


def run(args: argparse.Namespace) -> dict[str, Any]:
    # The phrase cache off: the texts repeat, and hits would be read from disk, so the
    # synthesis whose memory this watches would run a dozen times (`--set
    # cache.enabled=true` soaks the cache instead).
    no_cache = {"cache": {"enabled": False}}
    with daemon_run("soak", args.set, args.keep, record_events, no_cache) as (rig, rec):
        soak = Soak(args, rig, rec)
        soak.telemetry_after(0.0, 20)
        log(f"soak: {args.requests} requests, window {args.window}")
        soak.run()
    result: dict[str, Any] = {"benchmark": "soak", "root": str(rig.root)}
    result["daemon"] = rig.summary()
    result.update(soak.results())
    result["targets"] = targets(result)
    result["machine"] = rig.machine()
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=TARGET_REQUESTS, help="default 10000")
    parser.add_argument("--window", type=int, default=8, help="requests in flight (default 8)")
    parser.add_argument("--seed", type=int, default=1, help="text order (default 1)")
    parser.add_argument(
        "--texts",
        choices=("short", "mixed"),
        default="short",
        help="short: one word (default); mixed: 1-3 word announcements",
    )
    parser.add_argument("--sample-every", type=int, default=100, help="RSS sample interval")
    parser.add_argument("--warmup", type=int, help="requests before the 'after warm-up' RSS")
    parser.add_argument("--latency-window", type=int, default=1000, help="requests per row")
    parser.add_argument("--progress-every", type=int, default=500, help=argparse.SUPPRESS)
    parser.add_argument(
        "--stall", type=float, default=120.0, help="give up after this long without progress"
    )
    add_daemon_options(parser)
    args = parser.parse_args(argv)
    if args.window < 1 or args.requests < 1:
        parser.error("--window and --requests must be positive")
    return run_and_emit(run, args, print_report)


if __name__ == "__main__":
    sys.exit(main())
