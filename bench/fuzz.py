"""Fuzz: N seeded random payloads on the say topic of ONE daemon; each must get exactly
one final event, and the daemon must stay the same process, serving, with bounded RSS.

    python -m bench.fuzz                                    # 10,000 payloads, seed 1
    python -m bench.fuzz --requests 300 --seed 7 --out fuzz.json
    python -m bench.fuzz --seed 7 --requests 300 --cases 17,42   # replay some payloads

The rig is bench/soak.py's (bench/daemon_rig.py): a real Mosquitto, the daemon as
`python -m edge_tts run` with the default voice on the wav-dir sink (WAVs deleted every
100 payloads), `--set KEY=VALUE` passed to `edge-ttsd run --set`. The parts are in
bench/fuzzing/: the payloads (case.py, text_cases.py, junk.py, mix.py), the MQTT 5 client
(mqtt5_client.py), the answers matched to their payloads (answers.py), the schedule
(lanes.py) and the findings (findings.py).

Payload classes (weights in CLASSES): valid requests (all optional fields, valid values),
plain text and JSON strings, texts that expire (ttl 0, expires_at in the past), emoji /
RTL / CJK / combining marks, NUL and control characters (raw and \\u-escaped, lone
surrogates), random bytes, random printable text, invalid UTF-8, truncated and mutated
JSON, malformed SSML (cut, mismatched, unknown elements and values, DTDs, entities),
deep nesting (up to 100,000 levels), JSON that is not an object, a wrong type or
out-of-range value for each field (text, id, priority, voice, speaker, speed, volume, ttl,
expires_at, interrupt), unknown fields, unknown voices, huge strings (over
queue.max_text_chars, in text, id, voice, unknown fields, plain text), runs without
spaces ("12:12:...", "1-1-...", digits, letters, punctuation), empty payloads, MQTT 5
properties (response topics with '#', '+', empty or 60 KB long, no response topic,
correlation data up to 64 KB, message expiry 0 / 1 / 2^32-1, user properties, content
type, payload format indicator), retained messages and their clearing (an empty retained
message), the same id and text again (a `duplicate`). QoS 0, 1 or 2 at random. What
plays is short (one or two words, a Unicode piece, a run of up to ~40 characters: the
synthesis of the ~30 % of payloads that play is what a run's time goes to); the few
costly payloads ("12:"*200+"00", "1-"*999+"1" and two more texts of max_text_chars, each
~2 min of audio) are --heavy (default 4), spread over the run, each sent when nothing
else that plays is in flight.

Correlation: every payload goes out with its own MQTT 5 response topic
fuzz/<run>/r/<index> and correlation data c<index>; the daemon publishes the final event
there too (also a `rejected` for a payload it cannot parse, which carries no id on the
events topic), so each answer is matched to its payload, and the correlation data is
checked. Payloads whose response topic cannot serve (none, or an invalid one: the point
of the test) are collected and sent in batches of --alone-batch (20), each alone, after
everything in flight was answered, and the final event(s) on the events topic until it
is answered are its own (those with another payload's id excepted); the id-less final
events on the events topic must number the id-less answers on response topics plus
those matched alone (a surplus is a doubled answer). Two lanes (bench/fuzzing/lanes.py):
at most --window (8) payloads that may be queued (play, expire, duplicate, or any) are
in flight, below the daemon's queue of 32; payloads expected to be refused on arrival
go beside them, up to --reject-window (32), never waiting behind a synthesis, at most
--window spoken payloads ahead. A payload's answer
is awaited for --answer-timeout s (heavy ones 600 s); one without is listed as missing.
When nothing at all is answered for --stall s (default 240) the daemon is stuck: the run
stops and reports what waited, with the daemon's last telemetry (queue depth, syntheses
in flight).
At the end an empty retained message clears the say topic, a last valid request must
play (`finished`), and any answer that arrived for a payload already answered is counted
as a doubled final event.

Checked and reported: final events per class and per kind; payloads with no final event,
with more than one, or with a kind the class does not allow (e.g. an invalid payload
that played; the same id and text again must be a `duplicate` while the first is in
flight or among the daemon's last 1,000 plays, and plays again after them) -- each
with its index, class, a description, the payload (base64 in the JSON) and the command
that replays it; correlation data echoed; the fuzz client's
disconnections by the broker; the daemon's PID unchanged, its exit code on SIGTERM,
WATCHDOG=1 pings still coming at the end (its health tick stops them when a thread
died), its log's errors and tracebacks, its RSS (sampled every 100 payloads: first, max,
last) and its counters (telemetry).
"""

from __future__ import annotations

import argparse
import secrets
import sys
from collections.abc import Sequence
from typing import Any

from bench.daemon_rig import Rig, add_daemon_options, daemon_run
from bench.fuzzing.case import MAX_TEXT_CHARS
from bench.fuzzing.findings import checks, print_report, results
from bench.fuzzing.lanes import Fuzz
from bench.fuzzing.mix import HEAVY
from bench.fuzzing.mqtt5_client import Client
from bench.report_io import log, run_and_emit

TARGET = 10_000


def run(args: argparse.Namespace) -> dict[str, Any]:
    run_id = secrets.token_hex(4)
    indexes = [int(i) for i in args.cases.split(",")] if args.cases else list(range(args.requests))

    def connect(rig: Rig) -> Client:
        topics = [rig.topic("events"), rig.topic("telemetry"), f"fuzz/{run_id}/#"]
        return Client(rig.port, topics)

    with daemon_run("fuzz", args.set, args.keep, connect) as (rig, client):
        fuzz = Fuzz(args, rig, client, run_id)
        log(f"fuzz: {len(indexes)} payloads, seed {args.seed}")
        fuzz.run(indexes)
        watchdog_ok = rig.alive() and rig.watchdog_pings(10)
    result: dict[str, Any] = {"benchmark": "fuzz", "root": str(rig.root)}
    result.update(results(fuzz))
    result["daemon"] = {**rig.summary(), "watchdog_ok": watchdog_ok}
    result["checks"] = checks(result)
    result["machine"] = rig.machine()
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--requests", type=int, default=TARGET, help="payloads (default 10000)")
    add("--seed", type=int, default=1, help="RNG seed (default 1)")
    add("--window", type=int, default=8, help="payloads that may play in flight (default 8)")
    add("--reject-window", type=int, default=32, help="refused payloads in flight (default 32)")
    add("--alone-batch", type=int, default=20, help="payloads sent alone per batch (default 20)")
    add("--heavy", type=int, default=len(HEAVY), help=f"costly texts (default {len(HEAVY)})")
    add(
        "--cases",
        help="comma-separated payload indexes: replay only these (same --seed, "
        "--requests, --heavy)",
    )
    add("--answer-timeout", type=float, default=120.0, help="seconds to wait for an answer")
    add(
        "--stall",
        type=float,
        default=240.0,
        help="stop the run when nothing is answered for this long (default 240 s)",
    )
    add(
        "--max-text-chars",
        type=int,
        default=MAX_TEXT_CHARS,
        help="the daemon's queue.max_text_chars (when changed with --set)",
    )
    add("--progress-every", type=int, default=1000, help=argparse.SUPPRESS)
    add_daemon_options(parser)
    args = parser.parse_args(argv)
    if min(args.window, args.reject_window, args.alone_batch, args.requests) < 1:
        parser.error("--window, --reject-window, --alone-batch and --requests must be positive")
    return run_and_emit(run, args, print_report)


if __name__ == "__main__":
    sys.exit(main())
