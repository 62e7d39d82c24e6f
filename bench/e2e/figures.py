"""The report: targets of the issue "the daemon" with PASS/MISS, and the table."""

from __future__ import annotations

from typing import Any

from daemon_rig import fmt

from .investigate import BREAKDOWN

# Targets (see the issue "the daemon").
TTFA_SHORT_P50_MAX_MS = 100.0
LENGTH_RATIO_MAX = 1.25  # "independent of length": long p50 <= 1.25 x short p50
BURST2_P99_MAX_MS = 400.0
STEADY_RSS_MAX_MB = 200.0
RSS_GROWTH_MAX_MB = 5.0


def verdict(ok: bool | None) -> str:
    return "n/a " if ok is None else ("PASS" if ok else "MISS")


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    length = result.get("length")
    if length:
        short = length["short"]["sound_ms"]["p50"]
        long = length["long"]["sound_ms"]["p50"]
        out.append(
            {
                "target": f"TTFA p50 (sound out) <= {TTFA_SHORT_P50_MAX_MS:.0f} ms, short sentence",
                "value": short,
                "verdict": verdict(short is not None and short <= TTFA_SHORT_P50_MAX_MS),
            }
        )
        ratio = None if not short or long is None else round(long / short, 2)
        out.append(
            {
                "target": f"independent of length: long p50 <= {LENGTH_RATIO_MAX} x short p50",
                "value": ratio,
                "verdict": verdict(None if ratio is None else ratio <= LENGTH_RATIO_MAX),
            }
        )
    burst = result.get("burst2")
    if burst:
        p99 = burst["first_sound_ms"]["p99"]
        out.append(
            {
                "target": f"p99 <= {BURST2_P99_MAX_MS:.0f} ms under a 2-request burst "
                "(sound out of the one that plays first)",
                "value": p99,
                "verdict": verdict(p99 is not None and p99 <= BURST2_P99_MAX_MS),
            }
        )
    rss = result.get("rss")
    if rss:
        out.append(
            {
                "target": f"steady RSS <= {STEADY_RSS_MAX_MB:.0f} MB (max after 1st batch)",
                "value": rss["steady_max_mb"],
                "verdict": verdict(rss["steady_max_mb"] <= STEADY_RSS_MAX_MB),
            }
        )
        out.append(
            {
                "target": f"RSS growth < {RSS_GROWTH_MAX_MB:.0f} MB over {rss['requests']} "
                "requests (end - after 1st batch)",
                "value": rss["growth_after_first_batch_mb"],
                "verdict": verdict(rss["growth_after_first_batch_mb"] < RSS_GROWTH_MAX_MB),
            }
        )
    for key in ("burst100_q128", "burst100_q32"):
        b = result.get(key)
        if b:
            out.append(
                {
                    "target": f"{key}: every request gets one final event (none lost)",
                    "value": f"{b['finished']} finished + {b['rejected']} rejected "
                    f"of {b['requests']}",
                    "verdict": verdict(b["none_lost"] and not b["duplicate_final_events"]),
                }
            )
    return out


def print_report(result: dict[str, Any]) -> None:
    m = result["machine"]
    print(
        f"Daemon end to end{' (QUICK run)' if result['quick'] else ''} — Mosquitto, "
        f"`python -m edge_tts run`, PulseAudio pipe sink paced by the system clock"
    )
    print(
        f"machine: {m['cpu']}, {m['cpus']} CPUs, Python {m['python']}, onnxruntime "
        f"{m['onnxruntime']}, numpy {m['numpy']}; load avg {m['loadavg_start'][0]} -> "
        f"{m['loadavg_end'][0]}"
    )
    print(f"voice: {result.get('voice', '?')}")
    o = result.get("overrides") or {}
    if o.get("latency_s") is not None or o.get("set"):
        print(f"overrides: PortAudio latency {o.get('latency_s')} s; --set {o.get('set')}")
    print()
    print_ttfa(result)
    print_bursts(result)
    print_rss(result)
    if result.get("investigation"):
        print_investigation(result["investigation"])
    print("targets")
    for t in result["targets"]:
        print(f"  {t['verdict']:5} {t['target']:72} {t['value']}")
    print(f"\n({result['elapsed_s']:.0f} s)")


HEADER = f"  {'TTFA (ms)':44} {'p50':>6} {'p95':>6} {'p99':>6} {'max':>6}"


def line(label: str, s: dict[str, Any]) -> None:
    print(
        f"  {label:44} {fmt(s['p50']):>6} {fmt(s['p95']):>6} {fmt(s['p99']):>6} "
        f"{fmt(s['max']):>6}  (n={s['n']})"
    )


