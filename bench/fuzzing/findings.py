"""What a fuzz run found: per class and kind, the problems (each with a replay command),
the checks, and the table printed from them."""

from __future__ import annotations

import base64
import json
import re
from collections import Counter
from typing import Any

from bench.daemon_rig import print_daemon, voice_check
from bench.report_io import fields, fmt, print_targets, stats, table, target
from edge_tts.messages.events import FINAL_KINDS

from .case import ALLOWED, Case
from .lanes import Fuzz

PROBLEMS = (
    "no_final_event",
    "several_final_events",
    "unexpected_kind",
    "correlation_data_wrong",
    "not_published",
)


def results(fuzz: Fuzz) -> dict[str, Any]:
    args, cases = fuzz.args, fuzz.cases
    problems: dict[str, list[dict[str, Any]]] = {name: [] for name in PROBLEMS}
    per_class: dict[str, Counter[str]] = {}
    answer_ms: dict[str, list[float]] = {}
    kinds: Counter[str] = Counter()
    for c in cases:
        row = per_class.setdefault(c.klass, Counter())
        row["sent"] += 1
        if c.publish_error:
            row["not_published"] += 1
            problems["not_published"].append(describe(args, c))
            continue
        row[c.kind or "none"] += 1
        kinds[c.kind or "none"] += 1
        if c.kind is None:
            problems["no_final_event"].append(describe(args, c))
        if len(c.finals) > 1:
            row["several"] += 1
            problems["several_final_events"].append(describe(args, c))
        if c.kind is not None and c.kind not in ALLOWED[c.expect]:
            row["unexpected"] += 1
            problems["unexpected_kind"].append(describe(args, c))
        if c.correlation_ok is False:
            problems["correlation_data_wrong"].append(describe(args, c))
        row["audio_ms"] += int(c.audio_ms)
        row["synthesis_ms"] += int(c.synthesis_ms)
        if c.answered_at is not None and c.sent_at is not None:
            answer_ms.setdefault(c.klass, []).append((c.answered_at - c.sent_at) * 1000)
    # Cross-check: a payload answered on its response topic with an id it carried has
    # the same final event on the events topic.
    copies_missing = [
        {"index": c.index, "events_copies": c.events_copies, "finals": c.finals}
        for c in cases
        if c.kind and c.usable_topic and c.sender_id and len(fuzz.by_id[c.sender_id]) == 1
        and c.events_copies != len(c.finals) and c.kind != "duplicate"
    ]  # fmt: skip
    reasons = Counter(
        re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'…'", c.reason or ""))[:90]
        for c in cases
        if c.kind == "rejected"
    )
    rss = [mb for _, mb in fuzz.samples]
    telemetry = fuzz.telemetry or {}
    payloads = sum(1 for c in cases if c.index >= 0)
    return {
        "payloads": payloads,
        "seed": args.seed,
        "window": args.window,
        "reject_window": args.reject_window,
        "alone_batch": args.alone_batch,
        "heavy": args.heavy,
        "set": args.set,
        "elapsed_s": round(fuzz.elapsed, 1),
        "payloads_per_s": round(payloads / fuzz.elapsed, 1) if fuzz.elapsed else None,
        "time_s": {  # where the run's time went
            "with_a_heavy_payload_out": round(fuzz.heavy_s, 1),
            "alone_batches": round(fuzz.alone_s, 1),
            "daemon_synthesis": round(sum(c.synthesis_ms for c in cases) / 1000, 1),
            "audio_made": round(sum(c.audio_ms for c in cases) / 1000, 1),
            **{f"cpu_{k}": round(v, 1) for k, v in fuzz.cpu_s.items()},
        },
        "final_events": dict(sorted(kinds.items())),
        "other_events": dict(sorted(fuzz.nonfinal.items())),
        "per_class": {k: dict(sorted(v.items())) for k, v in sorted(per_class.items())},
        "answer_ms": {k: stats(v) for k, v in sorted(answer_ms.items())},
        "problems": {k: v[:50] for k, v in problems.items()},
        "problem_counts": {k: len(v) for k, v in problems.items()},
        "late_answers": fuzz.late[:50],
        "events_topic": {
            "idless_final_events_not_matched_alone": fuzz.idless_events,
            # Each id-less answer on a response topic has its copy on the events topic;
            # more id-less final events there than that is a doubled answer.
            "idless_answers_on_response_topics": sum(1 for c in cases if c.idless),
            "final_events_with_daemon_ids": fuzz.other_id_events,
            "payloads_without_their_events_topic_copy": copies_missing[:50],
        },
        "stray_response_topics": fuzz.stray_rt[:20],
        "client_disconnects": fuzz.client.disconnects,
        "rejection_reasons": dict(reasons.most_common(25)),
        "crash": fuzz.crash,
        "stall": fuzz.stall,
        "rss_mb": {
            "first": round(rss[0], 1),
            "max": round(max(rss), 1),
            "last": round(rss[-1], 1),
            "samples": [[n, round(mb, 1)] for n, mb in fuzz.samples],
        },
        "daemon_counters": telemetry.get("counters"),
        "voice": voice_check(fuzz.telemetry),
        "last_request": next((c.kind for c in cases if c.index == -2), None),
    }


