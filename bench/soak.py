"""Soak: N short requests through ONE daemon process; RSS curve, latency over time, and
exactly one final event per request.

    python bench/soak.py                                  # 10,000 requests
    python bench/soak.py --requests 300 --out soak.json   # a quick check
    python bench/soak.py --set synthesis.max_concurrent=1 # any daemon setting (--set)

A real Mosquitto on a free port (tests/support/broker.py) and the daemon as `python -m edge_tts
run --config F [--set K=V ...]` with a fake NOTIFY_SOCKET (tests/support/daemon_proc.py), the
default voice (our INT8 build: EDGE_TTS_DATA_DIR is this user's data directory; the
digest in the daemon's telemetry is checked against the INT8 manifest), `audio.sink:
wav-dir` (one WAV per request, not paced by a clock: faster than real time). Each WAV is
deleted once its `finished` event arrives (and any leftover at every RSS sample).

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
import json
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from daemon_rig import (  # noqa: E402 - bench/ is the script's own directory
    Rig,
    add_daemon_options,
    add_set_option,
    daemon_run,
    fmt,
    log,
    print_log_and_counters,
    process_until,
    record_events,
    run_and_emit,
    slope,
    stats,
    voice_check,
)

from edge_tts.messages.events import FINAL_KINDS  # noqa: E402 - needs the repo root on sys.path
from tests.support.broker import Recorder  # noqa: E402 - needs the repo root on sys.path

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


@dataclass
class Request:
    index: int
    id: str
    text: str
    sent: float
    started: float | None = None
    final_at: float | None = None
    kind: str | None = None
    event: dict[str, Any] | None = None
    finals: int = 0


class Soak:
    def __init__(self, args: argparse.Namespace, rig: Rig, rec: Recorder) -> None:
        self.args = args
        self.rig = rig
        self.rec = rec
        self.events_topic = rig.topic("events")
        self.telemetry_topic = rig.topic("telemetry")
        self.say_topic = rig.topic("say")
        self.requests: dict[str, Request] = {}
        self.order: list[Request] = []
        self.outstanding: set[str] = set()
        self.doubled: dict[str, list[str]] = {}
        self.strays: list[dict[str, Any]] = []
        self.nonfinal: Counter[str] = Counter()
        self.telemetry: dict[str, Any] | None = None
        self.telemetry_at = 0.0
        self.samples: list[dict[str, float]] = []
        self._seen = 0
        self.wavs_deleted = 0
        self.elapsed = 0.0
        self.end_marker: str | None = None

    # --- events ------------------------------------------------------------------------

    def wait_messages(self, timeout: float) -> bool:
        """Until a message we have not processed arrives (True) or `timeout` (False)."""
        try:
            self.rec.wait_for(lambda: len(self.rec.messages) > self._seen, timeout)
        except AssertionError:
            return False
        return True

    def process(self) -> list[Request]:
        """Read new messages; returns the requests that got their (first) final event."""
        done: list[Request] = []
        messages = self.rec.messages
        while self._seen < len(messages):
            stamp, topic, payload, _ = messages[self._seen]
            self._seen += 1
            if topic == self.telemetry_topic:
                self.telemetry = json.loads(payload)
                self.telemetry_at = stamp
                continue
            if topic != self.events_topic:
                continue
            event = json.loads(payload)
            kind, rid = event.get("event"), event.get("id")
            request = self.requests.get(rid) if isinstance(rid, str) else None
            if kind not in FINAL_KINDS:
                self.nonfinal[str(kind)] += 1
                if kind == "started" and request is not None and request.started is None:
                    request.started = stamp
                continue
            if request is None:
                self.strays.append(event)
                continue
            request.finals += 1
            if request.finals > 1:
                self.doubled.setdefault(request.id, []).append(str(kind))
                continue
            request.final_at, request.kind, request.event = stamp, str(kind), event
            self.outstanding.discard(request.id)
            done.append(request)
            if kind == "finished":
                self._delete_wav(request.id)
        return done

    def _delete_wav(self, rid: str) -> None:
        try:
            (self.rig.wav_dir / f"{rid}.wav").unlink()
            self.wavs_deleted += 1
        except FileNotFoundError:
            pass

    # --- requests ----------------------------------------------------------------------

    def send(self, index: int, text: str, rid: str | None = None) -> Request:
        rid = rid or f"soak-{index}"
        payload = json.dumps({"id": rid, "text": text})
        request = Request(index, rid, text, time.monotonic())
        self.requests[rid] = request
        self.outstanding.add(rid)
        self.rec.client.publish(self.say_topic, payload, qos=1)
        return request

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
                self.order.append(self.send(next_index, texts[next_index]))
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
            marker = self.send(args.requests, "Soak finished.", rid="soak-end")
            self.until(lambda: marker.kind is not None, 120, "the end marker's final event")
            self.end_marker = marker.kind
            self.await_telemetry(after=time.monotonic())

    def until(self, condition: Callable[[], bool], timeout: float, what: str) -> bool:
        return process_until(self.rec, self.process, condition, timeout, what)

    def await_telemetry(self, after: float) -> None:
        self.until(lambda: self.telemetry_at > after, 20, "fresh telemetry")

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
        telemetry = self.telemetry or {}
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
            "voice": voice_check(self.telemetry),
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


def targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    rss = r["rss"]
    out = []

    def add(name: str, ok: bool | None, value: str) -> None:
        verdict = "-" if ok is None else ("PASS" if ok else "MISS")
        out.append({"target": name, "verdict": verdict, "value": value})

    growth = rss["growth_after_warmup_mb"]
    add(
        f"RSS growth after warm-up < {RSS_GROWTH_MAX_MB:.0f} MB "
        f"(requests {rss['warmup_requests']}-{r['requests']})",
        None if growth is None else growth < RSS_GROWTH_MAX_MB,
        f"{fmt(growth, '+.2f')} MB",
    )
    projected = rss["projected_growth_10000_mb"]
    judged = rss["second_half_samples"] >= 10  # a slope over a few samples is noise
    add(
        f"RSS growth over 10,000 requests at the second-half slope < {RSS_GROWTH_MAX_MB:.0f} MB",
        None if projected is None or not judged else projected < RSS_GROWTH_MAX_MB,
        f"{fmt(projected, '+.2f')} MB ({fmt(rss['slope_second_half_mb_per_1000'], '+.3f')}"
        f" MB/1000{'' if judged else '; not judged: under 10 samples'})",
    )
    add(
        "every request exactly one final event",
        r["missing_count"] == 0 and r["doubled_count"] == 0,
        f"{r['missing_count']} missing, {r['doubled_count']} doubled, {r['stray_count']} stray",
    )
    add(
        "daemon still the same process, exits 0 on SIGTERM",
        r["daemon"]["same_pid_at_end"] and r["daemon"]["exit_code"] == 0,
        f"same PID: {r['daemon']['same_pid_at_end']}, exit {r['daemon']['exit_code']}",
    )
    return out


def print_report(r: dict[str, Any]) -> None:
    rss = r["rss"]
    print(
        f"soak: {r['requests']} requests ({r['texts']} texts), window {r['window']}, "
        f"seed {r['seed']}, "
        f"{r['elapsed_s']:.0f} s ({r['requests_per_s']} req/s); voice: {r['voice']}"
    )
    if r["set"]:
        print(f"  --set {' '.join(r['set'])}")
    print("\nfinal events: " + ", ".join(f"{k} {v}" for k, v in r["final_events"].items()))
    print(
        f"  missing {r['missing_count']}, doubled {r['doubled_count']}, stray "
        f"{r['stray_count']}; end marker: {r['end_marker']}"
    )
    if r["rejection_reasons"]:
        print(
            "  rejection reasons: "
            + "; ".join(f"{k} ({v})" for k, v in r["rejection_reasons"].items())
        )
    print("\nRSS (MB)")
    print(
        f"  first {rss['first_mb']}, after warm-up ({rss['warmup_requests']} requests) "
        f"{rss['after_warmup_mb']}, max {rss['max_mb']}, last {rss['last_mb']}"
    )
    print(
        f"  growth: total {rss['growth_total_mb']:+.2f}, after warm-up "
        f"{fmt(rss['growth_after_warmup_mb'], '+.2f')}; slope over the second half "
        f"{fmt(rss['slope_second_half_mb_per_1000'], '+.3f')} MB/1000 requests"
    )
    print(
        f"  threads {rss['threads_first_last'][0]} -> {rss['threads_first_last'][1]}, "
        f"open fds {rss['fds_first_last'][0]} -> {rss['fds_first_last'][1]}, "
        f"daemon CPU {rss['cpu_s']} s"
    )
    samples = rss["samples"]
    step = max(1, len(samples) // 10)
    curve = samples[::step] + ([samples[-1]] if (len(samples) - 1) % step else [])
    print("  curve: " + "  ".join(f"{n}:{mb:.1f}" for n, mb, _, _ in curve))
    print("\nlatency (ms) per window, by send order")
    print(
        f"  {'requests':>13} {'fin':>5}  {'sent->finished p50/p95/p99':>27}  "
        f"{'synthesis p50/p95/p99':>25}  {'daemon TTFA p50/p95/p99':>24}  {'RSS':>6}"
    )
    for w in r["latency_windows"]:
        a, b, c = w["sent_to_finished_ms"], w["synthesis_ms"], w["ttfa_ms"]
        print(
            f"  {w['requests']:>13} {w['finished']:>5}  "
            f"{fmt(a['p50']):>8} {fmt(a['p95']):>8} {fmt(a['p99']):>9}  "
            f"{fmt(b['p50']):>7} {fmt(b['p95']):>8} {fmt(b['p99']):>8}  "
            f"{fmt(c['p50']):>7} {fmt(c['p95']):>7} {fmt(c['p99']):>8}  "
            f"{fmt(w['rss_mb_end'], '.1f'):>6}"
        )
    print("\nper text (medians): audio ms / synthesis ms / real-time factor")
    for row in r["by_text"]:
        print(
            f"  {row['text']:22} {row['n']:>5}  {row['audio_ms']:>6.0f} "
            f"{row['synthesis_ms']:>6.0f} {row['real_time_factor']:>6.3f}"
        )
    d = r["daemon"]
    print(
        f"\ndaemon: PID {d['pid']} same at end: {d['same_pid_at_end']}; exit {d['exit_code']} "
        f"after SIGTERM ({d['stop_s']} s)"
    )
    print_log_and_counters(d, r["daemon_counters"])
    print("\ntargets")
    for t in r["targets"]:
        print(f"  {t['verdict']:5} {t['target']:70} {t['value']}")


def run(args: argparse.Namespace) -> dict[str, Any]:
    with daemon_run("soak", args.set, args.keep, record_events) as (rig, rec):
        soak = Soak(args, rig, rec)
        soak.await_telemetry(after=0.0)
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
    add_set_option(parser)
    add_daemon_options(parser)
    args = parser.parse_args(argv)
    if args.window < 1 or args.requests < 1:
        parser.error("--window and --requests must be positive")
    return run_and_emit(run, args, print_report)


if __name__ == "__main__":
    sys.exit(main())
