"""A request on its way through the pipeline: the `Job`, its plan and its chunks' runs,
the tasks a synthesis worker takes. Data only, no threads; its fate goes out as `Event`s
(outcome.py) to the listeners (listeners.py)."""

from __future__ import annotations

import enum
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Protocol

import numpy as np

from ..audio.output import Utterance
from ..cache.planned import PlannedChunk
from ..messages.request import SayRequest
from ..voice.base import SpeechOptions, SpeechVoice
from ..voice.registry import Voices
from .chunk_render import ChunkStats
from .timing import Timing


class Delivery(Protocol):
    """The message a job came in, acknowledged by the door's reporter once the job's fate
    is known (an MQTT delivery: `mqtt/intake.py`). The engine only carries it: a repeat
    of a queued request hands its deliveries to the first copy."""

    def ack(self) -> None: ...


class Played(Protocol):
    """Keys of the requests already played: the daemon's `PlayedStore`, a set for `say`."""

    def __contains__(self, key: str, /) -> bool: ...
    def add(self, key: str, /) -> None: ...
    def discard(self, key: str, /) -> None: ...


@dataclass(eq=False)
class ChunkRun:
    """A planned chunk of a job on its way to the speaker: the pipeline's channel between
    the worker that renders it and the playback thread. Its audio arrives in pieces while
    the decoder works through it."""

    plan: Final[PlannedChunk]  # what to say, and how (the router's)
    pieces: Final[queue.SimpleQueue[np.ndarray | None]] = field(default_factory=queue.SimpleQueue)
    ready: Final[threading.Event] = field(default_factory=threading.Event)  # 1st piece, or error
    error: str | None = None
    taken: bool = False  # a worker has it
    stats: Final[ChunkStats] = field(default_factory=ChunkStats)  # its rendering's timings


class PlanPhase(enum.Enum):
    """Where a job's planning is. The schedule moves it on, under its lock: a worker
    takes a waiting job's plan (`Schedule.next_task`) and hands the result back
    (`Schedule.plan_done`)."""

    WAITING = "waiting"  # no worker has taken it yet
    PLANNING = "planning"  # a worker runs the text front-end on it
    DONE = "done"  # `Job.plan` holds the result


@dataclass(frozen=True)
class Planned:
    """The job's chunks, in the order they play."""

    chunks: tuple[ChunkRun, ...]


@dataclass(frozen=True)
class Unspeakable:
    """Why the job cannot be spoken (its text, or the text front-end failing on it)."""

    reason: str


PlanResult = Planned | Unspeakable


@dataclass(eq=False)
class Job:
    """A request on its way. Each field is set at creation (`Final`) or has one writer:
    `schedule.py`, under its lock (seq, phase, plan, planned_at, played_chunks,
    interrupted_by, cancel, deliveries); the playback thread (started_at, utterance,
    first_written_at, timing); `Reporters` (concluded, listeners.py)."""

    request: Final[SayRequest]
    # To acknowledge once its fate is known. Replaced, never mutated (schedule.py): a
    # reporter may be reading it on the playback thread.
    deliveries: list[Delivery]
    voice: Final[SpeechVoice]
    options: Final[SpeechOptions]
    seq: int = 0
    phase: PlanPhase = PlanPhase.WAITING
    plan: PlanResult | None = None  # set with phase DONE, before `planned`
    planned: Final[threading.Event] = field(default_factory=threading.Event)
    played_chunks: int = 0
    started_at: float | None = None
    planned_at: float | None = None  # monotonic: the text front-end was done
    first_written_at: float | None = None  # its first audio went to the output
    utterance: Utterance | None = None
    interrupted_by: str | None = None
    # Set when it must stop playing: interrupted by another request, or shutdown.
    cancel: Final[threading.Event] = field(default_factory=threading.Event)
    # Received (the request's arrival), first audio, finished: time to first audio and RTF.
    timing: Final[Timing] = field(default_factory=Timing)
    concluded: bool = False  # its final event is out (set by `Reporters`)

    def __post_init__(self) -> None:
        self.timing.received(self.request.received_at)

    @property
    def chunks(self) -> tuple[ChunkRun, ...] | None:
        """Its chunks once planned; None before, or when it cannot be spoken."""
        plan = self.plan
        return plan.chunks if isinstance(plan, Planned) else None

    @property
    def plan_error(self) -> str | None:
        """Why it cannot be spoken, once planned; None otherwise."""
        plan = self.plan
        return plan.reason if isinstance(plan, Unspeakable) else None

    @property
    def audio_seconds(self) -> float:
        """The audio played so far."""
        return self.timing.audio_seconds

    @property
    def synth_seconds(self) -> float:
        return sum(c.stats.synth_seconds for c in self.chunks or ())

    @property
    def cached_chunks(self) -> int:
        return sum(c.stats.cached for c in self.chunks or ())

    def sort_key(self) -> tuple[int, int]:
        return (-int(self.request.priority), self.seq)

    def __lt__(self, other: Job) -> bool:
        return self.sort_key() < other.sort_key()


@dataclass(frozen=True)
class PlanTask:
    """Run the text front-end on the job: its chunks, or the reason it cannot be spoken."""

    job: Job


@dataclass(frozen=True)
class ChunkTask:
    """Synthesize chunk `index` of the job (planned already)."""

    job: Job
    index: int


@dataclass(frozen=True)
class StepTask:
    """A step of work for a client that does not play here (a Wyoming response: one text
    chunk into its pieces); ranked below every local task (schedule.py)."""

    name: str  # for logs: whose work it is
    run: Callable[[], None]


Task = PlanTask | ChunkTask | StepTask


def job_for(request: SayRequest, voices: Voices, deliveries: list[Delivery]) -> Job:
    """The job of a request to play here: the voice it names (else the one for its
    language, else the default) and how that voice speaks it. UnknownVoiceError (a
    ValueError) for a voice or language there is not."""
    voice = voices.choose(request.voice, request.language)
    options = voices.options_for(
        voice, speaker=request.speaker, speed=request.speed, volume=request.volume
    )
    return Job(request=request, deliveries=deliveries, voice=voice, options=options)
