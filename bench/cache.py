"""The phrase cache end to end: a cached phrase vs the same phrase uncached vs a new
phrase, interleaved, through one daemon and the paced sound card.

    python -m bench.cache                    # 15 rounds of the three (~3 min on idle cores)
    python -m bench.cache --rounds 30 --out cache.json

Mosquitto, PulseAudio's pipe sink paced by the system clock (tests/support/soundcard.py)
and one daemon (bench/e2e/rig.py; the default voice is our INT8 build) with
`cache.phrases: [PHRASE]`; measuring starts once the pre-renderer has rendered it (the
daemon's telemetry says `done`). Then each round sends, in a rotating order:

  cached    PHRASE: served from the cache (its `finished` event: cached_chunks 1)
  uncached  PHRASE with "cache": false: synthesized by the INT8 voice, nothing stored
  new       a sentence of the same shape never sent before ("The red door is open."):
            a miss, synthesized and stored

TTFA "sound out" is publish -> the first loud sample out of the sound server (the
sample-accurate figure of bench/daemon_e2e.py); the daemon's own `time_to_first_audio_ms`
is beside it. CPU per request is the daemon process's user + system time (psutil) from
just before the publish to its `finished` event, after the audio has played: it includes
MQTT, the text front-end, playback and the telemetry tick, the same for all three.
Targets (issue 14): cached TTFA p50 <= 0.5 x uncached; CPU per cached request <= 0.1 x
uncached.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.daemon_rig import add_daemon_options
from bench.e2e.knobs import Knobs
from bench.e2e.rig import SETTLE_S, Daemon, Rig
from bench.report_io import (
    fmt,
    log,
    machine_info,
    machine_line,
    print_targets,
    run_and_emit,
    stats,
    table,
    target,
)

PHRASE = "The garage door is open."
# Words that make "The <word> door is open." a sentence no earlier round sent.
NEW_WORDS = (
    "red blue green front back side barn shed attic cellar kitchen office porch patio pantry "
    "studio pool guest main north south east west upper lower inner outer spare"
)
KINDS = ("cached", "uncached", "new")
TTFA_RATIO_MAX = 0.5
CPU_RATIO_MAX = 0.1


def new_phrase(n: int) -> str:
    """A sentence of the phrase's shape that no earlier round sent."""
    words = NEW_WORDS.split()
    word = words[n % len(words)]
    return f"The {word} door is open." if n < len(words) else f"The {word} door {n} is open."


def wait_prerendered(d: Daemon, timeout: float = 600) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        telemetry = d.events.latest_telemetry(d.device) or {}
        progress = telemetry.get("cache", {}).get("prerender", {})
        if progress.get("state") == "done":
            return dict(progress)
        time.sleep(0.5)
    raise TimeoutError(f"the phrase was not pre-rendered within {timeout:.0f} s")


def cpu_seconds(d: Daemon) -> float:
    import psutil

    assert d.proc.proc is not None
    times = psutil.Process(d.proc.proc.pid).cpu_times()
    return float(times.user + times.system)


