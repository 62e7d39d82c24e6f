"""What a fuzz run found: per class and kind, the problems (each with a replay command),
the checks, and the table printed from them."""

from __future__ import annotations

import base64
import json
import re
from collections import Counter
from typing import Any

from daemon_rig import fmt, print_log_and_counters, stats, voice_check

from edge_tts.messages.events import FINAL_KINDS

from .case import ALLOWED, Case
from .run import Fuzz

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
            f".venv/bin/python bench/fuzz.py --seed {args.seed} --requests {args.requests} "
            f"--heavy {args.heavy} --cases {c.index}"
            if c.index >= 0
            else None
        ),
    }


def checks(r: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    d, pc = r["daemon"], r["problem_counts"]

    def add(name: str, ok: bool, value: str) -> None:
        out.append({"check": name, "verdict": "PASS" if ok else "FAIL", "value": value})

    ev = r["events_topic"]
    surplus = ev["idless_final_events_not_matched_alone"] - ev["idless_answers_on_response_topics"]
    add(
        "every payload exactly one final event",
        pc["no_final_event"] == 0 and pc["several_final_events"] == 0 and surplus == 0,
        f"{pc['no_final_event']} without, {pc['several_final_events']} with several, "
        f"{surplus} unmatched id-less",
    )
    unexpected = pc["unexpected_kind"]
    add("final event kinds as each class allows", unexpected == 0, f"{unexpected} unexpected")
    wrong = pc["correlation_data_wrong"]
    add("correlation data echoed", wrong == 0, f"{wrong} wrong")
    add("the daemon never stalled", not r["stall"], "stalled" if r["stall"] else "no")
    same = bool(d["same_pid_at_end"]) and not r["crash"]
    add("same daemon process at the end", same, f"PID {d['pid']}")
    last = r["last_request"]
    add("still serving: a last valid request plays", last == "finished", str(last))
    add("watchdog pings still coming", bool(d["watchdog_ok"]), str(d["watchdog_ok"]))
    add("exit 0 on SIGTERM", d["exit_code"] == 0, str(d["exit_code"]))
    tracebacks = d["log"]["tracebacks"]
    add("no tracebacks in the daemon log", tracebacks == 0, str(tracebacks))
    return out


def print_report(r: dict[str, Any]) -> None:
    print(
        f"fuzz: {r['payloads']} payloads, seed {r['seed']}, windows {r['window']} (may play) "
        f"+ {r['reject_window']} (refused), {r['elapsed_s']:.0f} s ({r['payloads_per_s']}/s); "
        f"voice: {r['voice']}"
    )
    if r["set"]:
        print(f"  --set {' '.join(r['set'])}")
    t = r["time_s"]
    print(
        f"  time: {t['with_a_heavy_payload_out']:.0f} s with a heavy payload out, "
        f"{t['alone_batches']:.0f} s for the payloads sent alone; the daemon synthesized "
        f"{t['audio_made']:.0f} s of audio in {t['daemon_synthesis']:.0f} s; CPU: daemon "
        f"{fmt(t.get('cpu_daemon'))} s, fuzz client {fmt(t.get('cpu_fuzz_client'))} s"
    )
    print_classes(r)
    print("\nfinal events: " + ", ".join(f"{k} {v}" for k, v in r["final_events"].items()))
    print("other events: " + ", ".join(f"{k} {v}" for k, v in r["other_events"].items()))
    print("\ntop rejection reasons:")
    for reason, n in list(r["rejection_reasons"].items())[:12]:
        print(f"  {n:>5}  {reason}")
    print_problems(r)
    print_daemon(r)
    print("\nchecks")
    for c in r["checks"]:
        print(f"  {c['verdict']:5} {c['check']:58} {c['value']}")


def print_classes(r: dict[str, Any]) -> None:
    cols = [*FINAL_KINDS, "none"]
    print(
        f"\n  {'class':16} {'sent':>5} "
        + " ".join(f"{c[:8]:>8}" for c in cols)
        + f" {'several':>7} {'unexp.':>6} {'answer p50/p99 ms':>18} {'audio/synth s':>13}"
    )
    for klass, row in r["per_class"].items():
        a = r["answer_ms"].get(klass, {})
        print(
            f"  {klass:16} {row.get('sent', 0):>5} "
            + " ".join(f"{row.get(c, 0) or '':>8}" for c in cols)
            + f" {row.get('several', 0) or '':>7} {row.get('unexpected', 0) or '':>6} "
            f"{fmt(a.get('p50')):>8} {fmt(a.get('p99')):>9} "
            f"{row.get('audio_ms', 0) / 1000:>6.0f} {row.get('synthesis_ms', 0) / 1000:>6.0f}"
        )


def print_problems(r: dict[str, Any]) -> None:
    print("\nproblems: " + ", ".join(f"{k} {v}" for k, v in r["problem_counts"].items()))
    for kind, items in r["problems"].items():
        for p in items[:8]:
            print(
                f"  {kind}: #{p['index']} {p['class']} ({p['note'][:70]}) expect {p['expect']}, "
                f"got {p['finals'] or 'nothing'}"
                + (f" - {str(p['reason'])[:80]}" if p["reason"] else "")
            )
            if p["replay"]:
                print(f"    replay: {p['replay']}")
    if r["late_answers"]:
        print(f"  answers after the timeout: {r['late_answers'][:10]}")
    ev = r["events_topic"]
    print(
        f"\nevents topic: {ev['idless_final_events_not_matched_alone']} id-less final events "
        f"not sent alone (vs {ev['idless_answers_on_response_topics']} id-less answers on "
        f"response topics), payloads missing their copy there: "
        f"{len(ev['payloads_without_their_events_topic_copy'])}; stray response topics: "
        f"{len(r['stray_response_topics'])}; fuzz client dropped by the broker: "
        f"{len(r['client_disconnects'])}"
    )


def print_daemon(r: dict[str, Any]) -> None:
    rss, d = r["rss_mb"], r["daemon"]
    print(
        f"daemon: PID {d['pid']} same at end: {d['same_pid_at_end']}; still serving (last "
        f"request): {r['last_request']}; watchdog pings at the end: {d['watchdog_ok']}; "
        f"exit {d['exit_code']} after SIGTERM ({d['stop_s']} s)"
    )
    print(f"  RSS MB: first {rss['first']}, max {rss['max']}, last {rss['last']}")
    print_log_and_counters(d, r["daemon_counters"])
    if r["stall"]:
        print(f"\nSTALL: {json.dumps(r['stall'])}")
    if r["crash"]:
        print(f"\nCRASH: {json.dumps({k: v for k, v in r['crash'].items() if k != 'log_tail'})}")
        print(r["crash"]["log_tail"][-2000:])
    if "machine" in r:
        m = r["machine"]
        print(f"  load average {m['loadavg_start']} -> {m['loadavg_end']}")
