"""Fakes for unit tests of one module; the end-to-end tests use the real parts."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from edge_tts.audio.dsp import Shaper, fade_out_gain, ms_to_frames
from edge_tts.audio.output import AudioUnavailableError, Utterance, check_rate
from edge_tts.config import AudioSettings
from edge_tts.messages.events import EventKind
from edge_tts.speech.jobs import Delivery
from edge_tts.speech.listeners import Listener
from edge_tts.speech.outcome import Event
from edge_tts.voice import files
from edge_tts.voice.base import BuildInfo, SpeechVoice, SynthesisParams
from edge_tts.voice.model import load_config
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
        self.loaded = False
        self.load_error: Exception | None = None  # raised by load(), like a tampered model
        self.language = "en-us"
        self.length_scale = 1.0
        self.sentence_silence_s = 0.0
        self.speakers: list[str] = []
        self.alphabet = "ipa"
        self.sha256: str | None = None
        self.build = BuildInfo("fake", 2)

    def warm_up(self, concurrent: int = 1) -> None:
        self.load()

    def load(self) -> None:
        if self.load_error is not None:
            raise self.load_error
        self.loaded = True

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


def _holds_to_the_voice_protocol(fake: FakeVoice) -> SpeechVoice:
    return fake  # mypy checks the fake against the protocol the real voices implement


@dataclass
class FakeOutput:
    """Plays `speedup` times faster than real time and records what came out, shaped as
    the real outputs shape it (volume, fades). Holds to the same contract as they do
    (tests/test_output_contract.py)."""

    speedup: float = 20.0
    available: bool = True  # False: unplugged, begin() raises
    settings: AudioSettings = field(default_factory=AudioSettings)  # volume and fade_ms
    sample_rate: int = 22050
    played: list[tuple[str, int]] = field(default_factory=list)  # (request id, frames)
    recorded: dict[str, np.ndarray] = field(default_factory=dict)  # what came out, by id
    interrupts: int = 0
    closed: bool = False
    _current: Utterance | None = None
    _shaper: Shaper | None = None
    _pieces: list[np.ndarray] = field(default_factory=list)

    def start(self) -> None: ...

    def close(self) -> None:
        self.closed = True
        self._current = None

    def recover(self) -> None: ...

    @property
    def healthy(self) -> bool:
        return self._reason() is None

    @property
    def alive(self) -> bool:
        return True

    @property
    def status(self) -> str:
        reason = self._reason()
        return "ok" if reason is None else f"degraded: {reason}"

    @property
    def underruns(self) -> int:
        return 0

    def begin(self, utterance: Utterance) -> None:
        check_rate(utterance, self.sample_rate)
        reason = self._reason()
        if reason is not None:
            raise AudioUnavailableError(reason)
        fade = ms_to_frames(self.settings.fade_ms, self.sample_rate)
        self._current, self._pieces = utterance, []
        self._shaper = Shaper(self.settings.volume, fade)

    def write(self, utterance: Utterance, pcm: np.ndarray, stop: threading.Event) -> bool:
        if not self._playing(utterance) or stop.is_set():
            return False
        assert self._shaper is not None
        shaped = self._shaper(pcm)
        if utterance.first_sample_at is None:
            utterance.first_sample_at = time.monotonic()
        deadline = time.monotonic() + len(pcm) / utterance.sample_rate / self.speedup
        while time.monotonic() < deadline:
            if stop.is_set() or utterance.interrupted:
                return False
            time.sleep(0.002)  # a fake pacing itself: playing takes (scaled) real time
        self._pieces.append(shaped)
        self.played.append((utterance.request_id, len(pcm)))
        return True

    def end(self, utterance: Utterance, stop: threading.Event, timeout: float) -> bool:
        if not self._playing(utterance) or stop.is_set():
            return False
        audio = np.concatenate([np.zeros(0, np.int16), *self._pieces])
        fade = min(ms_to_frames(self.settings.fade_ms, self.sample_rate), audio.size)
        if fade:
            audio[-fade:] = (audio[-fade:] * fade_out_gain(fade)).astype(np.int16)
        self.recorded[utterance.request_id] = audio
        self._current = None
        utterance.finished_at = time.monotonic()
        return True

    def set_volume(self, volume: float) -> None:
        self.settings = replace(self.settings, volume=volume)
        if self._shaper is not None:
            self._shaper.volume = volume

    def interrupt(self, fade_ms: int | None = None) -> None:
        self.interrupts += 1
        if self._current is not None:
            self._current.interrupted = True

    def _reason(self) -> str | None:
        if self.closed:
            return "closed"
        return None if self.available else "unplugged"

    def _playing(self, utterance: Utterance) -> bool:
        """False once it was interrupted; RuntimeError for one that was never begun."""
        if utterance is not self._current and not utterance.interrupted:
            raise RuntimeError(f"write/end for {utterance.request_id!r} without begin()")
        return not utterance.interrupted


@dataclass(frozen=True)
class FakeDelivery:
    """A job's `Delivery` (edge_tts/speech/jobs.py), known by its name; the reporter
    records which it acknowledged."""

    name: str = ""

    def ack(self) -> None: ...


class FakeReporter(Listener):
    """The pipeline's reporter (edge_tts/speech/listeners.py): records every event, acks
    the finals."""

    def __init__(self) -> None:
        self.events: list[tuple[EventKind, str, str]] = []  # (kind, id, detail)
        self.acked: list[Delivery] = []
        self._cond = threading.Condition()

    def on_event(self, event: Event) -> None:
        detail = event.reason or event.by or ("" if event.position is None else str(event.position))
        job = event.job
        with self._cond:
            self.events.append((event.kind.value, job.request.id, detail))
            if event.final:
                for delivery in job.deliveries:
                    delivery.ack()
                self.acked.extend(job.deliveries)
            self._cond.notify_all()

    def of(self, kind: EventKind) -> list[str]:
        with self._cond:
            return [i for k, i, _ in self.events if k == kind]

    def wait(self, kind: EventKind, request_id: str, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while request_id not in self.of(kind):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {kind} for {request_id}: {self.events}")
                self._cond.wait(left)
