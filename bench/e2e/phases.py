"""The phases: one daemon each (or one for the first three), requests in, figures out."""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path
from typing import Any

from bench.report_io import log, stats
from tests.support.broker import Recorder
from tests.support.texts import LONG_TEXTS

from .rig import SETTLE_S, Daemon

SHORT_TEXTS = (  # one chunk each, as long as the long texts' first chunks (about 45 chars)
    "The front door has been unlocked.",
    "The washing machine has finished its cycle.",
    "The freezer door has been open for five minutes.",
    "Package delivered to the front porch.",
)
RSS_TEXTS = (
    "Message {i}.",
    "Door {i} is open.",
    "Timer {i} finished.",
    "Sensor {i} reads {j} degrees.",
    "Reminder number {i}: take out the bins.",
)


def ttfa_stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "sound_ms": stats([row["sound_ms"] for row in rows]),
        "sound_exact_ms": stats([row["sound_exact_ms"] for row in rows]),
        "daemon_ttfa_ms": stats([row["daemon_ttfa_ms"] for row in rows]),
    }


def phase_sequential(d: Daemon, texts: list[str], rounds: int) -> dict[str, Any]:
    rss_start = d.rss_mb()
    rows = []
    for r in range(rounds):
        for text in texts:
            rows.append(d.speak(text, "seq"))
        log(f"  sequential round {r + 1}/{rounds}: {len(rows)} requests")
    return {
        "requests": len(rows),
        **ttfa_stats(rows),
        "all_finished": all(row["event"] == "finished" for row in rows),
        "rss_mb_start": round(rss_start, 1),
        "rss_mb_end": round(d.rss_mb(), 1),
        "underruns": d.underruns(),
        "rows": rows,
    }


def phase_length(d: Daemon, rounds: int, per_kind: int) -> dict[str, Any]:
    short_rows: list[dict[str, Any]] = []
    long_rows: list[dict[str, Any]] = []
    for r in range(rounds):
        for i in range(per_kind):  # interleaved: short, long, short, long, ...
            short_rows.append(d.speak(SHORT_TEXTS[i % len(SHORT_TEXTS)], "short"))
            long_rows.append(d.speak(LONG_TEXTS[i % len(LONG_TEXTS)], "long"))
        log(f"  length round {r + 1}/{rounds}")
    out: dict[str, Any] = {}
    for kind, rows in (("short", short_rows), ("long", long_rows)):
        firsts = [row["first_chunk_chars"] for row in rows if row["first_chunk_chars"]]
        out[kind] = {
            "requests": len(rows),
            "chars_median": statistics.median(row["chars"] for row in rows),
            # as the daemon split it (its `finished` event), with its settings and --set
            "first_chunk_chars_median": statistics.median(firsts) if firsts else None,
            **ttfa_stats(rows),
            "rows": rows,
        }
    return out


