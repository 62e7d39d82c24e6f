"""One fuzz payload and what it may be answered with; the helpers every generator uses."""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from typing import Any

from edge_tts.messages.events import FINAL_KINDS

MAX_TEXT_CHARS = 2000  # queue.max_text_chars, the daemon's default (see --max-text-chars)
UNIQUE = "<unique>"  # response topic: fuzz/<run>/r/<index>
NONE = "<none>"  # no response topic at all

# Which final events a class allows ("any": every kind is acceptable).
ALLOWED: dict[str, frozenset[str]] = {
    "reject": frozenset({"rejected"}),
    "play": frozenset({"finished", "interrupted"}),
    "expire": frozenset({"expired"}),
    "duplicate": frozenset({"duplicate"}),
    "replay": frozenset({"finished", "interrupted", "duplicate"}),  # see answers.PLAYED_HISTORY
    "any": frozenset(FINAL_KINDS),
}

# Accepted texts are short: a synthesis costs the daemon about 0.1 s plus 20 ms per
# phoneme of CPU (measured under load), and the ~30 % of payloads that play are what a
# run's time goes to. One word mostly (5-8 phonemes), two in two of seven; only --heavy
# texts are long.
WORDS = (
    "Hi.",
    "Yes.",
    "Door open.",
    "Rain.",
    "Okay.",
    "Lights off.",
    "Goodbye.",
)


class Raw(str):
    """A JSON value spliced in verbatim (numbers json.dumps cannot write)."""


@dataclass
class Case:
    index: int
    klass: str
    note: str
    payload: bytes
    expect: str = "any"
    qos: int = 1
    retain: bool = False
    response_topic: str = UNIQUE
    correlation: bytes | None = None  # default: c<index> (set in make_case)
    expiry: int | None = None
    user_properties: list[tuple[str, str]] = field(default_factory=list)
    content_type: str | None = None
    payload_format: int | None = None
    sender_id: str | None = None  # the id the payload carries when it is a valid one
    dedupe_key: tuple[str, str] | None = None  # (id, text) where an id may repeat
    heavy: bool = False
    # filled in while running
    sent_at: float | None = None
    answered_at: float | None = None
    kind: str | None = None
    reason: str | None = None
    finals: list[str] = field(default_factory=list)  # kinds of every final event matched
    events_copies: int = 0  # final events on the events topic with this payload's id
    correlation_ok: bool | None = None
    audio_ms: float = 0.0
    synthesis_ms: float = 0.0
    idless: bool = False  # answered on its response topic without an id
    publish_error: str | None = None
    timed_out: bool = False

    @property
    def usable_topic(self) -> bool:
        """Its response topic is ours (fuzz/<run>/r/<index>[/...]): answers match there."""
        return self.response_topic == UNIQUE or self.response_topic.startswith(UNIQUE + "/")

    @property
    def alone(self) -> bool:
        """Sent alone, with nothing else in flight: its answer can only be matched on the
        events topic (no usable response topic)."""
        return not self.usable_topic

    @property
    def lane(self) -> str:
        """Which window it is sent in: "reject" when expected to be refused on arrival
        (never queued, never synthesized), so it goes beside the others in a wide window;
        "speak" for anything that may be queued (play, expire, duplicate, any), kept
        under the daemon's queue size."""
        return "reject" if self.expect == "reject" and not self.heavy else "speak"


def dumps(fields: dict[str, Any]) -> bytes:
    parts = []
    for key, value in fields.items():
        encoded = value if isinstance(value, Raw) else json.dumps(value, ensure_ascii=False)
        parts.append(f"{json.dumps(key)}: {encoded}")
    text = "{" + ", ".join(parts) + "}"
    return text.encode("utf-8", "surrogatepass")


def valid_fields(rng: random.Random, rid: str, text: str | None = None) -> dict[str, Any]:
    fields: dict[str, Any] = {"id": rid, "text": text or rng.choice(WORDS)}
    if rng.random() < 0.3:
        fields["priority"] = rng.choice(["low", "normal", "high", "High", "NORMAL"])
    if rng.random() < 0.2:
        fields["voice"] = "default"
    if rng.random() < 0.05:
        fields["speaker"] = None
    if rng.random() < 0.2:
        fields["speed"] = round(rng.uniform(0.7, 2.0), 3)
    if rng.random() < 0.2:
        fields["volume"] = round(rng.uniform(0.0, 2.0), 3)
    if rng.random() < 0.1:
        fields["ttl"] = round(rng.uniform(60, 3600), 1)
    elif rng.random() < 0.05:
        fields["expires_at"] = round(time.time() + 3600, 3)
    if rng.random() < 0.1:
        fields["interrupt"] = False
    keys = list(fields)
    rng.shuffle(keys)
    return {k: fields[k] for k in keys}


def short_fields(rng: random.Random, rid: str) -> dict[str, Any]:
    """Mostly just id and text, sometimes every optional field (valid_fields): the base of
    payloads that may be spoken whole as plain text (a JSON object with junk before it)."""
    if rng.random() < 0.25:
        return valid_fields(rng, rid)
    return {"id": rid, "text": rng.choice(WORDS)}
