"""Which request plays next and which synthesis runs next, decided under one lock.

The queue is a heap in priority order, then arrival; `playing` is the job the playback
thread has taken. Synthesis workers ask for tasks (`next_task`), the playback thread for
jobs (`next_job`); both block until there is one or the pipeline stops. A free worker
takes the first task it finds in the order of `TaskClass`, the one place that order is
stated; the work of the last two classes comes from producers (`add`).
"""

from __future__ import annotations

import enum
import heapq
import itertools
import threading
import time
from dataclasses import dataclass
from typing import Protocol

from ..audio.output import AudioOutput
from ..messages.request import SayRequest
from .jobs import ChunkTask, Job, PlanPhase, PlanResult, PlanTask, Played, StepTask, Task

LOOKAHEAD_CHUNKS = 2  # synthesized but unplayed chunks of the playing request
NEXT_JOB_CHUNKS = 1  # chunks prepared for the request that plays next
_WAIT_S = 0.5  # how often a waiting thread re-checks the stop event


class TaskClass(enum.IntEnum):
    """What a free synthesis worker does, first to last. Before any of them: while the
    playing request waits for a synthesis that is running, nothing else starts (on two
    cores a second synthesis slows the awaited one 1.1-1.4x, i.e. delays the sound)."""

    PLAYING = 0  # the playing request's next chunks (LOOKAHEAD_CHUNKS ahead of the speaker)
    NEXT = 1  # the first chunk of the local request that plays next (NEXT_JOB_CHUNKS)
    REMOTE = 2  # responses played elsewhere (Wyoming, HTTP), taking turns (responses.py)
    PRERENDER = 3  # the phrase cache's phrases: only when nothing else is queued or running
    KEEP_WARM = 4  # a short phrase per voice after a quiet spell (keepwarm.py): idle only


class Twin(enum.Enum):
    """Why a request is a duplicate: where the first copy of it is. The value is the
    reason its `duplicate` event gives."""

    QUEUED = "already queued"  # this copy is acknowledged with it
    PLAYING = "already playing"  # this copy is acknowledged with it
    ANSWERED = "already answered"  # its final event is out: this copy is answered alone
    PLAYED = "already played"  # it played to its end before


@dataclass(frozen=True)
class Queued:
    position: int  # requests ahead of it


@dataclass(frozen=True)
class Duplicate:
    twin: Twin


@dataclass(frozen=True)
class QueueFull:
    pass


Admission = Queued | Duplicate | QueueFull  # what `Schedule.enqueue` made of a request


class Producer(Protocol):
    """Work of one task class. `take` is called under the schedule's lock, so it must be
    quick and must never call back into the schedule; a producer whose work becomes ready
    calls `Schedule.wake`."""

    def take(self) -> StepTask | None: ...