def describe(args: Any, c: Case) -> dict[str, Any]:
    return {
        "index": c.index,
        "class": c.klass,
        "note": c.note[:200],
        "expect": c.expect,
        "finals": c.finals,
        "reason": c.reason,
        "qos": c.qos,
        "retain": c.retain,
        "response_topic": c.response_topic[:80],
        "payload_preview": repr(c.payload[:120]),
        "payload_b64": base64.b64encode(c.payload).decode() if len(c.payload) <= 4096 else None,
        "payload_bytes": len(c.payload),
        "publish_error": c.publish_error,
        "replay": (
            f".venv/bin/python -m bench.fuzz --seed {args.seed} --requests {args.requests} "
            f"--heavy {args.heavy} --cases {c.index}"
            if c.index >= 0
            else None
        ),
    }


def checks(r: dict[str, Any]) -> list[dict[str, Any]]:
    d, pc = r["daemon"], r["problem_counts"]
    ev = r["events_topic"]
    surplus = ev["idless_final_events_not_matched_alone"] - ev["idless_answers_on_response_topics"]
    unexpected, wrong = pc["unexpected_kind"], pc["correlation_data_wrong"]
    last, tracebacks = r["last_request"], d["log"]["tracebacks"]
    rows = [
        (
            "every payload exactly one final event",
            f"{pc['no_final_event']} without, {pc['several_final_events']} with several, "
            f"{surplus} unmatched id-less",
            pc["no_final_event"] == 0 and pc["several_final_events"] == 0 and surplus == 0,
        ),
        ("final event kinds as each class allows", f"{unexpected} unexpected", unexpected == 0),
        ("correlation data echoed", f"{wrong} wrong", wrong == 0),
        ("the daemon never stalled", "stalled" if r["stall"] else "no", not r["stall"]),
        (
            "same daemon process at the end",
            f"PID {d['pid']}",
            bool(d["same_pid_at_end"]) and not r["crash"],
        ),
        ("still serving: a last valid request plays", str(last), last == "finished"),
        ("watchdog pings still coming", str(d["watchdog_ok"]), bool(d["watchdog_ok"])),
        ("exit 0 on SIGTERM", str(d["exit_code"]), d["exit_code"] == 0),
        ("no tracebacks in the daemon log", str(tracebacks), tracebacks == 0),
    ]
    return [target(name, value, ok, failed="FAIL") for name, value, ok in rows]


