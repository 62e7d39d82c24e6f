"""Requests → synthesis workers (at most N at once) → one speaker, in priority order.

Threads: `synth-1..N` synthesize chunks (the playing request's next chunks first, then
the first chunk of the request that will play next; `schedule.py` decides); `playback`
writes them to the audio output in order. The MQTT thread only calls `submit()`, which
never blocks. The daemon and `edge-ttsd say` both play through this class.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

import numpy as np

from .audio.output import AudioOutput, AudioUnavailableError, Utterance
from .cache.serving import ChunkAudio, PhraseCache
from .config import QueueSettings, SynthesisSettings
from .jobs import Chunk, Job, PlanTask, Played, Reporter, StepTask
from .routing import Router
from .schedule import Schedule
from .synthesis import render
from .telemetry import Telemetry
from .text import EmptyTextError
from .voice.model import release_free_memory

_LOGGER = logging.getLogger(__name__)

TRIM_AFTER_CHUNKS = 4  # return freed memory to the OS after a request this long, when idle
END_TIMEOUT_S = 30.0  # for the output to play a request's last frames
_POLL_S = 0.1  # how often a waiting playback thread re-checks stop and cancel


class Pipeline:
    def __init__(
        self,
        synthesis: SynthesisSettings,
        queue_settings: QueueSettings,
        *,
        output: AudioOutput,
        output_rate: int,
        reporter: Reporter,
        telemetry: Telemetry,
        played: Played,
        router: Router | None = None,
        cache: PhraseCache | None = None,
    ):
        self.synthesis = synthesis
        self.router = router or Router(synthesis)
        self.output = output
        self.output_rate = output_rate
        self.reporter = reporter
        self.telemetry = telemetry
        self.played = played
        self.cache = cache
        self._stop = threading.Event()
        self.schedule = Schedule(queue_settings.size, output, self._stop)
        self._threads = [
            threading.Thread(target=self._synth_loop, name=f"synth-{i + 1}", daemon=True)
            for i in range(synthesis.max_concurrent)
        ]
        self._threads.append(
            threading.Thread(target=self._playback_loop, name="playback", daemon=True)
        )

    # --- control -------------------------------------------------------------------

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float) -> None:
        """Fade out what plays and leave everything unplayed unacknowledged; each of them
        gets a `deferred` event, so its sender knows it will come again."""
        unplayed = self.schedule.stop()
        self.output.interrupt()
        for thread in self._threads:
            thread.join(timeout)
        for job in unplayed:
            if not job.concluded:
                self._report(self.reporter.deferred, job)

    def alive(self) -> bool:
        return not self._stop.is_set() and all(t.is_alive() for t in self._threads)

    @property
    def depth(self) -> int:
        return self.schedule.depth

    @property
    def in_flight(self) -> int:
        return self.schedule.in_flight

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
        position = self.schedule.enqueue(job)
        if isinstance(position, str):
            self.reporter.duplicate(job, position)
        elif position is None:
            self.reporter.rejected(job, f"queue full ({self.schedule.size} requests waiting)")
        else:
            self.reporter.queued(job, position)

    def stop_playing(self, by: str) -> str | None:
        """Fade out what plays, as an interrupting request does; its sender gets
        `interrupted` with `by`. The id of the request stopped, or None."""
        job = self.schedule.interrupt_playing(by)
        return None if job is None else job.request.id

    # --- synthesis workers -------------------------------------------------------------

    def _synth_loop(self) -> None:
        while not self._stop.is_set():
            task = self.schedule.next_task()
            if task is None:
                continue
            try:
                if isinstance(task, PlanTask):
                    self._plan(task.job)
                elif isinstance(task, StepTask):
                    task.run()  # a Wyoming response's next chunk (schedule.py ranks it last)
                else:
                    self._synthesize(task.job, task.index)
            except Exception:  # whatever one job does, the worker goes on to the next
                name = task.name if isinstance(task, StepTask) else task.job.request.id
                _LOGGER.exception("Synthesis worker failed on %s", name)
                self.telemetry.count("errors")
            finally:
                self.schedule.task_done()

    def _plan(self, job: Job) -> None:
        try:
            job.voice.speaker_id(job.options.speaker)
            job.chunks = self.router.plan(job)
        except (EmptyTextError, ValueError) as err:
            job.plan_error = str(err)
        except Exception as err:
            job.plan_error = f"internal error in the text front-end: {err}"
            raise
        finally:
            job.planned_at = time.monotonic()
            job.planned.set()

    def _synthesize(self, job: Job, index: int) -> None:
        assert job.chunks is not None
        chunk = job.chunks[index]
        started = chunk.started_at = time.monotonic()
        audio = self._cached_audio(job, chunk, index == 0)
        try:
            pieces = render(
                chunk.voice, chunk.text, chunk.options, index == 0, self.output_rate, audio
            )
            for pcm in pieces:
                if chunk.first_audio_at is None:
                    chunk.first_audio_at = time.monotonic()
                chunk.pieces.put(pcm)
                chunk.ready.set()
                if job.cancel.is_set():
                    break  # interrupted or shutting down: the rest would not be played
        except Exception as err:  # a broken voice must not kill the worker
            _LOGGER.exception("Synthesis of %s chunk %d failed", job.request.id, index)
            chunk.error = f"synthesis failed: {err}"
        finally:
            if audio is not None:
                audio.close()  # a synthesis cut short: whoever waits for its chunk goes on
        chunk.synth_seconds = time.monotonic() - started
        chunk.pieces.put(None)
        chunk.ready.set()

    def _cached_audio(self, job: Job, chunk: Chunk, first: bool) -> ChunkAudio | None:
        """The chunk's voice audio through the phrase cache (None: the voice's own)."""
        if self.cache is None or not job.request.cache:
            return None
        try:
            audio = self.cache.audio(chunk.voice, chunk.text, chunk.options, first)
        except Exception:  # speaking matters more than caching: synthesize as without it
            _LOGGER.exception("Phrase cache lookup failed for %s", job.request.id)
            return None
        chunk.cached = audio.cached
        return audio

    # --- playback ----------------------------------------------------------------------

    def _playback_loop(self) -> None:
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
                    self._report(
                        self.reporter.rejected, job, f"internal error during playback: {err}"
                    )
            finally:
                idle = self.schedule.job_done()
            if idle and len(job.chunks or ()) > TRIM_AFTER_CHUNKS:
                # A long request leaves freed heap behind (audio pieces, encoder buffers);
                # glibc keeps it unless asked, and RSS would stay at the burst's peak.
                release_free_memory()

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
            self.schedule.chunk_played(job)
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
                job.first_written_at = time.monotonic()
            if not self.output.write(job.utterance, pcm, job.cancel):
                return False
            job.audio_seconds += len(pcm) / self.output_rate

    def _next_piece(self, chunk: Chunk, job: Job) -> np.ndarray | None:
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

    def _wait(self, event: threading.Event, job: Job) -> bool:
        while not event.wait(_POLL_S):
            if self._stop.is_set() or job.cancel.is_set():
                return False
        return True
