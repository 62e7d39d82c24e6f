"""What a request is: a `SayRequest`, the `Origin` its door keeps in it, the `Arrival` a
door tells the parser about, its priority, and the key that makes two messages the same
request."""

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
class Origin:
    """The door a request came in by, opaque to the engine, which only carries it: a door
    that must answer in its own way keeps what it needs in a subclass (mqtt/envelope.py
    `MqttOrigin`: the response topic, Hermes' site)."""

    door: str  # its telemetry label (a door of its package's FIGURES)


@dataclass(frozen=True)
class Arrival:
    """What a door knows of a request besides its payload (messages/parse.py)."""

    origin: Origin
    received_at: float  # time.monotonic()
    # What names this delivery, and only its redeliveries, for a request without a sender
    # id (`dedupe_key`); None: it cannot come again.
    delivery: bytes | None = None
    redelivered: bool = False  # a copy of a message sent to us before (MQTT's DUP flag)
    expiry_interval: float | None = None  # seconds it had left to live when it came


@dataclass(frozen=True)
class SayRequest:
    id: str
    text: str
    key: str  # dedupe key: the sender's id and text, else this delivery's (see below)
    origin: Origin
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


def dedupe_key(sender_id: str | None, speech: str | Document, delivery: bytes | None) -> str:
    """What makes two messages the same request.

    With an id: the id *and* what is said (`spoken_digest`: an SSML text and the plain
    text it says are the same), so a sender that reuses one id ("door") for different
    announcements gets each of them played, while a repeat of the very same request is
    recognised. Without an id: this delivery (`Arrival.delivery`). The broker resends a
    message we did not acknowledge with its packet id, so MQTT's topic + packet id +
    payload match only that message's redelivery, never a later message with the same
    text (only a redelivery is deduplicated then, see `dedupe`). A request that cannot
    come again (MQTT's QoS 0, HTTP): a random key.
    """
    if sender_id is not None:
        return f"{sender_id}#{spoken_digest(speech)[:16]}"  # its UTF-8 was checked
    return hashlib.sha256(delivery or uuid.uuid4().bytes).hexdigest()[:32]
