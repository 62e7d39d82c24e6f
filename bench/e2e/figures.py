"""The report: targets of the issue "the daemon" with PASS/MISS, and the table."""

from __future__ import annotations

from typing import Any

from bench.report_io import fmt, machine_line, print_targets, table, target

from .investigate import BREAKDOWN

# Targets (see the issue "the daemon").
TTFA_SHORT_P50_MAX_MS = 100.0
LENGTH_RATIO_MAX = 1.25  # "independent of length": long p50 <= 1.25 x short p50
BURST2_P99_MAX_MS = 400.0
STEADY_RSS_MAX_MB = 200.0
RSS_GROWTH_MAX_MB = 5.0


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    length = result.get("length")
    if length:
        short = length["short"]["sound_ms"]["p50"]
        long = length["long"]["sound_ms"]["p50"]
        ratio = None if not short or long is None else round(long / short, 2)
        out += [
            target(
                f"TTFA p50 (sound out) <= {TTFA_SHORT_P50_MAX_MS:.0f} ms, short sentence",
                short,
                None if short is None else short <= TTFA_SHORT_P50_MAX_MS,
            ),
            target(
                f"independent of length: long p50 <= {LENGTH_RATIO_MAX} x short p50",
                ratio,
                None if ratio is None else ratio <= LENGTH_RATIO_MAX,
            ),
        ]
    burst = result.get("burst2")
    if burst:
        p99 = burst["first_sound_ms"]["p99"]
        out.append(
            target(
                f"p99 <= {BURST2_P99_MAX_MS:.0f} ms under a 2-request burst "
                "(sound out of the one that plays first)",
                p99,
                None if p99 is None else p99 <= BURST2_P99_MAX_MS,
            )
        )
    rss = result.get("rss")
    if rss:
        growth = rss["growth_after_first_batch_mb"]
        out += [
            target(
                f"steady RSS <= {STEADY_RSS_MAX_MB:.0f} MB (max after 1st batch)",
                rss["steady_max_mb"],
                rss["steady_max_mb"] <= STEADY_RSS_MAX_MB,
            ),
            target(
                f"RSS growth < {RSS_GROWTH_MAX_MB:.0f} MB over {rss['requests']} requests "
                "(end - after 1st batch)",
                growth,
                growth < RSS_GROWTH_MAX_MB,
            ),
        ]
    for key in ("burst100_q128", "burst100_q32"):
        b = result.get(key)
        if b:
            out.append(
                target(
                    f"{key}: every request gets one final event (none lost)",
                    f"{b['finished']} finished + {b['rejected']} rejected of {b['requests']}",
                    b["none_lost"] and not b["duplicate_final_events"],
                )
            )
    return out


def print_report(result: dict[str, Any]) -> None:
    print(
        f"Daemon end to end{' (QUICK run)' if result['quick'] else ''} — Mosquitto, "
        f"`python -m edge_tts run`, PulseAudio pipe sink paced by the system clock"
    )
    print(machine_line(result["machine"]))
    print(f"voice: {result.get('voice', '?')}; {result['elapsed_s']:.0f} s")
    o = result.get("overrides") or {}
    if o.get("latency_s") is not None or o.get("set"):
        print(f"overrides: PortAudio latency {o.get('latency_s')} s; --set {o.get('set')}")
    print()
    print_ttfa(result)
    print_bursts(result)
    print_rss(result)
    if result.get("investigation"):
        print_investigation(result["investigation"])
    print_targets(result["targets"])


HEADERS = ("TTFA (ms)", "p50", "p95", "p99", "max", "n")


def row(label: str, s: dict[str, Any]) -> tuple[Any, ...]:
    return (label, s["p50"], s["p95"], s["p99"], s["max"], s["n"])


