"""Measuring a voice's builds on this machine: the quality gate, then speed side by side.

Both go through the daemon's own engine (text front-end, windowed decoder, the same
session settings). Speed is measured one thread count at a time: every build is loaded with that
many intra-op threads, then the builds take turns sentence by sentence, the order rotating,
so background load on a shared board hits every build alike. A thread count gets an equal
share of what is left of the time budget, and at least one full round.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from ..config import SynthesisSettings, VoiceSettings
from ..speech.direct import speak
from ..voice import files
from ..voice.base import SpeechVoice, SynthesisParams
from ..voice.builds import Build
from ..voice.model import Voice, release_free_memory
from ..voice.registry import open_voice
from ..voicebuild.quality import compare as compare_audio
from ..voicebuild.quality import gate_verdict

Log = Callable[[str], None]
MB = 1e6
DETERMINISTIC = SynthesisParams(length_scale=1.0, noise_scale=0.0, noise_w=0.0)


@dataclass(frozen=True)
class Gate:
    """An INT8 build against its FP32 original, deterministic synthesis."""

    passed: bool
    max_distance: float
    worst_duration_deviation: float
    sentences: int

    def describe(self) -> str:
        verdict = "pass" if self.passed else "FAIL"
        return f"{verdict} {self.max_distance:.2f}/{self.worst_duration_deviation:.2f}"


@dataclass
class Timing:
    ttfa_s: list[float] = field(default_factory=list)
    synth_s: float = 0.0
    audio_s: float = 0.0

    @property
    def rtf(self) -> float:
        return self.synth_s / self.audio_s if self.audio_s else float("inf")

    @property
    def ttfa_ms(self) -> float:
        return 1000 * statistics.median(self.ttfa_s) if self.ttfa_s else float("inf")


@dataclass
class Measured:
    build: Build
    gate: Gate | None = None  # None: the reference itself, or nothing to compare with
    timings: dict[int, Timing] = field(default_factory=dict)  # by thread count
    rss_mb: float | None = None  # what loading and first running it added to the process
    load_s: float | None = None

    @property
    def eligible(self) -> bool:
        """May be chosen: the original, a build that passed the gate, or the configured
        build when there is nothing to check it against (the user's own choice)."""
        if self.gate is not None:
            return self.gate.passed
        return self.build.scheme in (files.FP32, files.IMPORTED) or self.build.configured


def measure(
    builds: Sequence[Build],
    vs: VoiceSettings,
    synthesis: SynthesisSettings,
    threads: Sequence[int],
    texts: Sequence[str],
    gate_ids: Sequence[list[int]],
    deadline: float,
    log: Log,
    max_rounds: int | None = None,
) -> dict[Path, Measured]:
    """Gate the INT8 builds on `gate_ids` (with the first thread count's voices), then time
    every build at every thread count, within `deadline` (monotonic)."""
    results = {b.path: Measured(b) for b in builds}
    for index, count in enumerate(threads):
        share = (deadline - time.monotonic()) / (len(threads) - index)
        group_deadline = time.monotonic() + max(share, 0.0)
        voices = _loaded(builds, vs, synthesis, count, results, first_group=index == 0)
        if index == 0:
            _gate(builds, voices, gate_ids, results, log)
        rounds = _race(voices, synthesis, texts, group_deadline, results, count, max_rounds)
        log(f"  {count} thread(s): {rounds} sentence round(s)")
        del voices
        gc.collect()
        release_free_memory()
    return results


def _gate(
    builds: Sequence[Build],
    voices: dict[Path, SpeechVoice],
    gate_ids: Sequence[list[int]],
    results: dict[Path, Measured],
    log: Log,
) -> None:
    """The quantizer's quality gate for each INT8 build against its FP32 original, through
    the daemon's engine with the noise scales at 0 (deterministic)."""
    reference = next((b for b in builds if b.scheme == files.FP32), None)
    if reference is None or not gate_ids:
        return
    ref = voices[reference.path]
    assert isinstance(ref, Voice)
    expected = [ref.synthesize(ids, DETERMINISTIC) for ids in gate_ids]
    for build in builds:
        voice = voices[build.path]
        if build.scheme in (files.FP32, files.IMPORTED) or not isinstance(voice, Voice):
            continue
        found = [
            compare_audio(e, voice.synthesize(ids, DETERMINISTIC), ref.sample_rate)
            for e, ids in zip(expected, gate_ids, strict=True)
        ]
        distance = max(c.spectral_distance for c in found)
        deviation = max(abs(c.duration_ratio - 1.0) for c in found)
        gate = Gate(gate_verdict(distance, deviation), distance, deviation, len(found))
        results[build.path].gate = gate
        log(f"  gate {build.scheme}: {gate.describe()} (max spectral distance/duration change)")


def _loaded(
    builds: Sequence[Build],
    vs: VoiceSettings,
    synthesis: SynthesisSettings,
    threads: int,
    results: dict[Path, Measured],
    first_group: bool,
) -> dict[Path, SpeechVoice]:
    voices: dict[Path, SpeechVoice] = {}
    process = psutil.Process()
    for build in builds:
        before = process.memory_info().rss
        started = time.monotonic()
        pinned = vs.sha256 if build.configured else build.sha256
        voice = open_voice(str(build.path), pinned, threads, synthesis.max_phonemes)
        voice.load()
        _speak(voice, synthesis, "Ready.")  # first run: sessions allocate their arenas
        if first_group:  # later groups reuse memory the first one freed: not comparable
            results[build.path].rss_mb = (process.memory_info().rss - before) / MB
            results[build.path].load_s = time.monotonic() - started
        voices[build.path] = voice
    return voices


def _race(
    voices: dict[Path, SpeechVoice],
    synthesis: SynthesisSettings,
    texts: Sequence[str],
    deadline: float,
    results: dict[Path, Measured],
    threads: int,
    max_rounds: int | None,
) -> int:
    """Builds take turns on each text, the first to go rotating; at least one round."""
    order = list(voices)
    rounds = 0
    while rounds == 0 or (time.monotonic() < deadline and rounds != max_rounds):
        text = texts[rounds % len(texts)]
        shift = rounds % len(order)
        for path in order[shift:] + order[:shift]:
            timing = results[path].timings.setdefault(threads, Timing())
            ttfa, total, audio = _speak(voices[path], synthesis, text)
            timing.ttfa_s.append(ttfa)
            timing.synth_s += total
            timing.audio_s += audio
        rounds += 1
    return rounds


def _speak(
    voice: SpeechVoice, synthesis: SynthesisSettings, text: str
) -> tuple[float, float, float]:
    """Seconds to the first audio and in all, and seconds of audio made, along a
    request's path (without the phrase cache: it is the voice that is measured)."""
    started = time.perf_counter()
    first: float | None = None
    audio = 0.0
    for piece in speak(text, voice, synthesis=synthesis):
        first = first if first is not None else time.perf_counter() - started
        audio += piece.seconds
    return first or 0.0, time.perf_counter() - started, audio
