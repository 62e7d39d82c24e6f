"""A request on its way through the pipeline: the `Job`, its text `Chunk`s, the tasks a
synthesis worker takes. Data only, no threads; its fate goes out as `Event`s (outcome.py)
to the listeners (listeners.py)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Protocol

import numpy as np

from ..audio.output import Utterance
from ..audio.sounds import PlacedSound
from ..messages.request import SayRequest
from ..voice.base import SpeechOptions, SpeechVoice
from ..voice.registry import Voices


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


@dataclass
class Chunk:
    """One text chunk; its audio arrives in pieces while the decoder works through it."""

    text: Final[str]
    voice: Final[SpeechVoice]  # the job's own, or the one for another writing system in it
    options: Final[SpeechOptions]
    # Exact silence before and after its speech, in seconds: SSML's breaks (routing.py).
    silence: Final[tuple[float, float]] = (0.0, 0.0)
    # Whether a break stands before / after it: then the break is the pause there, and the
    # voice's own silence at that end is trimmed (synthesis.render).
    breaks: Final[tuple[bool, bool]] = (False, False)
    sounds: Final[tuple[PlacedSound, ...]] = ()  # SSML's <audio> beside it (routing.py)
    pieces: Final[queue.SimpleQueue[np.ndarray | None]] = field(default_factory=queue.SimpleQueue)
    ready: Final[threading.Event] = field(default_factory=threading.Event)  # 1st piece, or error
    error: str | None = None
    taken: bool = False  # a worker has it
    synth_seconds: float = 0.0
    started_at: float | None = None  # monotonic: its synthesis began
    first_audio_at: float | None = None  # its first piece of audio was ready
    cached: bool = False  # its audio came from the phrase cache, not the voice


@dataclass(eq=False)
class Job:
    """A request on its way. Each field is set at creation (`Final`) or has one writer:
    `schedule.py`, under its lock (seq, planning, played_chunks, interrupted_by, cancel,
    deliveries); the worker that plans it (chunks, plan_error, planned_at, planned); the
    playback thread (started_at, utterance, first_written_at, audio_seconds); `Reporters`
    (concluded, listeners.py)."""

    request: Final[SayRequest]
    # To acknowledge once its fate is known. Replaced, never mutated (schedule.py): a
    # reporter may be reading it on the playback thread.
    deliveries: list[Delivery]
    voice: Final[SpeechVoice]
    options: Final[SpeechOptions]
    seq: int = 0
    chunks: list[Chunk] | None = None
    plan_error: str | None = None
    planning: bool = False  # a worker is planning it
    planned: Final[threading.Event] = field(default_factory=threading.Event)
    played_chunks: int = 0
    started_at: float | None = None
    planned_at: float | None = None  # monotonic: the text front-end was done
    first_written_at: float | None = None  # its first audio went to the output
    utterance: Utterance | None = None
    interrupted_by: str | None = None
    # Set when it must stop playing: interrupted by another request, or shutdown.
    cancel: Final[threading.Event] = field(default_factory=threading.Event)
    audio_seconds: float = 0.0
    concluded: bool = False  # its final event is out (set by `Reporters`)

    @property
    def synth_seconds(self) -> float:
        return sum(c.synth_seconds for c in self.chunks or [])

    @property
    def cached_chunks(self) -> int:
        return sum(c.cached for c in self.chunks or [])

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
