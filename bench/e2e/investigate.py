"""--investigate: where time to first audio goes, and which knobs move it.

Every stage comes from public surfaces: the bench's clocks (publish, sound out of the
sink), the `queued` event's `ts` (when the daemon had the message), the `finished`
event's `stages_ms` and `time_to_first_audio_ms` (from the message's arrival: text
front-end done, first chunk's synthesis started, its first audio ready, first audio
written to the output, first sample handed to ALSA), and the capture (the utterance's
first non-zero sample to its first loud one: the voice's lead-in kept before the onset).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench.report_io import log

from .knobs import SWEEP
from .phases import ttfa_stats
from .rig import Rig

BREAKDOWN = (  # (key, label, from, to): consecutive stamps of one request, ms
    ("mqtt", "MQTT: publish -> daemon received", "sent", "received"),
    ("plan", "received -> planned (worker pick-up + text front-end)", "received", "planned"),
    ("pickup", "planned -> 1st chunk synthesis starts (worker hand-off)", "planned",
     "synthesis_started"),
    ("synth0", "1st piece synthesized (phonemes, encoder, 1st window)", "synthesis_started",
     "first_audio"),
    ("handoff", "1st piece ready -> written to the output (playback thread)", "first_audio",
     "first_written"),
    ("ring", "written -> a PortAudio callback hands it to ALSA", "first_written",
     "first_sample"),
    ("lead", "the voice's own lead-in before the onset (capture)", "first_sample",
     "loud_handed"),
    ("out", "loud sample to ALSA -> out of the sound server (block)", "loud_handed", "sound"),
    ("block", "onset's offset inside the sink's block", "sound", "sound_exact"),
)  # fmt: skip


def stamps(row: dict[str, Any]) -> dict[str, float] | None:
    """A request's stamps in ms after its publish, or None when one is missing."""
    if None in (row["mqtt_ms"], row["sound_ms"], row["daemon_ttfa_ms"], row["lead_in_ms"]):
        return None
    received = row["mqtt_ms"]
    out = {"sent": 0.0, "received": received}
    for key, value in row["stages_ms"].items():
        out[key] = received + value
    out["first_sample"] = received + row["daemon_ttfa_ms"]
    out["loud_handed"] = out["first_sample"] + row["lead_in_ms"]
    out["sound"] = row["sound_ms"]
    out["sound_exact"] = row["sound_exact_ms"]
    return out


def breakdown_samples(rows: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per BREAKDOWN key, the milliseconds each request spent there; plus chunk0_chars."""
    parts: dict[str, list[float]] = {key: [] for key, _, _, _ in BREAKDOWN}
    parts["chunk0_chars"] = []
    for row in rows:
        at = stamps(row)
        if at is None:
            continue
        for key, _, a, b in BREAKDOWN:
            if a in at and b in at:
                parts[key].append(at[b] - at[a])
        if row["first_chunk_chars"] is not None:
            parts["chunk0_chars"].append(float(row["first_chunk_chars"]))
    return parts


def medians(parts: dict[str, list[float]]) -> dict[str, float | None]:
    return {k: round(statistics.median(v), 1) if v else None for k, v in parts.items()}


def investigate(
    rig: Rig, texts: list[str], per_config: int, rounds: int, only: list[str] | None = None
) -> list[dict[str, Any]]:
    """Every SWEEP config (or those named in `only`), `per_config` requests per round; the
    config order rotates each round (a fresh daemon each time, warmed by one unmeasured
    request)."""
    sweep = [k for k in SWEEP if not only or k.name in only]
    if not sweep:
        raise SystemExit(f"--sweep: no such config; known: {', '.join(k.name for k in SWEEP)}")
    rows: dict[str, list[dict[str, Any]]] = {k.name: [] for k in sweep}
    underruns: dict[str, int] = {k.name: 0 for k in sweep}
    for r in range(rounds):
        shift = r % len(sweep)
        for knobs in [*sweep[shift:], *sweep[:shift]]:
            log(f"  round {r + 1}/{rounds}, knobs: {knobs.name}")
            with rig.daemon(knobs) as d:
                d.speak("Ready.", "warm")
                for i in range(per_config):
                    rows[knobs.name].append(d.speak(texts[(r * per_config + i) % len(texts)], "k"))
                time.sleep(0.3)
                underruns[knobs.name] += d.underruns() or 0
    results = []
    for knobs in sweep:
        got = rows[knobs.name]
        results.append(
            {
                "name": knobs.name,
                "knobs": knobs.describe(),
                "requests": len(got),
                "finished": sum(row["event"] == "finished" for row in got),
                **ttfa_stats(got),
                "underruns": underruns[knobs.name],
                "breakdown": medians(breakdown_samples(got)),
                "rows": got,
            }
        )
    return results
