"""Reading Wyoming events within bounds, and the errors a client is answered with.

The wyoming package's own reader (`wyoming.event.async_read_event`) reads whatever
`data_length` and `payload_length` a client declares, so one header saying 4 GB makes
the daemon try to hold 4 GB; and a header without a `type` escapes it as a KeyError.
Here every part of an event is bounded before it is read, and every fault is a
`ClientError` whose text goes back to the client in an `error` event.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from wyoming.event import Event

# No TTS event carries a payload; audio sent to us by mistake (a satellite's chunk) is
# read and dropped up to this size, and a larger one is refused unread.
MAX_PAYLOAD_BYTES = 64 * 1024
# JSON outside the text (voice, context, keys): HA's synthesize is a few hundred bytes.
_DATA_OVERHEAD_BYTES = 16 * 1024
_JSON_BYTES_PER_CHAR = 6  # the worst case of one character in JSON: \uXXXX


class ClientError(Exception):
    """What a client did wrong, or why its request cannot be answered: `text` and a
    machine-readable `code` for the `error` event; the connection is closed after it."""

    def __init__(self, text: str, code: str) -> None:
        super().__init__(text)
        self.text = text
        self.code = code


class ClientGone(Exception):
    """The client closed the connection in the middle of an event."""


def data_limit(max_text_chars: int) -> int:
    """The largest event data (and header line) we read: a synthesize of the longest text
    we accept (`queue.max_text_chars`), however it is escaped."""
    return _DATA_OVERHEAD_BYTES + _JSON_BYTES_PER_CHAR * max_text_chars


@dataclass(frozen=True)
class _Header:
    type: str
    data: dict[str, Any]
    data_length: int
    payload_length: int


async def read_event(reader: asyncio.StreamReader, max_data: int) -> Event | None:
    """The next event, or None at the end of the stream. The header line is bounded by
    the reader's limit (asyncio.start_server(limit=...)), data by `max_data`."""
    line = await read_header_line(reader, max_data)
    return None if line is None else await read_rest(reader, line, max_data)


async def read_header_line(reader: asyncio.StreamReader, max_data: int) -> bytes | None:
    """The next event's header line, or None at the end of the stream. Safe to cancel
    while it waits: asyncio's readline takes nothing from the buffer until a whole line
    is there, so a timeout here loses no data."""
    try:
        line = await reader.readline()
    except ValueError:  # asyncio's LimitOverrunError, raised as ValueError by readline
        raise ClientError(f"event header longer than {max_data} bytes", "too-large") from None
    if not line:
        return None
    if not line.endswith(b"\n"):
        raise ClientGone("in the middle of an event header")
    return line


async def read_rest(reader: asyncio.StreamReader, line: bytes, max_data: int) -> Event:
    """The event whose header line is `line`: its data and payload follow it."""
    header = _parse_header(line, max_data)
    data = header.data
    if header.data_length:
        data = {**data, **_object(await _read_exactly(reader, header.data_length), "data")}
    payload = await _read_exactly(reader, header.payload_length) if header.payload_length else None
    return Event(type=header.type, data=data, payload=payload)


async def _read_exactly(reader: asyncio.StreamReader, size: int) -> bytes:
    try:
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        raise ClientGone(f"after {size} bytes were announced") from None


def _parse_header(line: bytes, max_data: int) -> _Header:
    header = _object(line, "header")
    kind = header.get("type")
    if not isinstance(kind, str) or not kind:
        raise ClientError("event header without a type", "malformed")
    data = header.get("data") or {}
    if not isinstance(data, dict):
        raise ClientError("event data must be a JSON object", "malformed")
    data_length = _length(header, "data_length", max_data)
    payload_length = _length(header, "payload_length", MAX_PAYLOAD_BYTES)
    return _Header(kind, data, data_length, payload_length)


def _object(raw: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # invalid JSON or UTF-8, absurd nesting
        raise ClientError(f"event {what} is not valid JSON", "malformed") from None
    if not isinstance(value, dict):
        raise ClientError(f"event {what} must be a JSON object", "malformed")
    return value


def _length(header: dict[str, Any], key: str, limit: int) -> int:
    value = header.get(key)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ClientError(f"{key} must be a non-negative integer, got {value!r}", "malformed")
    if value > limit:
        raise ClientError(f"{key} {value} is over the limit of {limit} bytes", "too-large")
    return value
