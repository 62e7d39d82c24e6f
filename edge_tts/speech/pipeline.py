"""Requests → synthesis workers (at most N at once) → one speaker, in priority order.

Threads: `synth-1..N` synthesize chunks (the playing request's next chunks first, then
the first chunk of the request that will play next; `schedule.py` decides); `playback`
writes them to the audio output in order (`playback.py`). The MQTT thread only calls
`submit()`, which never blocks. The daemon and `edge-ttsd say` both play through this
class.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import numpy as np

from ..audio.output import AudioOutput
from ..cache.serving import PhraseCache
from ..config import QueueSettings, SynthesisSettings
from ..core.telemetry import Telemetry
from ..text import EmptyTextError
from .chunk_render import ChunkRenderer
from .jobs import ChunkRun, Job, Planned, PlanResult, PlanTask, Played, StepTask, Unspeakable
from .listeners import Listener, Reporters
from .outcome import Event, Kind
from .playback import Playback, report_safely
from .routing import Router
from .schedule import Queued, QueueFull, Schedule, Twin

_LOGGER = logging.getLogger(__name__)


class Pipeline:
    def __init__(
        self,
        synthesis: SynthesisSettings,
        queue_settings: QueueSettings,
        *,
        output: AudioOutput,
        output_rate: int,
        reporter: Listener,
        telemetry: Telemetry,
        played: Played,
        router: Router | None = None,
        cache: PhraseCache | None = None,
        listeners: Sequence[Listener] = (),
    ):
        """`reporter` hears every request's fate first (its failures are the engine's to
        handle); `listeners` after it, each failure logged (listeners.py)."""
        self.synthesis = synthesis
        self.router = router or Router(synthesis)
        self.output = output
        self.output_rate = output_rate
        self.reporter = Reporters(reporter, listeners, telemetry=telemetry)
        self.telemetry = telemetry
        self.played = played
        self.cache = cache
        self.renderer = ChunkRenderer(cache)
        self._stop = threading.Event()
        self.schedule = Schedule(queue_settings.size, output, self._stop)
        self.playback = Playback(
            self.schedule,
            self._stop,
            output=output,
            output_rate=output_rate,
            reporter=self.reporter,
            telemetry=telemetry,
            played=played,
        )
        self._threads = [
            threading.Thread(target=self._synth_loop, name=f"synth-{i + 1}", daemon=True)
            for i in range(synthesis.max_concurrent)
        ]
        self._threads.append(
            threading.Thread(target=self.playback.run, name="playback", daemon=True)
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
                report_safely(self.reporter, Event(Kind.DEFERRED, job))

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
            self.reporter.report(Event(Kind.DEFERRED, job))
            return
        if not request.dedupe:
            # A first delivery without a sender id: its key is topic + payload + packet id.
            # The broker reuses a packet id only once it is done with the message that had
            # it (or has lost our session), so an older played message with the same key
            # is not this one, and must not make this one's redelivery a "duplicate".
            self.played.discard(request.key)
        admission = self.schedule.enqueue(job, self.played)
        if isinstance(admission, Queued):
            self.reporter.report(Event(Kind.QUEUED, job, position=admission.position))
        elif isinstance(admission, QueueFull):
            reason = f"queue full ({self.schedule.size} requests waiting)"
            self.reporter.report(Event(Kind.REJECTED, job, reason=reason))
        elif admission.twin is not Twin.PLAYED and request.redelivered:
            # The broker's copy of a request we hold (sent again after a reconnect): it is
            # acknowledged with it, and that one's final event answers both.
            reason = admission.twin.value
            _LOGGER.info("Request %s came again from the broker; %s", request.id, reason)
            if admission.twin is Twin.ANSWERED:  # that event's acks went out: this one's own
                for delivery in job.deliveries:
                    delivery.ack()
        else:
            self.reporter.report(Event(Kind.DUPLICATE, job, reason=admission.twin.value))

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
        result: PlanResult
        try:
            job.voice.speaker_id(job.options.speaker)
            request = job.request
            chunks = self.router.plan(request.speech, job.voice, job.options, request.speed)
            result = Planned(tuple(ChunkRun(chunk) for chunk in chunks))
        except (EmptyTextError, ValueError) as err:
            result = Unspeakable(str(err))
        except Exception as err:
            self.schedule.plan_done(
                job, Unspeakable(f"internal error in the text front-end: {err}")
            )
            raise
        self.schedule.plan_done(job, result)

    def _synthesize(self, job: Job, index: int) -> None:
        assert job.chunks is not None
        chunk = job.chunks[index]

        def deliver(pcm: np.ndarray) -> bool:
            chunk.pieces.put(pcm)
            chunk.ready.set()
            return not job.cancel.is_set()  # interrupted or shutting down: no one plays the rest

        try:
            self.renderer.render(
                chunk.plan,
                index == 0,
                self.output_rate,
                deliver,
                stats=chunk.stats,
                whose=job.request.id,
                use_cache=job.request.cache,
            )
        except Exception as err:  # a broken voice must not kill the worker
            _LOGGER.exception("Synthesis of %s chunk %d failed", job.request.id, index)
            chunk.error = f"synthesis failed: {err}"
        chunk.pieces.put(None)
        chunk.ready.set()
