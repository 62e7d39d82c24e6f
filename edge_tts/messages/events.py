"""Events and Hermes replies, rendered as the payloads the reporter publishes."""

from __future__ import annotations

import json
import time

from .request import SayRequest


def event(kind: str, request: SayRequest | None, **fields: object) -> bytes:
    body: dict[str, object] = {"event": kind, "ts": round(time.time(), 3)}
    if request is not None:
        body["id"] = request.id
        body["priority"] = request.priority.name.lower()
    body.update({k: v for k, v in fields.items() if v is not None})
    return json.dumps(body, separators=(",", ":")).encode()


def hermes_finished(request: SayRequest) -> bytes:
    assert request.hermes is not None
    return json.dumps(
        {"id": request.id, "siteId": request.hermes.site_id, "sessionId": request.hermes.session_id}
    ).encode()


def hermes_error(site_id: str, session_id: str | None, error: str, context: str) -> bytes:
    return json.dumps(
        {"error": error, "context": context, "siteId": site_id, "sessionId": session_id}
    ).encode()
