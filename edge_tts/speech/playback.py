"""The pipeline's `playback` thread: one job at a time, highest priority first, its
chunks written to the audio output as the synthesis workers produce them, and the job's
final event once it is over (finished, rejected, expired, interrupted).

It waits on the synthesis (a chunk's `ready` and `pieces`), never runs it; what the
workers do and when is `pipeline.py`'s and `schedule.py`'s.
"""

from __future__ import annotations

import logging
import queue
import threading
import time

import numpy as np

from ..audio.output import AudioOutput, AudioUnavailableError, Utterance
from ..core.telemetry import Telemetry
from ..voice.model import release_free_memory
from .jobs import ChunkRun, Job, Played, Unspeakable
from .listeners import Reporters
from .outcome import Event, Kind
from .schedule import Schedule

_LOGGER = logging.getLogger(__name__)

TRIM_AFTER_CHUNKS = 4  # return freed memory to the OS after a request this long, when idle
END_TIMEOUT_S = 30.0  # for the output to play a request's last frames
_POLL_S = 0.1  # how often a waiting playback thread re-checks stop and cancel


class Playback:
    def __init__(
        self,
        schedule: Schedule,
        stop: threading.Event,
        *,
        output: AudioOutput,
        output_rate: int,
        reporter: Reporters,
        telemetry: Telemetry,
        played: Played,
    ) -> None:
        self.schedule = schedule
        self._stop = stop
        self.output = output
        self.output_rate = output_rate
        self.reporter = reporter
        self.telemetry = telemetry
        self.played = played

    def run(self) -> None:
        """The thread's loop, until the pipeline stops."""
        while not self._stop.is_set():
            job = self.schedule.next_job()
            if job is None:
                continue
            try:
                self._play(job)
            except Exception as err:  # one job's failure is reported; the thread goes on
                _LOGGER.exception("Playback of %s failed", job.request.id)
                self.telemetry.count("errors")
                if not job.concluded:
                    reason = f"internal error during playback: {err}"
                    report_safely(self.reporter, Event(Kind.REJECTED, job, reason=reason))
            finally:
                idle = self.schedule.job_done()
            if idle and len(job.chunks or ()) > TRIM_AFTER_CHUNKS:
                # A long request leaves freed heap behind (audio pieces, encoder buffers);
                # glibc keeps it unless asked, and RSS would stay at the burst's peak.
                release_free_memory()

    def _play(self, job: Job) -> None:
        request = job.request
        if request.expired():
            self.reporter.report(Event(Kind.EXPIRED, job))
            return
        job.started_at = time.monotonic()
        self.telemetry.observe("queue_wait_ms", (job.started_at - request.received_at) * 1000)
        if not self._wait(job.planned, job):
            # Interrupted before it was planned: no worker plans an interrupted job, so
            # waiting without the job's cancel event would wait for good.
            if job.interrupted_by and not self._stop.is_set():
                self.reporter.report(Event(Kind.INTERRUPTED, job, by=job.interrupted_by))
            return
        if isinstance(job.plan, Unspeakable):
            self.reporter.report(Event(Kind.REJECTED, job, reason=job.plan.reason))
            return
        job.utterance = Utterance(request_id=request.id, sample_rate=self.output_rate)
        try:
            self.output.begin(job.utterance)
            self._play_chunks(job)
        except AudioUnavailableError as err:  # at the start, or failing on the way
            reason = f"audio output unavailable: {err}"
            self.reporter.report(Event(Kind.REJECTED, job, reason=reason))

    def _play_chunks(self, job: Job) -> None:
        assert job.chunks is not None
        for chunk in job.chunks:
            if not self._play_chunk(job, chunk):
                break
            self.schedule.chunk_played(job)
        self._conclude(job)

    def _play_chunk(self, job: Job, chunk: ChunkRun) -> bool:
        """Write a chunk's pieces as they come; False when playback must stop."""
        assert job.utterance is not None
        if not self._wait(chunk.ready, job):
            return False
        while True:
            pcm = self._next_piece(chunk, job)
            if pcm is None:
                return chunk.error is None and not job.cancel.is_set() and not self._stop.is_set()
            if job.timing.audio_seconds == 0.0:
                self.reporter.report(Event(Kind.STARTED, job))
                job.first_written_at = time.monotonic()
            if not self.output.write(job.utterance, pcm, job.cancel):
                return False
            job.timing.audio_seconds += len(pcm) / self.output_rate

    def _next_piece(self, chunk: ChunkRun, job: Job) -> np.ndarray | None:
        while not (self._stop.is_set() or job.cancel.is_set()):
            try:
                return chunk.pieces.get(timeout=_POLL_S)
            except queue.Empty:
                continue
        return None

    def _conclude(self, job: Job) -> None:
        assert job.chunks is not None and job.utterance is not None
        done = job.played_chunks == len(job.chunks)
        if done:
            done = self.output.end(job.utterance, job.cancel, timeout=END_TIMEOUT_S)
        _stamp(job)
        if self._stop.is_set() and not job.interrupted_by:
            # Shutdown: not acknowledged, so it plays again after restart; the pipeline's
            # stop() says so (`deferred`).
            return
        if job.interrupted_by:
            self.reporter.report(Event(Kind.INTERRUPTED, job, by=job.interrupted_by))
        elif not done:
            failed = next((c.error for c in job.chunks if c.error), None)
            reason = failed or "audio output failed during playback"
            self.reporter.report(Event(Kind.REJECTED, job, reason=reason))
        else:
            # Remembered even without a sender id: a redelivered copy (DUP) then matches.
            self.played.add(job.request.key)
            self.reporter.report(Event(Kind.FINISHED, job))

    def _wait(self, event: threading.Event, job: Job) -> bool:
        while not event.wait(_POLL_S):
            if self._stop.is_set() or job.cancel.is_set():
                return False
        return True


def _stamp(job: Job) -> None:
    """The job's figures as its events give them: its first audio is the instant the
    output handed its first sample to the sound card (stamped by the output)."""
    assert job.utterance is not None
    if job.utterance.first_sample_at is not None:
        job.timing.first_audio(job.utterance.first_sample_at)
    # Final when it finished (every chunk was played, so its synthesis is over), which is
    # when its events give the real-time factor.
    job.timing.synth_seconds = job.synth_seconds
    job.timing.finished()


def report_safely(reporter: Reporters, event: Event) -> None:
    """Report from a place that must not raise (an error handler, shutdown)."""
    try:
        reporter.report(event)
    except Exception:
        _LOGGER.exception("Reporting the fate of %s failed", event.job.request.id)