def publish_together(
    d: Daemon, second: Recorder, ids: list[str], texts: list[str]
) -> dict[str, float]:
    """Two publishers publish at the same moment; when each did (monotonic)."""
    sent: dict[str, float] = {}
    barrier = threading.Barrier(2)

    def publish(client: Recorder, rid: str, text: str) -> None:
        barrier.wait()
        sent[rid] = time.monotonic()
        client.publish(d.say_topic, d.payload(rid, text))

    threads = [
        threading.Thread(target=publish, args=(client, rid, text))
        for client, rid, text in zip((d.rig.rec, second), ids, texts, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sent


def phase_burst2(d: Daemon, texts: list[str], bursts: int) -> dict[str, Any]:
    second = Recorder(d.rig.broker.port, [])
    first_rows: list[dict[str, Any]] = []
    next_rows: list[dict[str, Any]] = []
    try:
        for b in range(bursts):
            time.sleep(SETTLE_S)
            mark = d.card.mark()
            pair = [texts[(2 * b) % len(texts)], texts[(2 * b + 1) % len(texts)]]
            ids = [d.next_id("b2"), d.next_id("b2")]
            sent = publish_together(d, second, ids, pair)
            d.events.wait(ids, 90)
            played = sorted(ids, key=lambda rid: d.events.started.get(rid, float("inf")))
            text_of = dict(zip(ids, pair, strict=True))
            first = d.figures(played[0], text_of[played[0]], sent[played[0]], mark)
            lag_ms = (sent[played[0]] - min(sent.values())) * 1000
            sound = first["sound_ms"]
            first["burst_sound_ms"] = None if sound is None else round(sound + lag_ms, 1)
            first_rows.append(first)
            _, ev = d.events.final[played[1]]
            ttfa, wait = ev.get("time_to_first_audio_ms"), ev.get("queue_wait_ms")
            handover = None if ttfa is None or wait is None else round(ttfa - wait, 1)
            next_rows.append(
                {"id": played[1], "daemon_ttfa_ms": ttfa, "queue_wait_ms": wait,
                 "handover_ms": handover}
            )  # fmt: skip
        log(f"  burst2: {bursts} bursts")
    finally:
        second.close()
    return {
        "bursts": bursts,
        "first_sound_ms": stats([row["sound_ms"] for row in first_rows]),
        "first_sound_exact_ms": stats([row["sound_exact_ms"] for row in first_rows]),
        "first_daemon_ttfa_ms": stats([row["daemon_ttfa_ms"] for row in first_rows]),
        "second_daemon_ttfa_ms": stats([row["daemon_ttfa_ms"] for row in next_rows]),
        "second_handover_ms": stats([row["handover_ms"] for row in next_rows]),
        "underruns": d.underruns(),
        "first_rows": first_rows,
        "second_rows": next_rows,
    }


def publish_all(d: Daemon, ids: list[str], texts: list[str], **extra: Any) -> None:
    """QoS 1, all at once; returns when the broker has them all."""
    infos = [
        d.rig.rec.client.publish(d.say_topic, d.payload(rid, text, **extra), qos=1)
        for rid, text in zip(ids, texts, strict=True)
    ]
    for info in infos:
        info.wait_for_publish(30)


def phase_burst100(d: Daemon, count: int, speed: float | None) -> dict[str, Any]:
    ids = [d.next_id("b100") for _ in range(count)]
    time.sleep(SETTLE_S)
    started = time.monotonic()
    texts = [f"Burst message {i + 1}." for i in range(count)]
    publish_all(d, ids, texts, **({"speed": speed} if speed else {}))
    published = time.monotonic()
    d.events.wait(ids, 60 + 5 * count)
    finals = [d.events.final[rid][1]["event"] for rid in ids]
    last = max(d.events.final[rid][0] for rid in ids)
    reasons = {str(d.events.final[r][1].get("reason")) for r in ids if r in d.events.final}
    return {
        "requests": count,
        "finished": finals.count("finished"),
        "rejected": finals.count("rejected"),
        "other_final": len(finals) - finals.count("finished") - finals.count("rejected"),
        "rejection_reasons": sorted(reasons - {"None"}),
        "duplicate_final_events": len(d.events.duplicates),
        "publish_s": round(published - started, 2),
        "drain_s": round(last - started, 2),
        "none_lost": len(finals) == count,
    }


def phase_rss(d: Daemon, wav_dir: Path, total: int, every: int) -> dict[str, Any]:
    samples = [(0, d.rss_mb())]
    started = time.monotonic()
    done = 0
    while done < total:
        numbers = range(done + 1, done + every + 1)
        texts = [RSS_TEXTS[i % len(RSS_TEXTS)].format(i=i, j=i % 37) for i in numbers]
        ids = [d.next_id("rss") for _ in texts]
        publish_all(d, ids, texts)
        d.events.wait(ids, 300)
        done += every
        samples.append((done, d.rss_mb()))
        for wav in wav_dir.glob("*.wav"):
            wav.unlink()
        log(f"  rss: {done}/{total} requests, RSS {samples[-1][1]:.1f} MB")
    finals = [e["event"] for _, e in d.events.final.values() if e.get("id", "").startswith("rss")]
    steady = [mb for n, mb in samples if n >= every]
    return {
        "requests": total,
        "sample_every": every,
        "samples_mb": [[n, round(mb, 1)] for n, mb in samples],
        "start_mb": round(samples[0][1], 1),
        "after_first_batch_mb": round(steady[0], 1),
        "max_mb": round(max(mb for _, mb in samples), 1),
        "steady_max_mb": round(max(steady), 1),
        "end_mb": round(samples[-1][1], 1),
        "growth_total_mb": round(samples[-1][1] - samples[0][1], 1),
        "growth_after_first_batch_mb": round(samples[-1][1] - steady[0], 1),
        "finished": finals.count("finished"),
        "elapsed_s": round(time.monotonic() - started, 1),
    }
