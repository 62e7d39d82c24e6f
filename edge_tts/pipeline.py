"""Requests → synthesis workers (at most N at once) → one speaker, in priority order.

Threads: `synth-1..N` synthesize chunks (the playing request's next chunks first, then
the first chunk of the request that will play next); `playback` writes them to the audio
output in order. The MQTT thread only calls `submit()`, which never blocks.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .audio.player import AudioOutput, AudioUnavailableError, Utterance
from .dedupe import PlayedStore
from .messages import SayRequest
from .synthesis import SpeechOptions, render
from .telemetry import Telemetry
from .text import EmptyTextError, prepare
from .voice.model import Voice, release_free_memory

_LOGGER = logging.getLogger(__name__)

TRIM_AFTER_CHUNKS = 4  # return freed memory to the OS after a request this long, when idle
LOOKAHEAD_CHUNKS = 2  # synthesized but unplayed chunks of the playing request
NEXT_JOB_CHUNKS = 1  # chunks prepared for the request that plays next


class Reporter(Protocol):
    """Where a request's fate goes: events, acknowledgements, Hermes replies."""

    def queued(self, job: Job, position: int) -> None: ...
    def started(self, job: Job) -> None: ...
    def finished(self, job: Job) -> None: ...
    def rejected(self, job: Job, reason: str) -> None: ...
    def expired(self, job: Job) -> None: ...
    def interrupted(self, job: Job, by: str) -> None: ...
    def duplicate(self, job: Job, reason: str) -> None: ...
    def deferred(self, job: Job) -> None: ...


@dataclass
class Chunk:
    """One text chunk; its audio arrives in pieces while the decoder works through it."""

    text: str
    pieces: queue.SimpleQueue[np.ndarray | None] = field(default_factory=queue.SimpleQueue)
    ready: threading.Event = field(default_factory=threading.Event)  # first piece, or error
    error: str | None = None
    taken: bool = False  # a worker has it
    synth_seconds: float = 0.0


@dataclass(eq=False)
class Job:
    request: SayRequest
    deliveries: list[object]  # MQTT deliveries to acknowledge once its fate is known
    voice: Voice
    options: SpeechOptions
    seq: int = 0
    chunks: list[Chunk] | None = None
    plan_error: str | None = None
    planning: bool = False  # a worker is planning it
    planned: threading.Event = field(default_factory=threading.Event)
    played_chunks: int = 0
    started_at: float | None = None
    utterance: Utterance | None = None
    interrupted_by: str | None = None
    # Set when it must stop playing: interrupted by another request, or shutdown.
    cancel: threading.Event = field(default_factory=threading.Event)
    audio_seconds: float = 0.0
    concluded: bool = False  # its final event is out (set by the reporter)

    @property
    def synth_seconds(self) -> float:
        return sum(c.synth_seconds for c in self.chunks or [])

    def sort_key(self) -> tuple[int, int]:
        return (-int(self.request.priority), self.seq)

    def __lt__(self, other: Job) -> bool:
        return self.sort_key() < other.sort_key()


