"""Events and Hermes replies, rendered as the payloads the reporter publishes.

`EventKind` is every event on the events topic: the daemon's `status`, and those of a
request; `FinalKind` the ones that say what became of a request (exactly one each, after
its acknowledgement). Tests and benchmarks import `FINAL_KINDS` rather than write it out."""

from __future__ import annotations

import json
import time
from typing import Literal, get_args

from .request import SayRequest

FinalKind = Literal["finished", "rejected", "expired", "interrupted", "duplicate"]
EventKind = Literal["status", "queued", "started", "deferred"] | FinalKind

FINAL_KINDS: tuple[FinalKind, ...] = get_args(FinalKind)


def event(kind: EventKind, request: SayRequest | None, **fields: object) -> bytes:
    body: dict[str, object] = {"event": kind, "ts": round(time.time(), 3)}
    if request is not None:
        body["id"] = request.id
        body["priority"] = request.priority.name.lower()
    body.update({k: v for k, v in fields.items() if v is not None})
    return json.dumps(body, separators=(",", ":")).encode()


def hermes_finished(request_id: str, site_id: str, session_id: str | None) -> bytes:
    return json.dumps({"id": request_id, "siteId": site_id, "sessionId": session_id}).encode()


def hermes_error(site_id: str, session_id: str | None, error: str, context: str) -> bytes:
    return json.dumps(
        {"error": error, "context": context, "siteId": site_id, "sessionId": session_id}
    ).encode()
