"""`edge-ttsd say`'s door: one request through the daemon's pipeline and audio outputs
(cli/say.py is its command line).

The same `Pipeline` and outputs as the daemon, so there is one playback behaviour to
test: the first chunk plays while the rest is synthesized, with the same scheduling,
fades and volume. A one-shot reporter stands in for MQTT and hands the request's fate
back to the command.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from .. import cache, speech
from ..audio.output import AudioOutput
from ..config import QueueSettings, SynthesisSettings
from ..core.lifecycle import Part, Parts, nothing
from ..core.telemetry import Door, Figures, Telemetry
from ..messages.request import Origin, SayRequest
from ..speech.jobs import Job
from ..speech.listeners import Listener
from ..speech.outcome import EXPIRED_REASON, Event, Kind
from ..speech.pipeline import Pipeline
from ..speech.routing import Router
from ..text.document import Document
from ..voice.base import SpeechOptions, SpeechVoice

STOP_TIMEOUT_S = 5.0
_REQUEST_ID = "say"

# This door, declared in its telemetry's figures as every door is (the engine measures a
# finished request by the door it came in by; one its telemetry does not know is an
# error). Its one request plays here.
ORIGIN = Origin(door="say")
FIGURES = (speech.FIGURES, cache.FIGURES, Figures(doors=(Door(ORIGIN.door, local=True),)))


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


class OneShotReporter(Listener):
    """The pipeline's reporter (listeners.py) for one local request: no events, nothing
    to acknowledge; the request's final event wakes `wait()`."""

    def __init__(self) -> None:
        self.outcome: Kind | None = None
        self.reason: str | None = None
        self._done = threading.Event()

    def wait(self) -> None:
        self._done.wait()

    def on_event(self, event: Event) -> None:
        # Queued and started say nothing here; deferred comes only when we stop the pipeline.
        if not event.final:
            return
        self.outcome = event.kind
        if event.kind is Kind.EXPIRED:
            self.reason = EXPIRED_REASON
        elif event.kind is Kind.INTERRUPTED:
            self.reason = f"interrupted by {event.by}"
        else:
            self.reason = event.reason
        self._done.set()


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
    request = SayRequest(
        id=_REQUEST_ID, text=text, key=_REQUEST_ID, origin=ORIGIN, document=document
    )
    job = Job(request, [], voice, options)
    reporter = OneShotReporter()
    pipeline = Pipeline(
        synthesis,
        QueueSettings(),
        output=output,
        output_rate=voice.sample_rate,
        reporter=reporter,
        # The engine counts and measures the request here; one request's figures go nowhere.
        telemetry=Telemetry(figures=FIGURES),
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
