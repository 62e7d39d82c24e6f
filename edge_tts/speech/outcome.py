"""What an event says about a request, beyond its kind: the figures of a `started` and a
`finished` event, computed once for every door that reports them (the MQTT reporter, the
HTTP request tracker)."""

from __future__ import annotations

from .jobs import Job


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