def print_report(r: dict[str, Any]) -> None:
    t = r["time_s"]
    fields(
        "fuzz",
        {
            "payloads, seed": f"{r['payloads']}, {r['seed']}",
            "windows: may play, refused": f"{r['window']}, {r['reject_window']}",
            "time": f"{r['elapsed_s']:.0f} s ({r['payloads_per_s']}/s)",
            "--set": " ".join(r["set"]),
            "voice": r["voice"],
            "s with a heavy payload out": t["with_a_heavy_payload_out"],
            "s for the payloads sent alone": t["alone_batches"],
            "audio the daemon synthesized (s), in (s)": (
                f"{t['audio_made']:.0f}, {t['daemon_synthesis']:.0f}"
            ),
            "CPU s: daemon, fuzz client": (
                f"{fmt(t.get('cpu_daemon'))}, {fmt(t.get('cpu_fuzz_client'))}"
            ),
            "final events": ", ".join(f"{k} {v}" for k, v in r["final_events"].items()),
            "other events": ", ".join(f"{k} {v}" for k, v in r["other_events"].items()),
        },
    )
    print_classes(r)
    table(
        ("times", "top rejection reasons"),
        [(n, reason) for reason, n in list(r["rejection_reasons"].items())[:12]],
    )
    print_problems(r)
    print_fuzz_daemon(r)
    print_targets(r["checks"])


def print_classes(r: dict[str, Any]) -> None:
    cols = [*FINAL_KINDS, "none"]
    rows = []
    for klass, row in r["per_class"].items():
        a = r["answer_ms"].get(klass, {})
        rows.append(
            (klass, row.get("sent", 0), *(row.get(c, 0) or "" for c in cols),
             row.get("several", 0) or "", row.get("unexpected", 0) or "", a.get("p50"),
             a.get("p99"), row.get("audio_ms", 0) / 1000, row.get("synthesis_ms", 0) / 1000)
        )  # fmt: skip
    table(
        ("class", "sent", *cols, "several", "unexpected", "answer p50 ms", "p99", "audio s",
         "synthesis s"),
        rows,
    )  # fmt: skip


def print_problems(r: dict[str, Any]) -> None:
    rows = []
    for kind, items in r["problems"].items():
        for p in items[:8]:
            got = f"{p['finals'] or 'nothing'}" + (
                f": {str(p['reason'])[:80]}" if p["reason"] else ""
            )
            rows.append(
                (kind, p["index"], p["class"], p["note"][:70], p["expect"], got, p["replay"])
            )
    counts = ", ".join(f"{k} {v}" for k, v in r["problem_counts"].items())
    table(
        ("problem", "#", "class", "payload", "expected", "got", "replay"),
        rows,
        f"problems: {counts}",
    )
    ev = r["events_topic"]
    fields(
        "matching",
        {
            "answers after the timeout": r["late_answers"][:10],
            "id-less final events on the events topic not sent alone": ev[
                "idless_final_events_not_matched_alone"
            ],
            "id-less answers on response topics": ev["idless_answers_on_response_topics"],
            "payloads missing their copy on the events topic": len(
                ev["payloads_without_their_events_topic_copy"]
            ),
            "stray response topics": len(r["stray_response_topics"]),
            "fuzz client dropped by the broker": len(r["client_disconnects"]),
        },
    )


def print_fuzz_daemon(r: dict[str, Any]) -> None:
    rss, d = r["rss_mb"], r["daemon"]
    more = {
        "still serving (last request)": r["last_request"],
        "watchdog pings at the end": d["watchdog_ok"],
        "RSS MB: first, max, last": f"{rss['first']}, {rss['max']}, {rss['last']}",
    }
    if "machine" in r:
        m = r["machine"]
        more["load average"] = f"{m['loadavg_start']} -> {m['loadavg_end']}"
    print_daemon(d, r["daemon_counters"], **more)
    if r["stall"]:
        print(f"STALL: {json.dumps(r['stall'])}\n")
    if r["crash"]:
        print(f"CRASH: {json.dumps({k: v for k, v in r['crash'].items() if k != 'log_tail'})}")
        print(r["crash"]["log_tail"][-2000:])
