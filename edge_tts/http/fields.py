"""A request's JSON body, read within bounds (its size, the time it may take to arrive),
and the checks of its fields: every bad value gets a 400 that names the field."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

from aiohttp import web

from ..messages.parse import document_for
from ..messages.request import BadRequest
from ..text.document import Document
from .errors import ApiError, bad_request


async def read_body(request: web.Request, timeout: float) -> bytes:
    """The whole body; 408 when it does not arrive within `timeout` (a client that sent
    half and stalls), 413 beyond the application's `client_max_size`."""
    try:
        async with asyncio.timeout(timeout):
            return await request.read()
    except TimeoutError:
        # Closed after the answer: half a body leaves nothing to read a next request from.
        message = f"the body did not arrive within {timeout:g} s"
        raise ApiError(408, "timeout", message, close=True) from None
    except web.HTTPRequestEntityTooLarge as err:
        raise ApiError(413, "too_large", err.text or "the body is too large") from None


async def read_json(request: web.Request, timeout: float) -> dict[str, Any]:
    """The body as a JSON object."""
    body = await read_body(request, timeout)
    try:
        data = json.loads(body)
    except RecursionError:
        raise bad_request("JSON is nested too deeply", code="invalid_json") from None
    except ValueError as err:  # UnicodeDecodeError is one
        raise bad_request(f"the body is not valid JSON: {err}", code="invalid_json") from None
    if not isinstance(data, dict):
        raise bad_request("the body must be a JSON object", code="invalid_json")
    return data


def text(body: dict[str, Any], name: str, max_chars: int) -> str:
    """A required, non-empty text of at most `max_chars` characters."""
    value = body.get(name)
    if not isinstance(value, str) or not value.strip():
        raise bad_request(f"'{name}' must be a non-empty string", name, "missing_text")
    if len(value) > max_chars:
        raise bad_request(
            f"'{name}' is {len(value)} characters; the limit is {max_chars}", name, "too_long"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise bad_request(f"'{name}' contains an unpaired UTF-16 surrogate", name) from None
    return value


def optional_text(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 200:
        raise bad_request(f"'{name}' must be a string of at most 200 characters", name)
    return value


def number(
    body: dict[str, Any], name: str, low: float, high: float, *, strings: bool = False
) -> float | None:
    """A number within [low, high]; with `strings`, also one written as a string ("1.5"),
    as Piper's server takes its scales."""
    value = body.get(name)
    if value is None:
        return None
    if strings and isinstance(value, str):
        value = _parsed_number(value, name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad_request(f"'{name}' must be a number", name)
    # Compared before any conversion: a 400-digit integer has no float (OverflowError).
    if (isinstance(value, float) and not math.isfinite(value)) or not low <= value <= high:
        shown = f"{value:g}" if isinstance(value, float) or abs(value) < 10**15 else "more"
        raise bad_request(f"'{name}' must be within {low:g}-{high:g}, got {shown}", name)
    return float(value)


def _parsed_number(value: str, name: str) -> float:
    try:
        return float(value[:40])
    except ValueError:
        raise bad_request(f"'{name}' must be a number", name) from None


def speaker(body: dict[str, Any], name: str) -> str | None:
    """A speaker's name or number, as text (how the voices take it)."""
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise bad_request(f"'{name}' must be a speaker's name or number", name)
    return str(value)[:200]


def unknown(body: dict[str, Any], known: set[str]) -> None:
    extra = sorted(set(body) - known)
    if extra:
        raise bad_request(f"unknown field(s) {', '.join(extra)}", extra[0], "unknown_field")


def speech(body: dict[str, Any], name: str, max_chars: int) -> str | Document:
    """The text field `name`, as plain text or, with `"text_format": "ssml"` or when it
    starts with <speak, as SSML parsed (docs/text.md); 400 naming the field for bad
    markup, with where it is wrong."""
    given = text(body, name, max_chars)
    text_format = optional_text(body, "text_format")
    try:
        document = document_for(given, text_format, max_chars)
    except BadRequest as err:
        param = "text_format" if err.param == "text_format" else name
        raise bad_request(str(err), param, "invalid_ssml") from None
    return given if document is None else document
