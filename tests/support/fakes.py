"""Fakes for unit tests of one module; the end-to-end tests use the real parts."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from edge_tts.audio.player import AudioUnavailableError, Utterance
from edge_tts.voice import files
from edge_tts.voice.model import SynthesisParams, load_config
from edge_tts.voice.phonemize import text_to_ids


class FakeVoice:
    """The real voice config, but audio is 10 ms of tone per phoneme id."""

    def __init__(self, delay: float = 0.0):
        self.config = load_config(files.packaged_fp32())
        self.name = "fake"
        self.sample_rate = 22050
        self.delay = delay
        self.calls = 0
        self._lock = threading.Lock()
        self.concurrent = 0
        self.max_concurrent = 0
        self.intervals: list[tuple[float, float]] = []  # (start, end) of every synthesis

    def speaker_id(self, speaker: object) -> int | None:
        if speaker not in (None, "0", 0):
            raise ValueError(f"voice fake has one speaker; got speaker {speaker!r}")
        return None

    def ids(self, text: str) -> list[list[int]]:
        return text_to_ids(text, self.config)

    def synthesize(self, ids: list[int], params: SynthesisParams | None = None) -> np.ndarray:
        with self._lock:
            self.calls += 1
            self.concurrent += 1
            self.max_concurrent = max(self.max_concurrent, self.concurrent)
        started = time.monotonic()
        time.sleep(self.delay)  # a fake pacing itself: synthesis takes time
        with self._lock:
            self.concurrent -= 1
            self.intervals.append((started, time.monotonic()))
        t = np.arange(len(ids) * 220) / 22050
        return (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)

    def stream(
        self, ids: list[int], params: SynthesisParams | None = None, first_frames: int | None = None
    ) -> Iterator[np.ndarray]:
        """Like the real voice: a short first piece when asked for one, then the rest."""
        audio = self.synthesize(ids, params)
        first = 2205 if first_frames else 0
        if 0 < first < len(audio):
            yield audio[:first]
            audio = audio[first:]
        yield audio


@dataclass
class FakeOutput:
    """Plays `speedup` times faster than real time, records what it was given."""

    speedup: float = 20.0
    available: bool = True
    played: list[tuple[str, int]] = field(default_factory=list)
    interrupts: int = 0
    _interrupted: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None: ...
    def close(self) -> None: ...
    def recover(self) -> None: ...

    @property
    def healthy(self) -> bool:
        return self.available

    @property
    def alive(self) -> bool:
        return True

    @property
    def status(self) -> str:
        return "ok" if self.available else "degraded: unplugged"

    @property
    def underruns(self) -> int:
        return 0

    def begin(self, utterance: Utterance) -> None:
        if not self.available:
            raise AudioUnavailableError("unplugged")
        self._interrupted.clear()

    def write(self, utterance: Utterance, pcm: np.ndarray, stop: threading.Event) -> bool:
        if utterance.first_sample_at is None:
            utterance.first_sample_at = time.monotonic()
        deadline = time.monotonic() + len(pcm) / utterance.sample_rate / self.speedup
        while time.monotonic() < deadline:
            if stop.is_set() or self._interrupted.is_set():
                utterance.interrupted = True
                return False
            time.sleep(0.002)  # a fake pacing itself: playing takes (scaled) real time
        self.played.append((utterance.request_id, len(pcm)))
        return True

    def end(self, utterance: Utterance, stop: threading.Event, timeout: float) -> bool:
        if self._interrupted.is_set() or stop.is_set():
            return False
        utterance.finished_at = time.monotonic()
        return True

    def interrupt(self, fade_ms: int | None = None) -> None:
        self.interrupts += 1
        self._interrupted.set()


class FakeReporter:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []  # (kind, id, detail)
        self.acked: list[object] = []
        self._cond = threading.Condition()

    def _add(self, kind: str, job: object, detail: str = "", final: bool = True) -> None:
        with self._cond:
            self.events.append((kind, job.request.id, detail))  # type: ignore[attr-defined]
            if final:
                self.acked.extend(job.deliveries)  # type: ignore[attr-defined]
                job.concluded = True  # type: ignore[attr-defined]
            self._cond.notify_all()

    def queued(self, job: object, position: int) -> None:
        self._add("queued", job, str(position), final=False)

    def started(self, job: object) -> None:
        self._add("started", job, final=False)

    def finished(self, job: object) -> None:
        self._add("finished", job)

    def rejected(self, job: object, reason: str) -> None:
        self._add("rejected", job, reason)

    def expired(self, job: object) -> None:
        self._add("expired", job)

    def interrupted(self, job: object, by: str) -> None:
        self._add("interrupted", job, by)

    def duplicate(self, job: object, reason: str) -> None:
        self._add("duplicate", job, reason)

    def deferred(self, job: object) -> None:
        self._add("deferred", job, final=False)

    def of(self, kind: str) -> list[str]:
        with self._cond:
            return [i for k, i, _ in self.events if k == kind]

    def wait(self, kind: str, request_id: str, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while request_id not in self.of(kind):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {kind} for {request_id}: {self.events}")
                self._cond.wait(left)