def one(d: Daemon, kind: str, text: str) -> dict[str, Any]:
    time.sleep(SETTLE_S)  # the last request's tail is out of the sound server
    mark = d.card.mark()
    rid = d.next_id(kind)
    extra = {"cache": False} if kind == "uncached" else {}
    cpu_before = cpu_seconds(d)
    sent, sent_wall = time.monotonic(), time.time()
    d.rig.rec.publish(d.say_topic, json.dumps({"id": rid, "text": text, **extra}))
    d.events.wait([rid], 90)
    cpu_ms = (cpu_seconds(d) - cpu_before) * 1000
    row = d.figures(rid, text, sent, mark, sent_wall)
    _, event = d.events.final[rid]
    row.update(kind=kind, cpu_ms=round(cpu_ms, 1), cached_chunks=event.get("cached_chunks"))
    return row


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in KINDS:
        mine = [row for row in rows if row["kind"] == kind]
        out[kind] = {
            "requests": len(mine),
            "all_finished": all(row["event"] == "finished" for row in mine),
            "cached_chunks": sorted({row["cached_chunks"] for row in mine}),
            "sound_exact_ms": stats([row["sound_exact_ms"] for row in mine]),
            "daemon_ttfa_ms": stats([row["daemon_ttfa_ms"] for row in mine]),
            "cpu_ms": stats([row["cpu_ms"] for row in mine]),
            "cpu_ms_mean": round(sum(row["cpu_ms"] for row in mine) / max(1, len(mine)), 1),
            "synthesis_ms": stats([row["synthesis_ms"] for row in mine]),
        }
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="ttsbc-"))  # short: unix socket paths are limited
    started = time.monotonic()
    result: dict[str, Any] = {"benchmark": "cache", "phrase": args.phrase, "rounds": args.rounds}
    load_before = os.getloadavg()
    rig = Rig(root)
    rows: list[dict[str, Any]] = []
    try:
        cache = {"enabled": True, "phrases": [args.phrase]}  # Knobs turn it off by default
        with rig.daemon(Knobs("main"), args.set, cache=cache) as d:
            d.speak("Ready.", "warm", timeout=90)  # the stream's first utterance is not measured
            log("waiting for the pre-renderer")
            result["prerender"] = wait_prerendered(d)
            for r in range(args.rounds):
                order = KINDS[r % 3 :] + KINDS[: r % 3]
                for kind in order:
                    rows.append(one(d, kind, new_phrase(r) if kind == "new" else args.phrase))
                log(f"  round {r + 1}/{args.rounds}")
            result["underruns"] = d.underruns()
    finally:
        rig.close()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    result.update(summarize(rows), rows=rows, voice=rig.voice)
    result["machine"] = machine_info(load_before)
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    result["targets"] = targets(result)
    return result


def ratio(result: dict[str, Any], metric: str, quantile: str) -> float | None:
    cached = result["cached"][metric][quantile]
    uncached = result["uncached"][metric][quantile]
    return None if cached is None or not uncached else round(cached / uncached, 3)


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    ttfa = ratio(result, "sound_exact_ms", "p50")
    cpu = ratio(result, "cpu_ms", "p50")
    return [
        target(
            f"cached TTFA p50 <= {TTFA_RATIO_MAX} x uncached",
            ttfa,
            None if ttfa is None else ttfa <= TTFA_RATIO_MAX,
        ),
        target(
            f"CPU per cached request (p50) <= {CPU_RATIO_MAX} x uncached",
            cpu,
            None if cpu is None else cpu <= CPU_RATIO_MAX,
        ),
    ]


def print_report(result: dict[str, Any]) -> None:
    print(f"phrase cache: {result['phrase']!r}, {result['rounds']} rounds, voice {result['voice']}")
    print(machine_line(result["machine"]))
    print(f"pre-render: {result['prerender']}; underruns {result.get('underruns')}\n")
    rows = []
    for kind in KINDS:
        k = result[kind]
        rows.append(
            (kind, k["requests"], k["cached_chunks"],
             f"{fmt(k['sound_exact_ms']['p50'])} / {fmt(k['sound_exact_ms']['p95'])}",
             k["daemon_ttfa_ms"]["p50"], f"{fmt(k['cpu_ms']['p50'])} / {fmt(k['cpu_ms_mean'])}",
             k["synthesis_ms"]["p50"])
        )  # fmt: skip
    table(
        ("request", "n", "cached chunks", "TTFA sound out p50 / p95 (ms)", "daemon TTFA p50 (ms)",
         "CPU per request p50 / mean (ms)", "synthesis p50 (ms)"),
        rows,
    )  # fmt: skip
    print_targets(result["targets"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--rounds", type=int, default=15, help="rounds of cached, uncached, new")
    add("--phrase", default=PHRASE, help="the cached phrase")
    add_daemon_options(parser)
    args = parser.parse_args(argv)
    return run_and_emit(run, args, print_report)


if __name__ == "__main__":
    sys.exit(main())
