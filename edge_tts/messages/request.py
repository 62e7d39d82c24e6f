"""What a request is: a `SayRequest`, the MQTT `Envelope` it arrived in, its priority, and
the key that makes two messages the same request."""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass, field
from enum import IntEnum

from ..text.document import Document, spoken_digest


class Priority(IntEnum):
    LOW = 0
    NORMAL = 1
    HIGH = 2
    CRITICAL = 3


class BadRequest(ValueError):
    """A payload we cannot accept; the message is the reason published in `rejected`,
    `param` the field at fault when there is one."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class Hermes:
    """Where a Rhasspy/Hermes request came from, to answer it in kind."""

    site_id: str
    session_id: str | None


@dataclass(frozen=True)
class SayRequest:
    id: str
    text: str
    key: str  # dedupe key: the sender's id and text, else this MQTT delivery's (see below)
    dedupe: bool = False  # True when `key` identifies this request (sender id or redelivery)
    redelivered: bool = False  # the broker's DUP flag: a copy of a message sent to us before
    priority: Priority = Priority.NORMAL
    voice: str | None = None
    language: str | None = None  # "zh", "en": its voice (`languages`), when no voice is named
    speaker: str | None = None
    speed: float | None = None
    volume: float | None = None
    expires_at: float | None = None  # time.time() seconds
    interrupt: bool = False
    cache: bool = True  # False: neither served from nor stored in the phrase cache
    received_at: float = field(default_factory=time.monotonic)
    response_topic: str | None = None
    correlation_data: bytes | None = None
    hermes: Hermes | None = None
    door: str = "mqtt"  # where it came in: its telemetry label (a door of its package's FIGURES)
    # SSML (text/ssml.py) as parsed: what is said. `text` is then the markup as it came.
    document: Document | None = None

    @property
    def speech(self) -> str | Document:
        """What the router plans: the document, else the plain text."""
        return self.text if self.document is None else self.document

    def expired(self, now: float | None = None) -> bool:
        return self.expires_at is not None and (now or time.time()) >= self.expires_at

    @property
    def takes_over(self) -> bool:
        return self.interrupt or self.priority == Priority.CRITICAL


@dataclass(frozen=True)
class Envelope:
    """What MQTT told us about a message, besides its payload."""

    topic: str
    payload: bytes
    received_at: float
    expiry_interval: int | None = None
    response_topic: str | None = None
    correlation_data: bytes | None = None
    redelivered: bool = False  # the broker's DUP flag: we may have seen it before a crash
    retained: bool = False  # replayed by the broker on every (re)subscribe
    packet_id: int = 0  # the broker's for a QoS 1 delivery, kept by its redelivery; 0: QoS 0


def dedupe_key(sender_id: str | None, speech: str | Document, env: Envelope) -> str:
    """What makes two messages the same request.

    With an id: the id *and* what is said (`spoken_digest`: an SSML text and the plain
    text it says are the same), so a sender that reuses one id ("door") for different
    announcements gets each of them played, while a repeat of the very same request is
    recognised. Without an id: this delivery. The broker resends a message we
    did not acknowledge with its packet id, so topic + payload + packet id match only that
    message's redelivery, never a later message with the same text (only a redelivery is
    deduplicated then, see `dedupe`). A QoS 0 message is never redelivered: a random key.
    """
    if sender_id is not None:
        return f"{sender_id}#{spoken_digest(speech)[:16]}"  # its UTF-8 was checked
    delivery = str(env.packet_id).encode() if env.packet_id else uuid.uuid4().bytes
    digest = hashlib.sha256(env.topic.encode() + b"\0" + delivery + b"\0" + env.payload)
    return digest.hexdigest()[:32]
