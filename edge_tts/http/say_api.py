"""`POST /say`: play on this device's speaker through the same queue as an MQTT request
(the same JSON: priority, interrupt, ttl, id and dedupe), answered once the request is
queued; `GET /requests/{id}` (`?wait=true`) gives what became of it (tracker.py)."""

from __future__ import annotations

import re
import time
import urllib.parse

from aiohttp import web

from ..messages.parse import parse_payload
from ..messages.request import Arrival, BadRequest, Origin
from ..speech.jobs import job_for
from ..voice.registry import UnknownVoiceError
from . import fields
from .errors import ApiError, bad_request
from .shared import DOOR

# The origin of a /say request: its label alone, as the HTTP answer and the tracker are
# all it is answered with.
ORIGIN = Origin(door="http_say")
MAX_WAIT_S = 300.0
DEFAULT_WAIT_S = 60.0
# The first event of a request submitted over HTTP: its answer's status.
_STATUS = {"queued": 202, "duplicate": 200}
# What a /say id may be made of: it goes into a URL path, a header and the log as it is.
ID_ALPHABET = re.compile(r"[A-Za-z0-9._~:@+=-]{1,200}")


async def say(request: web.Request) -> web.Response:
    door = request.app[DOOR]
    payload = await fields.read_body(request, door.settings.read_timeout)
    # No delivery to name: an HTTP request is never delivered again, a retry is a new one.
    arrival = Arrival(ORIGIN, received_at=time.monotonic())
    try:
        say_request = parse_payload(
            payload, arrival, door.queue.max_text_chars, door.queue.default_ttl
        )
        _check_id(say_request.id)
        # Nothing to acknowledge: the HTTP answer is the client's receipt.
        job = job_for(say_request, door.voices, [])
    except BadRequest as err:
        raise bad_request(str(err), err.param) from None
    except UnknownVoiceError as err:
        raise bad_request(str(err), "voice") from None
    door.submit(job)
    found = door.tracker.get(say_request.id)
    if found is None:  # cannot be: every submit reports at once
        raise ApiError(500, "not_tracked", "the request was submitted but left no event")
    event, _ = found
    status = _STATUS.get(str(event["event"]))
    if status is None:  # rejected (the queue is full) or deferred (the daemon stops)
        reason = str(event.get("reason", event["event"]))
        code = "stopping" if event["event"] == "deferred" else "queue_full"
        raise ApiError(503, code, reason, headers={"Retry-After": "1"})
    location = "/requests/" + urllib.parse.quote(say_request.id, safe="")
    return web.json_response(event, status=status, headers={"Location": location})


def _check_id(request_id: str) -> None:
    if not ID_ALPHABET.fullmatch(request_id):
        raise BadRequest(
            f"'id' {request_id[:40]!r} may have only letters, digits and . _ ~ : @ + = - "
            "(at most 200)",
            "id",
        )


async def request_state(request: web.Request) -> web.Response:
    """The latest event of a request (`final` says whether it is its last); with
    `?wait=true` once the final one has come, or after `timeout` seconds (default 60)."""
    door = request.app[DOOR]
    request_id = request.match_info["request_id"]
    if request.query.get("wait", "").lower() in ("1", "true", "yes"):
        timeout = _timeout(request.query.get("timeout"))
        found = await door.tracker.wait_final(request_id, timeout)
    else:
        found = door.tracker.get(request_id)
    if found is None:
        raise ApiError(
            404,
            "unknown_request",
            f"no request {request_id[:100]!r} is known (or it is older than the history)",
        )
    event, final = found
    return web.json_response({**event, "final": final})


def _timeout(given: str | None) -> float:
    if given is None:
        return DEFAULT_WAIT_S
    try:
        value = float(given)
    except ValueError:
        value = -1.0
    if not 0 <= value <= MAX_WAIT_S:
        raise bad_request(f"timeout must be 0-{MAX_WAIT_S:g} seconds", "timeout")
    return value