def print_ttfa(result: dict[str, Any]) -> None:
    seq = result.get("sequential")
    if seq:
        rows = [
            row("publish -> sound out (block stamp)", seq["sound_ms"]),
            row("publish -> sound out (sample-accurate)", seq["sound_exact_ms"]),
            row("daemon: received -> first sample to ALSA", seq["daemon_ttfa_ms"]),
        ]
        title = (
            f"sequential, 1 publisher, {seq['requests']} requests (corpus); daemon RSS "
            f"{seq['rss_mb_start']:.0f} -> {seq['rss_mb_end']:.0f} MB; underruns "
            f"{seq['underruns']}"
        )
        table(HEADERS, rows, title)
    length = result.get("length")
    if length:
        rows = []
        for kind in ("short", "long"):
            k = length[kind]
            first = k["first_chunk_chars_median"]
            label = f"{kind} ({k['chars_median']:.0f} chars, 1st chunk {fmt(first)})"
            rows += [
                row(f"{label}: sound out (block)", k["sound_ms"]),
                row(f"{kind}: sound out (sample-accurate)", k["sound_exact_ms"]),
                row(f"{kind}: daemon received -> ALSA", k["daemon_ttfa_ms"]),
            ]
        table(HEADERS, rows, "short vs long sentences, interleaved")
    burst = result.get("burst2")
    if burst:
        rows = [
            row("plays 1st: burst -> sound out (block)", burst["first_sound_ms"]),
            row("plays 1st: sound out (sample-accurate)", burst["first_sound_exact_ms"]),
            row("plays 1st: daemon received -> ALSA", burst["first_daemon_ttfa_ms"]),
            row("plays 2nd: daemon received -> ALSA", burst["second_daemon_ttfa_ms"]),
            row("plays 2nd: its turn -> first sample (hand-over)", burst["second_handover_ms"]),
        ]
        title = f"2 publishers at once, {burst['bursts']} bursts; underruns {burst['underruns']}"
        table(HEADERS, rows, title)


def print_bursts(result: dict[str, Any]) -> None:
    keys = [key for key in ("burst100_q128", "burst100_q32") if result.get(key)]
    rows = [
        (key, b["sink"], b["requests"], b["publish_s"], b["finished"], b["rejected"],
         b["other_final"], b["duplicate_final_events"], b["drain_s"],
         "; ".join(b["rejection_reasons"]))
        for key in keys
        for b in [result[key]]
    ]  # fmt: skip
    if rows:
        table(
            ("burst", "sink", "published", "in s", "finished", "rejected", "other",
             "duplicate finals", "drained in s", "rejections"),
            rows,
        )  # fmt: skip


def print_rss(result: dict[str, Any]) -> None:
    rss = result.get("rss")
    if rss:
        title = (
            f"daemon RSS (MB) over {rss['requests']} requests (wav-dir sink, short texts, "
            f"{rss['sample_every']} at a time; {rss['elapsed_s']} s); samples (requests:MB) "
            + ", ".join(f"{n}:{mb:.0f}" for n, mb in rss["samples_mb"])
        )
        rows = [rss_row("this run", rss)]
        table(RSS_HEADERS, rows, title)
    rss_knobs = result.get("rss_knobs")
    if rss_knobs:
        rows = [rss_row(r["name"], r) for r in rss_knobs]
        table(RSS_HEADERS, rows, "daemon RSS per memory knob (wav-dir sink, MB)")


RSS_HEADERS = ("config", "start", "after 1st batch", "max", "end", "growth after 1st batch")


def rss_row(name: str, r: dict[str, Any]) -> tuple[Any, ...]:
    return (
        name,
        fmt(r["start_mb"], ".1f"),
        fmt(r["after_first_batch_mb"], ".1f"),
        fmt(r["max_mb"], ".1f"),
        fmt(r["end_mb"], ".1f"),
        fmt(r["growth_after_first_batch_mb"], ".1f"),
    )


def print_investigation(sweep: list[dict[str, Any]]) -> None:
    rows = []
    for cfg in sweep:
        med = cfg["breakdown"]
        rows.append(
            (cfg["name"], f"{cfg['finished']}/{cfg['requests']}", cfg["sound_ms"]["p50"],
             cfg["sound_exact_ms"]["p50"], cfg["daemon_ttfa_ms"]["p50"], med["synth0"],
             med["ring"], med["lead"], med["out"], med["block"], med.get("chunk0_chars"),
             cfg["underruns"])
        )  # fmt: skip
    table(
        ("config", "ok", "sound", "exact", "daemon", "synth0", "ring", "lead", "out", "block",
         "chars0", "xrun"),
        rows,
        "TTFA investigation (daemon events + capture): short sentences, one publisher; ms",
    )  # fmt: skip
    print(
        "sound/exact: publish -> out of the sound server (block stamp / sample-accurate);"
        " daemon: its time_to_first_audio_ms; synth0: 1st piece synthesized; ring: written"
        " -> PortAudio callback; lead: the voice's lead-in (capture); out: loud sample"
        " handed to ALSA -> block out of the sound server; block: onset offset in that block;"
        " chars0: 1st chunk length; xrun: underruns\n"
    )
    first, last = sweep[0], sweep[-1]
    stages = [
        (label, fmt(first["breakdown"].get(key), ".1f"), fmt(last["breakdown"].get(key), ".1f"))
        for key, label, _, _ in BREAKDOWN
    ]
    table(("full breakdown (medians, ms)", first["name"], last["name"]), stages)