class Pipeline:
    def __init__(
        self,
        output: AudioOutput,
        output_rate: int,
        reporter: Reporter,
        telemetry: Telemetry,
        played: PlayedStore,
        queue_size: int = 32,
        max_concurrent: int = 2,
        max_chunk_chars: int = 200,
        first_chunk_chars: int = 40,
        fade_ms: int = 15,
    ):
        self.output = output
        self.output_rate = output_rate
        self.reporter = reporter
        self.telemetry = telemetry
        self.played = played
        self.queue_size = queue_size
        self.max_chunk_chars = max_chunk_chars
        self.first_chunk_chars = first_chunk_chars
        self.fade_ms = fade_ms
        self._cond = threading.Condition()
        self._queue: list[Job] = []
        self._playing: Job | None = None
        self._seq = itertools.count()
        self._in_flight = 0
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._synth_loop, name=f"synth-{i + 1}", daemon=True)
            for i in range(max_concurrent)
        ]
        self._threads.append(
            threading.Thread(target=self._playback_loop, name="playback", daemon=True)
        )

    # --- control -------------------------------------------------------------------

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Fade out what plays and leave everything unplayed unacknowledged; each of them
        gets a `deferred` event, so its sender knows it will come again."""
        self._stop.set()
        with self._cond:
            unplayed = [*([self._playing] if self._playing else []), *sorted(self._queue)]
            if self._playing is not None:
                self._playing.cancel.set()
            self._cond.notify_all()
        self.output.interrupt(self.fade_ms)
        for thread in self._threads:
            thread.join(timeout)
        for job in unplayed:
            if not job.concluded:
                self._report(self.reporter.deferred, job)

    def alive(self) -> bool:
        return not self._stop.is_set() and all(t.is_alive() for t in self._threads)

    @property
    def depth(self) -> int:
        with self._cond:
            return len(self._queue)

    @property
    def in_flight(self) -> int:
        with self._cond:
            return self._in_flight

    # --- intake (MQTT thread) --------------------------------------------------------

    def submit(self, job: Job) -> None:
        """Queue a request or reject it; never blocks."""
        request = job.request
        if self._stop.is_set():
            # Unacknowledged, so the broker redelivers it after the restart.
            self.reporter.deferred(job)
            return
        if request.dedupe and request.key in self.played:
            self.reporter.duplicate(job, "already played")
            return
        with self._cond:
            position = self._enqueue(job)
        if isinstance(position, str):
            self.reporter.duplicate(job, position)
        elif position is None:
            self.reporter.rejected(job, f"queue full ({self.queue_size} requests waiting)")
        else:
            self.reporter.queued(job, position)

    def _enqueue(self, job: Job) -> int | str | None:
        """Under the lock: the queue position, why it is a duplicate, or None when full."""
        twin = self._active_twin(job.request)
        if twin is not None:
            # The same request is queued or playing: this delivery is acknowledged with
            # the first copy's, once that one's fate is known.
            twin.deliveries.extend(job.deliveries)
            job.deliveries = []
            return f"already {'playing' if twin is self._playing else 'queued'}"
        if len(self._queue) >= self.queue_size:
            return None
        job.seq = next(self._seq)
        heapq.heappush(self._queue, job)
        self._maybe_interrupt(job)
        self._cond.notify_all()
        return sum(1 for other in self._queue if other < job)

    def _active_twin(self, request: SayRequest) -> Job | None:
        if not request.dedupe:
            return None
        candidates = [*self._queue, *([self._playing] if self._playing else [])]
        return next(
            (j for j in candidates if j.request.dedupe and j.request.key == request.key), None
        )

    def _maybe_interrupt(self, job: Job) -> None:
        playing = self._playing
        if playing is None or not job.request.takes_over or playing.interrupted_by:
            return
        if job.request.priority > playing.request.priority or (
            job.request.interrupt and job.request.priority >= playing.request.priority
        ):
            playing.interrupted_by = job.request.id
            playing.cancel.set()
            self.output.interrupt(self.fade_ms)

    # --- synthesis workers -------------------------------------------------------------

    def _synth_loop(self) -> None:
        while not self._stop.is_set():
            task = self._next_task()
            if task is None:
                continue
            job, index = task
            try:
                if index < 0:
                    self._plan(job)
                else:
                    self._synthesize(job, index)
            except Exception:  # whatever one job does, the worker goes on to the next
                _LOGGER.exception("Synthesis worker failed on %s", job.request.id)
                self.telemetry.count("errors")
            finally:
                with self._cond:
                    self._in_flight -= 1
                    self._cond.notify_all()

    def _next_task(self) -> tuple[Job, int] | None:
        with self._cond:
            while not self._stop.is_set():
                task = self._pick_task()
                if task is not None:
                    self._in_flight += 1
                    return task
                self._cond.wait(0.5)
        return None

    def _pick_task(self) -> tuple[Job, int] | None:
        playing = self._playing
        if playing is not None and self._awaited_in_flight(playing):
            # Playback is waiting for a synthesis that is running: on two cores a second
            # one would slow it down (measured 1.1-1.4x), i.e. delay the first sound.
            return None
        candidates: list[tuple[Job, int]] = []
        if self._playing is not None and not self._playing.interrupted_by:
            candidates.append((self._playing, self._playing.played_chunks + LOOKAHEAD_CHUNKS))
        if self._queue:
            candidates.append((self._queue[0], NEXT_JOB_CHUNKS))
        for job, limit in candidates:
            if job.chunks is None:
                if not job.planning:
                    job.planning = True
                    return job, -1
                continue
            for index, chunk in enumerate(job.chunks[:limit]):
                if not chunk.taken:
                    chunk.taken = True
                    return job, index
        return None

    @staticmethod
    def _awaited_in_flight(job: Job) -> bool:
        if job.cancel.is_set():
            return False
        if job.chunks is None:
            return job.planning
        if job.played_chunks >= len(job.chunks):
            return False
        chunk = job.chunks[job.played_chunks]
        return chunk.taken and not chunk.ready.is_set()

    def _plan(self, job: Job) -> None:
        try:
            texts = prepare(
                job.request.text,
                language=job.voice.config.espeak_voice,
                max_chunk_chars=self.max_chunk_chars,
                first_chunk_chars=self.first_chunk_chars,
            )
            job.voice.speaker_id(job.options.speaker)
            job.chunks = [Chunk(t) for t in texts]
        except (EmptyTextError, ValueError) as err:
            job.plan_error = str(err)
        except Exception as err:
            job.plan_error = f"internal error in the text front-end: {err}"
            raise
        finally:
            job.planned.set()

    def _synthesize(self, job: Job, index: int) -> None:
        assert job.chunks is not None
        chunk = job.chunks[index]
        started = time.monotonic()
        try:
            for pcm in render(job.voice, chunk.text, job.options, index == 0, self.output_rate):
                chunk.pieces.put(pcm)
                chunk.ready.set()
                if job.cancel.is_set():
                    break  # interrupted or shutting down: the rest would not be played
        except Exception as err:  # a broken voice must not kill the worker
            _LOGGER.exception("Synthesis of %s chunk %d failed", job.request.id, index)
            chunk.error = f"synthesis failed: {err}"
        chunk.synth_seconds = time.monotonic() - started
        chunk.pieces.put(None)
        chunk.ready.set()

    # --- playback ----------------------------------------------------------------------

    def _playback_loop(self) -> None:
        while not self._stop.is_set():
            job = self._next_job()
            if job is None:
                continue
            try:
                self._play(job)
            except Exception as err:  # one job's failure is reported; the thread goes on
                _LOGGER.exception("Playback of %s failed", job.request.id)
                self.telemetry.count("errors")
                if not job.concluded:
                    self._report(
                        self.reporter.rejected, job, f"internal error during playback: {err}"
                    )
            finally:
                with self._cond:
                    self._playing = None
                    idle = not self._queue
                    self._cond.notify_all()
            if idle and len(job.chunks or ()) > TRIM_AFTER_CHUNKS:
                # A long request leaves freed heap behind (audio pieces, encoder buffers);
                # glibc keeps it unless asked, and RSS would stay at the burst's peak.
                release_free_memory()

    def _next_job(self) -> Job | None:
        with self._cond:
            while not self._stop.is_set():
                if self._queue:
                    job = heapq.heappop(self._queue)
                    self._playing = job
                    self._cond.notify_all()
                    return job
                self._cond.wait(0.5)
        return None

    def _play(self, job: Job) -> None:
        request = job.request
        if request.expired():
            self.reporter.expired(job)
            return
        job.started_at = time.monotonic()
        self.telemetry.observe("queue_wait_ms", (job.started_at - request.received_at) * 1000)
        if not self._wait(job.planned, job):
            # Interrupted before it was planned: no worker plans an interrupted job, so
            # waiting on without the job's cancel event was a deadlock (found by fuzzing).
            if job.interrupted_by and not self._stop.is_set():
                self.reporter.interrupted(job, job.interrupted_by)
            return
        if job.plan_error is not None:
            self.reporter.rejected(job, job.plan_error)
            return
        job.utterance = Utterance(request_id=request.id, sample_rate=self.output_rate)
        try:
            self.output.begin(job.utterance)
            self._play_chunks(job)
        except AudioUnavailableError as err:  # at the start, or failing on the way
            self.reporter.rejected(job, f"audio output unavailable: {err}")

    def _play_chunks(self, job: Job) -> None:
        assert job.chunks is not None
        for chunk in job.chunks:
            if not self._play_chunk(job, chunk):
                break
            job.played_chunks += 1
            with self._cond:
                self._cond.notify_all()
        self._conclude(job)

    def _play_chunk(self, job: Job, chunk: Chunk) -> bool:
        """Write a chunk's pieces as they come; False when playback must stop."""
        assert job.utterance is not None
        if not self._wait(chunk.ready, job):
            return False
        while True:
            pcm = self._next_piece(chunk, job)
            if pcm is None:
                return chunk.error is None and not job.cancel.is_set() and not self._stop.is_set()
            if job.audio_seconds == 0.0:
                self.reporter.started(job)
            if not self.output.write(job.utterance, pcm, job.cancel):
                return False
            job.audio_seconds += len(pcm) / self.output_rate

    def _next_piece(self, chunk: Chunk, job: Job) -> np.ndarray | None:
        while not (self._stop.is_set() or job.cancel.is_set()):
            try:
                return chunk.pieces.get(timeout=0.1)
            except queue.Empty:
                continue
        return None

    def _conclude(self, job: Job) -> None:
        assert job.chunks is not None and job.utterance is not None
        done = job.played_chunks == len(job.chunks)
        if done:
            done = self.output.end(job.utterance, job.cancel, timeout=30.0)
        if self._stop.is_set() and not job.interrupted_by:
            return  # shutdown: not acknowledged, so it plays again after restart; stop() says so
        if job.interrupted_by:
            self.reporter.interrupted(job, job.interrupted_by)
        elif not done:
            failed = next((c.error for c in job.chunks if c.error), None)
            self.reporter.rejected(job, failed or "audio output failed during playback")
        else:
            # Remembered even without a sender id: a redelivered copy (DUP) then matches.
            self.played.add(job.request.key)
            self.reporter.finished(job)

    def _report(self, method: Callable[..., None], job: Job, *args: object) -> None:
        """Report from a place that must not raise (an error handler, shutdown)."""
        try:
            method(job, *args)
        except Exception:
            _LOGGER.exception("Reporting the fate of %s failed", job.request.id)

    def _wait(self, event: threading.Event, job: Job | None = None) -> bool:
        while not event.wait(0.1):
            if self._stop.is_set() or (job is not None and job.cancel.is_set()):
                return False
        return True
