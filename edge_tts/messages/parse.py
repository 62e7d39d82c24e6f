"""Payloads into requests: plain UTF-8 text, a JSON string or object, the fields MQTT's
say topic and HTTP's /say share (the MQTT door's own, envelope and Hermes, are in
mqtt/envelope.py). Every payload we cannot accept raises `BadRequest` with a reason a
user can act on; a few tolerant readers find what a broken payload still tells (its id,
its Hermes site)."""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

from ..text import ssml
from ..text.document import Document
from ..text.ssml import TEXT_FORMATS, looks_like_ssml
from .request import Arrival, BadRequest, Priority, SayRequest, dedupe_key

MAX_JSON_DEPTH = 8


def parse_payload(
    payload: bytes, arrival: Arrival, max_text_chars: int, default_ttl: float | None = None
) -> SayRequest:
    """A say request as MQTT's say topic and HTTP's /say take it: plain UTF-8 text (SSML
    when it starts with <speak), or JSON {text, text_format, id, priority, voice,
    language, speaker, speed, volume, ttl | expires_at, interrupt, cache}; `arrival`: what
    the door knows of it. Raises BadRequest with a reason a user can act on."""
    return request_from_fields(_say_fields(decode(payload)), arrival, max_text_chars, default_ttl)


def _say_fields(text: str) -> dict[str, Any]:
    """The fields of a say payload: a JSON object's, else the text itself."""
    start = text.lstrip()[:1]
    if start in ("{", "["):  # JSON it is, and only an object carries a request
        return json_object(text)
    if start == '"':  # a JSON string, as some home-automation tools send text
        try:
            value = json.loads(text)
        except ValueError:
            return {"text": text}
        return {"text": value} if isinstance(value, str) else {"text": text}
    return {"text": text}


