"""One tuning run: every configured voice's builds gated and timed, the fastest good one
chosen, the evidence recorded.

Bounded in time: each voice gets an equal share of the budget; its gate runs on a few
short sentences (skipped for builds already gated on this CPU and onnxruntime), then
each thread count gets an equal share of what is left, at least one round of sentences.
Loading the builds counts against the budget; on a slow board one round may overrun it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from importlib.resources import files as package_files
from typing import Any

from ..config import Settings, VoiceSettings
from ..text import prepare
from ..text.languages import primary_language
from ..voice import files
from ..voice import tune_record as record
from ..voice.builds import Build, candidates, configured_build
from ..voice.machine import fingerprint, same_machine
from ..voice.model import Voice
from . import DEFAULT_BUDGET_S
from .measure import Gate, Measured, measure
from .quantized import build_schemes, unfit

Log = Callable[[str], None]
GATE_SENTENCES = 2  # the evaluation set's first ones: short, so a Pi 4 gates in seconds
# A build must be this much faster (RTF) to replace the configured one: smaller
# differences are within run-to-run noise on a board that runs other things too.
KEEP_MARGIN = 0.05
NOT_GATED = (files.FP32, files.IMPORTED)
QUICK_TEXTS = {"en": ["The front door is open."], "zh": ["前方路口请左转。"]}


def thread_counts(configured: int, cores: int) -> list[int]:
    """The configured count first (its group is timed while the board is coolest), then
    1, 2 and the core count."""
    return list(dict.fromkeys([configured, 1, 2, cores]))


def texts_for(language: str, quick: bool) -> list[str]:
    code = primary_language(language)
    if quick:
        return QUICK_TEXTS.get(code, QUICK_TEXTS["en"])
    name = f"evaluation_{code}.txt" if code in QUICK_TEXTS else "evaluation_en.txt"
    text = package_files("edge_tts.voice").joinpath("data", name).read_text("utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]


def tune(
    settings: Settings,
    names: Sequence[str] = (),
    budget_s: float = DEFAULT_BUDGET_S,
    threads: Sequence[int] = (),
    quick: bool = False,
    log: Log = print,
    schemes: Sequence[str] = (),
) -> dict[str, Any]:
    """Build the INT8 `schemes` missing here (outside the budget), then measure, choose,
    record; returns the record written."""
    chosen_names = list(names) or list(settings.voices)
    machine = fingerprint()
    for name in chosen_names if schemes else []:
        if configured_build(settings.voices[name], digest=False).scheme != files.IMPORTED:
            build_schemes(settings.voices[name], schemes, log, machine)
    started = time.monotonic()
    previous = record.load(settings)
    same = previous is not None and same_machine(previous.get("machine", {}), machine) is None
    kept = dict(previous.get("voices", {})) if previous is not None and same else {}
    counts = list(threads) or thread_counts(settings.synthesis.threads, os.cpu_count() or 1)
    for index, name in enumerate(chosen_names):
        share = (budget_s - (time.monotonic() - started)) / (len(chosen_names) - index)
        deadline = time.monotonic() + max(share, 0.0)
        log(f"Tuning voice {name} ({share:.0f} s)")
        gated = _previous_gates(kept.get(name))
        kept[name] = _tune_voice(
            settings, settings.voices[name], counts, quick, deadline, gated, log, machine
        )
    result = {
        "format": record.FORMAT,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine,
        "budget_s": budget_s,
        "elapsed_s": round(time.monotonic() - started, 1),
        "quick": quick,
        "voices": kept,
    }
    record.save(settings, result)
    return result


def _tune_voice(
    settings: Settings,
    vs: VoiceSettings,
    counts: list[int],
    quick: bool,
    deadline: float,
    gated: dict[str, Gate],
    log: Log,
    machine: dict[str, object],
) -> dict[str, Any]:
    builds = fitting(candidates(vs), machine, log)
    log("  builds: " + ", ".join(f"{b.scheme} ({b.path.name})" for b in builds))
    ungated = any(b.sha256 not in gated for b in builds if b.scheme not in NOT_GATED)
    gate_ids = _gate_ids(builds, 1 if quick else GATE_SENTENCES) if ungated else []
    texts = texts_for(_language(builds[0]), quick)
    measured = measure(
        builds, vs, settings.synthesis, counts, texts, gate_ids, deadline, log, 1 if quick else None
    )
    for build in builds:
        if measured[build.path].gate is None and build.sha256 in gated:
            measured[build.path].gate = gated[build.sha256]
    results = [measured[b.path] for b in builds]
    best, why = pick(results, settings.synthesis.threads)
    return {
        "configured_sha256": builds[0].sha256,
        "chosen": _build_json(best.build),
        "why": why,
        "threads": settings.synthesis.threads,
        "fastest_threads": _fastest_threads(best),
        "candidates": [_measured_json(m) for m in results],
    }


def fitting(builds: list[Build], machine: Mapping[str, object], log: Log) -> list[Build]:
    """The builds worth trying on this CPU: the configured one (the user's choice) and
    every other one not made for a feature this CPU lacks."""
    kept = []
    for build in builds:
        why = None if build.configured else unfit(build.scheme, machine)
        if why is None:
            kept.append(build)
        else:
            log(f"  not trying {build.scheme} ({build.path.name}): {why}")
    return kept


def pick(results: list[Measured], threads: int) -> tuple[Measured, str]:
    """The fastest eligible build at the configured thread count; the configured one
    unless another is KEEP_MARGIN faster or the configured one failed its gate."""
    configured = results[0]
    if len(results) == 1:
        return configured, "its only build on this machine"
    eligible = [m for m in results if m.eligible and threads in m.timings]
    if not eligible:
        return configured, "nothing else passed the quality gate: the configured build"
    best = min(eligible, key=lambda m: m.timings[threads].rtf)
    if configured not in eligible:
        return best, f"the configured {configured.build.scheme} failed the quality gate here"
    if best is configured or best.timings[threads].rtf > (1 - KEEP_MARGIN) * _rtf(
        configured, threads
    ):
        return configured, "the configured build is the fastest (within 5 %) that passes"
    ratio = _rtf(configured, threads) / best.timings[threads].rtf
    return best, f"{ratio:.2f}x the configured {configured.build.scheme}'s speed"


def _rtf(m: Measured, threads: int) -> float:
    return m.timings[threads].rtf


def _fastest_threads(m: Measured) -> int:
    return min(m.timings, key=lambda count: m.timings[count].rtf)


def _language(build: Build) -> str:
    if build.scheme == files.IMPORTED:
        return "zh"
    return Voice(files.from_model_path(build.path)).language


def _gate_ids(builds: list[Build], count: int) -> list[list[int]]:
    """Phoneme ids of the first evaluation sentences, by the reference's own front-end."""
    reference = next((b for b in builds if b.scheme == files.FP32), None)
    if reference is None:
        return []
    voice = Voice(files.from_model_path(reference.path))
    ids: list[list[int]] = []
    for text in texts_for(voice.language, quick=False)[:count]:
        for chunk in prepare(
            text, language=voice.language, max_chunk_chars=10_000, first_chunk_chars=10_000
        ):
            ids.extend(voice.ids(chunk))
    return ids


def _previous_gates(entry: dict[str, Any] | None) -> dict[str, Gate]:
    """Gates measured earlier on this CPU and onnxruntime, by build digest."""
    if not entry:
        return {}
    return {
        str(c["sha256"]): Gate(**c["gate"])
        for c in entry.get("candidates", [])
        if c.get("gate") and c.get("sha256")
    }


def _build_json(build: Build) -> dict[str, Any]:
    return {"scheme": build.scheme, "path": str(build.path), "sha256": build.sha256}


def _measured_json(m: Measured) -> dict[str, Any]:
    return {
        **_build_json(m.build),
        "configured": m.build.configured,
        "gate": asdict(m.gate) if m.gate is not None else None,
        "eligible": m.eligible,
        "rss_mb": round(m.rss_mb, 1) if m.rss_mb is not None else None,
        "load_s": round(m.load_s, 2) if m.load_s is not None else None,
        "by_threads": {
            str(count): {
                "rtf": round(t.rtf, 4),
                "ttfa_ms": round(t.ttfa_ms, 1),
                "sentences": len(t.ttfa_s),
            }
            for count, t in sorted(m.timings.items())
        },
    }
