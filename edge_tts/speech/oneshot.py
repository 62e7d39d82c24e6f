"""`edge-ttsd say`: one request through the daemon's pipeline and audio outputs.

The same `Pipeline` and outputs as the daemon, so there is one playback behaviour to
test: the first chunk plays while the rest is synthesized, with the same scheduling,
fades and volume. A one-shot reporter stands in for MQTT and hands the request's fate
back to the command.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from .. import cache
from ..audio.output import AudioOutput
from ..config import QueueSettings, SynthesisSettings
from ..core.lifecycle import Part, Parts, nothing
from ..core.telemetry import Telemetry
from ..messages.events import FinalKind
from ..messages.request import SayRequest
from ..text.document import Document
from ..voice.base import SpeechOptions, SpeechVoice
from . import FIGURES
from .jobs import Job
from .pipeline import Pipeline
from .routing import Router

STOP_TIMEOUT_S = 5.0
_REQUEST_ID = "say"


class NoSoundCardError(RuntimeError):
    """The output could not be opened (no sound card, an unknown device); says why."""


class SayFailed(RuntimeError):
    """The text was not played to its end; the message says why."""


@dataclass(frozen=True)
class SayReport:
    chunks: int
    audio_seconds: float
    synth_seconds: float
    first_audio_seconds: float

    def summary(self) -> str:
        rtf = self.synth_seconds / self.audio_seconds if self.audio_seconds else 0.0
        return (
            f"{self.chunks} chunk(s), {self.audio_seconds:.2f} s of audio, "
            f"first audio after {self.first_audio_seconds * 1000:.0f} ms, RTF {rtf:.3f}"
        )


class OneShotReporter:
    """The pipeline's `Reporter` (jobs.py) for one local request: no events, nothing to
    acknowledge; the request's final event wakes `wait()`."""

    def __init__(self) -> None:
        self.outcome: FinalKind | None = None
        self.reason: str | None = None
        self._done = threading.Event()

    def wait(self) -> None:
        self._done.wait()

    def _conclude(self, job: Job, outcome: FinalKind, reason: str | None = None) -> None:
        self.outcome, self.reason = outcome, reason
        self._done.set()

    def queued(self, job: Job, position: int) -> None: ...
    def started(self, job: Job) -> None: ...
    def deferred(self, job: Job) -> None: ...  # not final: only when we stop the pipeline

    def finished(self, job: Job) -> None:
        self._conclude(job, "finished")

    def rejected(self, job: Job, reason: str) -> None:
        self._conclude(job, "rejected", reason)

    def expired(self, job: Job) -> None:
        self._conclude(job, "expired", "expired before it could be played")

    def interrupted(self, job: Job, by: str) -> None:
        self._conclude(job, "interrupted", f"interrupted by {by}")

    def duplicate(self, job: Job, reason: str) -> None:
        self._conclude(job, "duplicate", reason)


def say(
    text: str,
    voice: SpeechVoice,
    options: SpeechOptions,
    output: AudioOutput,
    synthesis: SynthesisSettings,
    document: Document | None = None,
    router: Router | None = None,
) -> SayReport:
    """Speak `text` (or the SSML `document` it is) once and say what it took; `router`:
    the configured voices' and lexicon's (else `voice` reads all of it). Raises
    NoSoundCardError when the output cannot open, the voice's load errors (a tampered
    model), ValueError for text that cannot be spoken (nothing speakable, an unknown
    speaker), SayFailed otherwise."""
    # Received now: "first audio" counts the model load, as a user waits for it too.
    request = SayRequest(id=_REQUEST_ID, text=text, key=_REQUEST_ID, document=document)
    job = Job(request, [], voice, options)
    reporter = OneShotReporter()
    pipeline = Pipeline(
        synthesis,
        QueueSettings(),
        output=output,
        output_rate=voice.sample_rate,
        reporter=reporter,
        telemetry=Telemetry(figures=(FIGURES, cache.FIGURES)),
        played=set[str](),  # nothing to deduplicate: one request
        router=router,
    )
    parts = Parts(
        [
            # The device first: no sound card is reported before a model load.
            Part("audio", lambda: _start(output), output.close),
            Part("voice", voice.load, nothing),
            Part("pipeline", pipeline.start, lambda: pipeline.stop(STOP_TIMEOUT_S)),
        ]
    )
    try:
        parts.start()
        pipeline.submit(job)
        reporter.wait()
    finally:
        parts.stop()
    return _report(job, reporter)


def _start(output: AudioOutput) -> None:
    output.start()
    if output.status != "ok":
        # `say` plays once, now: unlike the daemon it does not wait for the card to appear.
        reason = output.status.removeprefix("degraded: ")
        output.close()
        raise NoSoundCardError(reason)


def _report(job: Job, reporter: OneShotReporter) -> SayReport:
    if reporter.outcome != "finished":
        if job.plan_error is not None:
            raise ValueError(job.plan_error)
        raise SayFailed(reporter.reason or "not played")
    return SayReport(
        chunks=len(job.chunks or []),
        audio_seconds=job.audio_seconds,
        synth_seconds=job.synth_seconds,
        first_audio_seconds=job.timing.time_to_first_audio_s or 0.0,
    )