def hermes_site(payload: bytes) -> str | None:
    """The siteId a Hermes message is addressed to, or None when unreadable."""
    try:
        value = json.loads(payload).get("siteId", "default")
    except (ValueError, AttributeError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def payload_id(payload: bytes) -> str | None:
    """The sender's id in a payload we could not accept, when one can be read, so that
    even a `rejected` event for a broken request names the request it answers."""
    try:
        value = json.loads(payload).get("id")
    except (ValueError, AttributeError, RecursionError):
        return None
    if isinstance(value, str) and len(value) <= 200:
        with contextlib.suppress(UnicodeEncodeError):
            value.encode("utf-8")
            return value
    return None


def decode(payload: bytes) -> str:
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadRequest(f"payload is not valid UTF-8 (byte {err.start})") from err


def json_object(text: str) -> dict[str, Any]:
    """A JSON object, not nested too deeply; BadRequest for anything else."""
    try:
        data = json.loads(text)
    except RecursionError as err:
        raise BadRequest("JSON is nested too deeply") from err
    except ValueError as err:
        raise BadRequest(f"malformed JSON: {err}") from err
    if not isinstance(data, dict):
        raise BadRequest("JSON payload must be an object with a 'text' field")
    if _depth(data) > MAX_JSON_DEPTH:
        raise BadRequest("JSON is nested too deeply")
    return data


def _depth(value: object, level: int = 1) -> int:
    if level > MAX_JSON_DEPTH:
        return level
    children: list[object] = []
    if isinstance(value, dict):
        children = list(value.values())
    elif isinstance(value, list):
        children = value
    return max((_depth(c, level + 1) for c in children), default=level)


_KNOWN = {
    "text",
    "text_format",
    "id",
    "priority",
    "voice",
    "language",
    "speaker",
    "speed",
    "volume",
    "ttl",
    "expires_at",
    "interrupt",
    "cache",
}


def request_from_fields(
    f: dict[str, Any], arrival: Arrival, max_text_chars: int, default_ttl: float | None
) -> SayRequest:
    """The request a payload's fields make (`_KNOWN`), checked one by one."""
    unknown = sorted(set(f) - _KNOWN)
    if unknown:
        raise BadRequest(f"unknown field(s) {', '.join(unknown)}", unknown[0])
    text = f.get("text")
    if not isinstance(text, str) or not text.strip():
        raise BadRequest("'text' must be a non-empty string", "text")
    if len(text) > max_text_chars:
        raise BadRequest(f"text is {len(text)} characters; the limit is {max_text_chars}", "text")
    _check_encodable("text", text)
    document = document_for(text, _opt(f, "text_format", str), max_text_chars)
    sender_id = _opt(f, "id", str)
    key = dedupe_key(sender_id, text if document is None else document, arrival.delivery)
    return SayRequest(
        id=sender_id or key[:16],
        text=text,
        key=key,
        # Without a sender id the same text twice is two requests, unless the broker marks
        # this copy as a redelivery of one we may already have played.
        dedupe=sender_id is not None or arrival.redelivered,
        redelivered=arrival.redelivered,
        priority=_priority(f.get("priority", "normal")),
        voice=_opt(f, "voice", str),
        language=_opt(f, "language", str),
        speaker=_speaker(f.get("speaker")),
        speed=_number(f, "speed", 0.1, 10.0),
        volume=_number(f, "volume", 0.0, 2.0),
        expires_at=_expiry(f, arrival, default_ttl),
        interrupt=bool(_opt(f, "interrupt", bool) or False),
        cache=_opt(f, "cache", bool) is not False,
        received_at=arrival.received_at,
        origin=arrival.origin,
        document=document,
    )


def document_for(text: str, text_format: str | None, max_chars: int) -> Document | None:
    """The SSML document `text` is, or None for plain text: "ssml" says it is one, "text"
    that it is not; without a format, a text starting with <speak is SSML."""
    if text_format not in (None, *TEXT_FORMATS):
        raise BadRequest(f"'text_format' must be one of {', '.join(TEXT_FORMATS)}", "text_format")
    if text_format == "text" or (text_format is None and not looks_like_ssml(text)):
        return None
    try:
        return ssml.parse(text, max_chars=max_chars)
    except ssml.SsmlError as err:
        raise BadRequest(str(err), "text") from None


def _opt(f: dict[str, Any], name: str, kind: type) -> Any:
    value = f.get(name)
    if value is not None and (
        not isinstance(value, kind) or isinstance(value, bool) != (kind is bool)
    ):
        raise BadRequest(f"'{name}' must be a {kind.__name__}", name)
    if isinstance(value, str):
        if len(value) > 200:
            raise BadRequest(f"'{name}' is too long", name)
        _check_encodable(name, value)
    return value


def _check_encodable(name: str, value: str) -> None:
    # JSON's "\ud800" escapes decode to lone surrogates, which no encoder downstream takes.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise BadRequest(
            f"'{name}' contains an unpaired UTF-16 surrogate (\\u escape)", name
        ) from err


def _speaker(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise BadRequest("'speaker' must be a name or a number", "speaker")
    if isinstance(value, str):
        _opt({"speaker": value}, "speaker", str)  # the same length and encoding checks
    return str(value)


def _priority(value: object) -> Priority:
    if not isinstance(value, str) or value.upper() not in Priority.__members__:
        raise BadRequest("'priority' must be one of low, normal, high, critical", "priority")
    return Priority[value.upper()]


def _number(f: dict[str, Any], name: str, low: float, high: float) -> float | None:
    value = f.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest(f"'{name}' must be a number", name)
    if not low <= value <= high:
        raise BadRequest(f"'{name}' must be within {low}-{high}", name)
    return float(value)


def _expiry(f: dict[str, Any], arrival: Arrival, default_ttl: float | None) -> float | None:
    ttl = _number(f, "ttl", 0.0, 7 * 86400)
    expires_at = _number(f, "expires_at", 0.0, 1e11)
    if ttl is not None and expires_at is not None:
        raise BadRequest("give 'ttl' or 'expires_at', not both", "ttl")
    # Time already spent on the way (queued at an MQTT 5 broker) counts against the expiry.
    candidates = [
        expires_at,
        time.time() + ttl if ttl is not None else None,
        time.time() + arrival.expiry_interval if arrival.expiry_interval is not None else None,
        time.time() + default_ttl if default_ttl and ttl is None and expires_at is None else None,
    ]
    present = [c for c in candidates if c is not None]
    return min(present) if present else None