class Schedule:
    def __init__(self, size: int, output: AudioOutput, stop: threading.Event) -> None:
        self.size = size
        self._output = output
        self._stop = stop
        self._cond = threading.Condition()
        self._queue: list[Job] = []
        self._playing: Job | None = None
        self._seq = itertools.count()
        self._in_flight = 0
        self._producers: dict[TaskClass, Producer] = {}
        self._idle_since = time.monotonic()  # when the last task ended

    def add(self, task_class: TaskClass, producer: Producer) -> None:
        """`producer` makes the work of `task_class` (any but the queue's own)."""
        if task_class in (TaskClass.PLAYING, TaskClass.NEXT):
            raise ValueError(f"{task_class.name} is the queue's own work")
        with self._cond:
            self._producers[task_class] = producer
            self._cond.notify_all()

    def wake(self) -> None:
        """A producer's work became ready: an idle worker looks again."""
        with self._cond:
            self._cond.notify_all()

    @property
    def depth(self) -> int:
        with self._cond:
            return len(self._queue)

    @property
    def in_flight(self) -> int:
        with self._cond:
            return self._in_flight

    @property
    def playing(self) -> Job | None:
        return self._playing

    def stop(self) -> list[Job]:
        """Wake every waiting thread, cancel what plays; returns the unplayed jobs."""
        self._stop.set()
        with self._cond:
            unplayed = [*([self._playing] if self._playing else []), *sorted(self._queue)]
            if self._playing is not None:
                self._playing.cancel.set()
            self._cond.notify_all()
        return unplayed

    # --- intake -----------------------------------------------------------------------

    def enqueue(self, job: Job, played: Played | None = None) -> Admission:
        """Queued at a position, a duplicate of which copy, or refused: the queue is full.
        A request held here is found before `played` (the keys played to their end) is
        asked: one that is finishing is already in `played` while its final event is
        still to go out, and a copy of it then is the broker's, answered with it."""
        with self._cond:
            twin = self._active_twin(job.request)
            if twin is not None and twin.concluded:
                # Its final event is out or going out, with its deliveries acknowledged:
                # attached now, this copy's would never be. It is answered on its own.
                return Duplicate(Twin.ANSWERED)
            if twin is not None:
                # The same request is queued or playing: this delivery is acknowledged with
                # the first copy's, once that one's fate is known.
                twin.deliveries = [*twin.deliveries, *job.deliveries]
                job.deliveries = []
                return Duplicate(Twin.PLAYING if twin is self._playing else Twin.QUEUED)
            if played is not None and job.request.dedupe and job.request.key in played:
                return Duplicate(Twin.PLAYED)
            if len(self._queue) >= self.size:
                return QueueFull()
            job.seq = next(self._seq)
            heapq.heappush(self._queue, job)
            self._maybe_interrupt(job)
            self._cond.notify_all()
            return Queued(sum(1 for other in self._queue if other < job))

    def _active_twin(self, request: SayRequest) -> Job | None:
        if not request.dedupe:
            return None
        candidates = [*self._queue, *([self._playing] if self._playing else [])]
        # Also a first copy not marked `dedupe` (no sender id): a key without a sender id
        # is its delivery's, so only the broker's redelivery of that message matches it.
        return next((j for j in candidates if j.request.key == request.key), None)

    def _maybe_interrupt(self, job: Job) -> None:
        playing = self._playing
        if playing is None or not job.request.takes_over or playing.interrupted_by:
            return
        if job.request.priority > playing.request.priority or (
            job.request.interrupt and job.request.priority >= playing.request.priority
        ):
            self._interrupt(playing, job.request.id)

    def interrupt_playing(self, by: str) -> Job | None:
        """Stop what plays (a stop command): the job interrupted, or None when none was."""
        with self._cond:
            playing = self._playing
            if playing is None or playing.interrupted_by or playing.concluded:
                return None
            self._interrupt(playing, by)
            return playing

    def _interrupt(self, playing: Job, by: str) -> None:
        playing.interrupted_by = by
        playing.cancel.set()
        # Under the lock: the playback thread cannot take the next job (whose audio
        # this would cut) before the output has dropped the interrupted one's.
        self._output.interrupt()

    # --- synthesis workers ---------------------------------------------------------------

    def next_task(self, timeout: float | None = None) -> Task | None:
        """The next synthesis to run (counted in flight until `task_done`); None on stop,
        or when there was none for `timeout` seconds (0: only what is there now)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._stop.is_set():
                task = self._pick_task()
                if task is not None:
                    self._in_flight += 1
                    return task
                left = _WAIT_S if deadline is None else deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(min(left, _WAIT_S))
        return None

    def plan_done(self, job: Job, result: PlanResult) -> None:
        """The worker that took `job`'s plan has its result: chunks to render, or why it
        cannot be spoken. The playback thread waiting for it goes on (`job.planned`)."""
        with self._cond:
            job.plan = result
            job.phase = PlanPhase.DONE
            job.planned_at = time.monotonic()
        job.planned.set()

    def task_done(self) -> None:
        with self._cond:
            self._in_flight -= 1
            self._idle_since = time.monotonic()
            self._cond.notify_all()

    def idle_since(self) -> float:
        """When the last synthesis task ended (monotonic)."""
        return self._idle_since

    def _pick_task(self) -> Task | None:
        playing = self._playing
        if playing is not None and _awaited_in_flight(playing):
            return None
        for task_class in TaskClass:
            task = self._take(task_class)
            if task is not None:
                return task
        return None

    def _take(self, task_class: TaskClass) -> Task | None:
        if task_class is TaskClass.PLAYING:
            playing = self._playing
            if playing is None or playing.interrupted_by:
                return None
            return _job_task(playing, playing.played_chunks + LOOKAHEAD_CHUNKS)
        if task_class is TaskClass.NEXT:
            return _job_task(self._queue[0], NEXT_JOB_CHUNKS) if self._queue else None
        if task_class >= TaskClass.PRERENDER and not self._idle():
            return None
        producer = self._producers.get(task_class)
        return producer.take() if producer is not None else None

    # --- playback ------------------------------------------------------------------------

    def next_job(self) -> Job | None:
        """The job to play now, highest priority first; None on stop."""
        with self._cond:
            while not self._stop.is_set():
                if self._queue:
                    job = heapq.heappop(self._queue)
                    self._playing = job
                    self._cond.notify_all()
                    return job
                self._cond.wait(_WAIT_S)
        return None

    def chunk_played(self, job: Job) -> None:
        """One more chunk of `job` played: its lookahead moves on."""
        with self._cond:
            job.played_chunks += 1
            self._cond.notify_all()

    def job_done(self) -> bool:
        """The playing job is over; True when nothing else waits."""
        with self._cond:
            self._playing = None
            self._cond.notify_all()
            return not self._queue

    # --- for the pre-renderer ---------------------------------------------------------

    def busy_since(self) -> float | None:
        """When the oldest request now queued or playing arrived (monotonic); None if none."""
        with self._cond:
            jobs = [*self._queue, *([self._playing] if self._playing else [])]
            return min((job.request.received_at for job in jobs), default=None)

    def _idle(self) -> bool:
        return not self._queue and self._playing is None and self._in_flight == 0


# --- a job's next task (under the schedule's lock) ------------------------------------


def _job_task(job: Job, limit: int) -> Task | None:
    """Plan the job, or synthesize the first of its first `limit` chunks not taken."""
    if job.phase is PlanPhase.WAITING:
        job.phase = PlanPhase.PLANNING
        return PlanTask(job)
    for index, chunk in enumerate((job.chunks or ())[:limit]):
        if not chunk.taken:
            chunk.taken = True
            return ChunkTask(job, index)
    return None


def _awaited_in_flight(job: Job) -> bool:
    """Whether what the job plays next (its plan, its next chunk) is being made now."""
    if job.cancel.is_set():
        return False
    if job.phase is not PlanPhase.DONE:
        return job.phase is PlanPhase.PLANNING
    if job.chunks is None:
        return False
    if job.played_chunks >= len(job.chunks):
        return False
    chunk = job.chunks[job.played_chunks]
    return chunk.taken and not chunk.ready.is_set()
