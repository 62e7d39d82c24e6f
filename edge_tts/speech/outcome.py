"""What became of a request, as one value: the engine builds an `Event` once and every
listener (speech/listeners.py) hears that same value. What goes on the wire for it (the
payload of messages/events.py, with the figures of `started` and `finished`) is assembled
here, once, for every door that publishes or keeps it (the MQTT reporter, the HTTP
request tracker)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

from ..messages.events import FINAL_KINDS, event
from .jobs import Job

# Why a deferred request is not played now, and why an expired one was not played: the
# same words wherever they are said (events, Hermes errors, `edge-ttsd say`).
DEFERRED_REASON = "daemon stopping; plays after restart"
EXPIRED_REASON = "expired before it could be played"


class Kind(StrEnum):
    """A request's events; the final ones are `messages.events.FINAL_KINDS`."""

    QUEUED = "queued"
    STARTED = "started"
    FINISHED = "finished"
    REJECTED = "rejected"
    EXPIRED = "expired"
    INTERRUPTED = "interrupted"
    DUPLICATE = "duplicate"
    DEFERRED = "deferred"


# The detail each kind carries (the others carry none).
_DETAIL = {
    Kind.QUEUED: "position",
    Kind.REJECTED: "reason",
    Kind.DUPLICATE: "reason",
    Kind.INTERRUPTED: "by",
}


@dataclass(frozen=True, eq=False)
class Event:
    """One event of a request, built once by the engine."""

    kind: Kind
    job: Job
    position: int | None = None  # queued: its place in the queue (0: next)
    reason: str | None = None  # rejected, duplicate: why
    by: str | None = None  # interrupted: what took over (a request's id, a control)

    def __post_init__(self) -> None:
        detail = _DETAIL.get(self.kind)
        if detail is not None and getattr(self, detail) is None:
            raise ValueError(f"a {self.kind} event needs its {detail}")

    @property
    def final(self) -> bool:
        """Whether it says what became of the request (exactly one such event each)."""
        return self.kind.value in FINAL_KINDS

    @cached_property
    def payload(self) -> bytes:
        """The event as published (messages/events.py): rendered once, on first use, so
        every door that sends or keeps it has the same fields and time stamp."""
        return event(self.kind.value, self.job.request, **wire_fields(self))


def wire_fields(ev: Event) -> dict[str, object]:
    """The fields of an event beyond its kind, id and priority (None: left out)."""
    job = ev.job
    match ev.kind:
        case Kind.QUEUED:
            return {"position": ev.position, "text_chars": len(job.request.text)}
        case Kind.STARTED:
            return started_fields(job)
        case Kind.FINISHED:
            return finished_fields(job)
        case Kind.INTERRUPTED:
            return {"by": ev.by, "audio_ms": round(job.audio_seconds * 1000)}
        case Kind.DEFERRED:
            return {"reason": DEFERRED_REASON}
        case _:  # rejected and duplicate say why; expired says nothing more
            return {"reason": ev.reason}


def started_fields(job: Job) -> dict[str, object]:
    build = {"voice": job.voice.name, **job.voice.build.as_dict()}
    return {"queue_wait_ms": ms(job.started_at, job.request.received_at), "build": build}


def time_to_first_audio_ms(job: Job) -> float | None:
    """From the job's stamps (speech/timing.py), as every door's figure."""
    ttfa = job.timing.time_to_first_audio_ms
    return None if ttfa is None else round(ttfa, 1)


def real_time_factor(job: Job) -> float | None:
    return job.timing.real_time_factor


def finished_fields(job: Job) -> dict[str, object]:
    rtf = real_time_factor(job)
    return {
        "time_to_first_audio_ms": time_to_first_audio_ms(job),
        "queue_wait_ms": ms(job.started_at, job.request.received_at),
        "audio_ms": round(job.audio_seconds * 1000),
        "synthesis_ms": round(job.timing.synth_seconds * 1000),
        "real_time_factor": round(rtf, 4) if rtf is not None else None,
        "chunks": len(job.chunks or []),
        "cached_chunks": job.cached_chunks,
        "first_chunk_chars": len(job.chunks[0].plan.text) if job.chunks else None,
        "stages_ms": stages(job),
        "voices": list(dict.fromkeys(chunk.plan.voice.name for chunk in job.chunks or [])),
        "builds": {c.plan.voice.name: c.plan.voice.build.as_dict() for c in job.chunks or []},
    }


def stages(job: Job) -> dict[str, float | None]:
    """Milliseconds from the message's arrival to each step towards the first sound:
    planned (text front-end done), the first chunk's synthesis started, its first audio
    ready, that audio written to the output (time_to_first_audio_ms: its first sample
    handed to the device)."""
    first = job.chunks[0].stats if job.chunks else None
    received = job.request.received_at
    return {
        "planned": ms(job.planned_at, received),
        "synthesis_started": ms(first.started_at if first else None, received),
        "first_audio": ms(first.first_audio_at if first else None, received),
        "first_written": ms(job.first_written_at, received),
    }


def ms(end: float | None, start: float) -> float | None:
    return None if end is None else round((end - start) * 1000, 1)