def print_ttfa(result: dict[str, Any]) -> None:
    seq = result.get("sequential")
    if seq:
        print(f"sequential, 1 publisher, {seq['requests']} requests (corpus)")
        print(HEADER)
        line("publish -> sound out (block stamp)", seq["sound_ms"])
        line("publish -> sound out (sample-accurate)", seq["sound_exact_ms"])
        line("daemon: received -> first sample to ALSA", seq["daemon_ttfa_ms"])
        print(
            f"  daemon RSS {seq['rss_mb_start']:.0f} -> {seq['rss_mb_end']:.0f} MB; "
            f"underruns {seq['underruns']}"
        )
        print()
    length = result.get("length")
    if length:
        print("short vs long sentences, interleaved")
        print(HEADER)
        for kind in ("short", "long"):
            k = length[kind]
            first = k["first_chunk_chars_median"]
            label = f"{kind} ({k['chars_median']:.0f} chars, 1st chunk {fmt(first)})"
            line(f"{label}: sound out (block)", k["sound_ms"])
            line(f"{kind}: sound out (sample-accurate)", k["sound_exact_ms"])
            line(f"{kind}: daemon received -> ALSA", k["daemon_ttfa_ms"])
        print()
    burst = result.get("burst2")
    if burst:
        print(f"2 publishers at once, {burst['bursts']} bursts")
        print(HEADER)
        line("plays 1st: burst -> sound out (block)", burst["first_sound_ms"])
        line("plays 1st: sound out (sample-accurate)", burst["first_sound_exact_ms"])
        line("plays 1st: daemon received -> ALSA", burst["first_daemon_ttfa_ms"])
        line("plays 2nd: daemon received -> ALSA", burst["second_daemon_ttfa_ms"])
        line("plays 2nd: its turn -> first sample (hand-over)", burst["second_handover_ms"])
        print(f"  underruns {burst['underruns']}")
        print()


def print_bursts(result: dict[str, Any]) -> None:
    keys = [key for key in ("burst100_q128", "burst100_q32") if result.get(key)]
    for key in keys:
        b = result[key]
        print(
            f"{key} ({b['sink']}): {b['requests']} published in {b['publish_s']} s; "
            f"{b['finished']} finished, {b['rejected']} rejected, {b['other_final']} other; "
            f"duplicate finals {b['duplicate_final_events']}; drained in {b['drain_s']} s"
        )
        if b["rejection_reasons"]:
            print(f"  rejections: {'; '.join(b['rejection_reasons'])}")
    if keys:
        print()


def print_rss(result: dict[str, Any]) -> None:
    rss = result.get("rss")
    if rss:
        samples = ", ".join(f"{n}:{mb:.0f}" for n, mb in rss["samples_mb"])
        print(
            f"daemon RSS over {rss['requests']} requests (wav-dir sink, short texts, "
            f"{rss['sample_every']} at a time; {rss['elapsed_s']} s)"
        )
        print(
            f"  start {rss['start_mb']} MB, after 1st batch {rss['after_first_batch_mb']}, "
            f"max {rss['max_mb']}, end {rss['end_mb']}; growth {rss['growth_total_mb']} "
            f"(from start), {rss['growth_after_first_batch_mb']} (after 1st batch)"
        )
        print(f"  samples (requests:MB) {samples}")
        print()
    rss_knobs = result.get("rss_knobs")
    if rss_knobs:
        print("daemon RSS per memory knob (wav-dir sink, MB)")
        print(f"  {'config':36} {'start':>6} {'1st batch':>9} {'max':>6} {'end':>6} {'growth':>7}")
        for r in rss_knobs:
            print(
                f"  {r['name']:36} {r['start_mb']:>6.0f} {r['after_first_batch_mb']:>9.0f} "
                f"{r['max_mb']:>6.0f} {r['end_mb']:>6.0f} {r['growth_after_first_batch_mb']:>7.1f}"
            )
        print()


def print_investigation(sweep: list[dict[str, Any]]) -> None:
    print("TTFA investigation (daemon events + capture): short sentences, one publisher; ms")
    print(
        f"  {'config':38} {'ok':>5} {'sound':>6} {'exact':>6} {'daemon':>6} {'synth0':>6} "
        f"{'ring':>5} {'lead':>5} {'out':>5} {'block':>5} {'chars0':>6} {'xrun':>4}"
    )
    for cfg in sweep:
        med = cfg["breakdown"]
        print(
            f"  {cfg['name']:38} {cfg['finished']:>2}/{cfg['requests']:<2} "
            f"{fmt(cfg['sound_ms']['p50']):>6} {fmt(cfg['sound_exact_ms']['p50']):>6} "
            f"{fmt(cfg['daemon_ttfa_ms']['p50']):>6} {fmt(med['synth0']):>6} "
            f"{fmt(med['ring']):>5} {fmt(med['lead']):>5} {fmt(med['out']):>5} "
            f"{fmt(med['block']):>5} {fmt(med.get('chunk0_chars')):>6} "
            f"{fmt(cfg['underruns'], 'd'):>4}"
        )
    print(
        "  sound/exact: publish -> out of the sound server (block stamp / sample-accurate);"
        " daemon: its time_to_first_audio_ms;\n  synth0: 1st piece synthesized; ring: written"
        " -> PortAudio callback; lead: the voice's lead-in (capture); out: loud sample\n"
        "  handed to ALSA -> block out of the sound server; block: onset offset in that block;"
        " chars0: 1st chunk length; xrun: underruns"
    )
    first, last = sweep[0], sweep[-1]
    print(f"\n  full breakdown (medians, ms)        {first['name']:>14} {last['name']:>40}")
    for key, label, _, _ in BREAKDOWN:
        a = first["breakdown"].get(key)
        b = last["breakdown"].get(key)
        print(f"    {label:62} {fmt(a, '.1f'):>7} {fmt(b, '.1f'):>9}")
    print()
