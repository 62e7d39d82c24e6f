"""Fuzz: N seeded random payloads on the say topic of ONE daemon; each must get exactly
one final event, and the daemon must stay the same process, serving, with bounded RSS.

    python bench/fuzz.py                                    # 10,000 payloads, seed 1
    python bench/fuzz.py --requests 300 --seed 7 --out fuzz.json
    python bench/fuzz.py --seed 7 --requests 300 --cases 17,42   # replay some payloads

The rig is bench/soak.py's (bench/daemon_rig.py): a real Mosquitto, the daemon as
`python -m edge_tts run` with the default voice on the wav-dir sink (WAVs deleted every
100 payloads), `--set KEY=VALUE` passed to `edge-ttsd run --set`.

Payload classes (weights in CLASSES): valid requests (all optional fields, valid values),
plain text and JSON strings, texts that expire (ttl 0, expires_at in the past), emoji /
RTL / CJK / combining marks, NUL and control characters (raw and \\u-escaped, lone
surrogates), random bytes, random printable text, invalid UTF-8, truncated and mutated
JSON, deep nesting (up to 100,000 levels), JSON that is not an object, a wrong type or
out-of-range value for each field (text, id, priority, voice, speaker, speed, volume, ttl,
expires_at, interrupt), unknown fields, unknown voices, huge strings (over
queue.max_text_chars, in text, id, voice, unknown fields, plain text), runs without
spaces ("12:12:...", "1-1-...", digits, letters, punctuation), empty payloads, MQTT 5
properties (response topics with '#', '+', empty or 60 KB long, no response topic,
correlation data up to 64 KB, message expiry 0 / 1 / 2^32-1, user properties, content
type, payload format indicator), retained messages and their clearing (an empty retained
message), the same id and text again (a `duplicate`). QoS 0, 1 or 2 at random. The few
costly payloads ("12:"*200+"00", "1-"*999+"1" and two more texts of max_text_chars, each
~2 min of audio) are --heavy (default 4), spread over the run and sent alone.

Correlation: every payload goes out with its own MQTT 5 response topic
fuzz/<run>/r/<index> and correlation data c<index>; the daemon publishes the final event
there too (also a `rejected` for a payload it cannot parse, which carries no id on the
events topic), so each answer is matched to its payload, and the correlation data is
checked. Payloads whose response topic cannot serve (none, or an invalid one: the point
of the test) are sent alone, after everything in flight was answered, and the final
event(s) on the events topic until it is answered are its own (those with another
payload's id excepted); the id-less final events on the events topic must number the
id-less answers on response topics plus those matched alone (a surplus is a doubled
answer). At most --window (8) payloads are in flight. A payload's answer
is awaited for --answer-timeout s (heavy ones 600 s); one without is listed as missing.
When nothing at all is answered for --stall s (default 240) the daemon is stuck: the run
stops and reports what waited, with the daemon's last telemetry (queue depth, syntheses
in flight).
At the end an empty retained message clears the say topic, a last valid request must
play (`finished`), and any answer that arrived for a payload already answered is counted
as a doubled final event.

Checked and reported: final events per class and per kind; payloads with no final event,
with more than one, or with a kind the class does not allow (e.g. an invalid payload
that played) -- each with its index, class, a description, the payload (base64 in the
JSON) and the command that replays it; correlation data echoed; the fuzz client's
disconnections by the broker; the daemon's PID unchanged, its exit code on SIGTERM,
WATCHDOG=1 pings still coming at the end (its health tick stops them when a thread
died), its log's errors and tracebacks, its RSS (sampled every 100 payloads: first, max,
last) and its counters (telemetry).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import re
import secrets
import shutil
import string
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import paho.mqtt.client as mqtt  # noqa: E402
from daemon_rig import (  # noqa: E402
    FINAL,
    Rig,
    fmt,
    log,
    machine_info,
    stats,
    stop_on_signals,
    voice_check,
)
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion  # noqa: E402
from paho.mqtt.packettypes import PacketTypes  # noqa: E402
from paho.mqtt.properties import Properties  # noqa: E402
from paho.mqtt.reasoncodes import ReasonCode  # noqa: E402
from report_io import emit  # noqa: E402

MAX_TEXT_CHARS = 2000  # queue.max_text_chars, the daemon's default (see --max-text-chars)
TARGET = 10_000
UNIQUE = "<unique>"  # response topic: fuzz/<run>/r/<index>
NONE = "<none>"  # no response topic at all

# Which final events a class allows ("any": every kind is acceptable).
ALLOWED: dict[str, frozenset[str]] = {
    "reject": frozenset({"rejected"}),
    "play": frozenset({"finished", "interrupted"}),
    "expire": frozenset({"expired"}),
    "duplicate": frozenset({"duplicate"}),
    "any": frozenset(FINAL),
}

WORDS = (
    "Hi.",
    "Yes.",
    "Door open.",
    "Timer done.",
    "Lights off.",
    "Hello there.",
    "Rain.",
    "Okay.",
    "Battery low.",
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
        """Sent alone, once everything in flight was answered: its answer can only be
        matched on the events topic, or it is costly (heavy)."""
        return not self.usable_topic or self.heavy


# --- payload generators ---------------------------------------------------------------


def dumps(fields: dict[str, Any], rng: random.Random) -> bytes:
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


def g_valid(rng: random.Random, rid: str) -> Case:
    fields = valid_fields(rng, rid)
    roll = rng.random()
    if roll < 0.03:
        fields["priority"] = "critical"
    elif roll < 0.05:
        fields["interrupt"] = True
    note = "valid: " + ", ".join(sorted(k for k in fields if k not in ("id", "text")))
    return Case(0, "valid", note, dumps(fields, rng), "play", sender_id=rid)


def g_valid_plain(rng: random.Random, rid: str) -> Case:
    text = rng.choice(WORDS)
    roll = rng.random()
    if roll < 0.6:
        return Case(0, "valid_plain", "plain UTF-8 text", text.encode(), "play")
    if roll < 0.8:
        return Case(0, "valid_plain", "a JSON string", json.dumps(text).encode(), "play")
    return Case(0, "valid_plain", "text with surrounding whitespace", f"\n  {text}\t\n".encode())


def g_expiring(rng: random.Random, rid: str) -> Case:
    fields = valid_fields(rng, rid)
    fields.pop("ttl", None)
    fields.pop("expires_at", None)
    choice = rng.choice(["ttl0", "past", "epoch"])
    if choice == "ttl0":
        fields["ttl"] = 0
    elif choice == "past":
        fields["expires_at"] = round(time.time() - 60, 3)
    else:
        fields["expires_at"] = 1.0
    return Case(
        0, "expiring", f"already expired: {choice}", dumps(fields, rng), "expire", sender_id=rid
    )


UNICODE_PIECES = (
    "🔥",
    "🚪🔓",
    "👍🏽",
    "👨\u200d👩\u200d👧",
    "🏳️\u200d🌈",
    "مرحبا بالعالم",
    "שלום עולם",
    "\u202eevil\u202c",
    "\u200fالباب مفتوح",
    "你好世界",
    "こんにちは",
    "안녕하세요",
    "e\u0301e\u0301",
    "Z̴̛͉a̸l̶g̷o̴",
    "ＡＢＣ１２３",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "Ωμέγα",
    "Привет",
    "ß ﬁ ﬀ",
    "½ ¾ ⅞",
    "٣٤٥",
    "\u0300\u0301\u0302",
    "\ufe0f",
)


def g_unicode(rng: random.Random, rid: str) -> Case:
    pieces = [rng.choice(UNICODE_PIECES) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.5:
        pieces.insert(rng.randint(0, len(pieces)), rng.choice(WORDS))
    text = " ".join(pieces)
    if rng.random() < 0.3:
        return Case(0, "unicode", f"plain {text!r}", text.encode())
    fields = {"id": rid, "text": text}
    ascii_only = rng.random() < 0.5
    payload = json.dumps(fields, ensure_ascii=ascii_only).encode()
    return Case(0, "unicode", f"JSON {text!r}", payload, sender_id=rid)


CONTROLS = (
    "\x00",
    "\x01",
    "\x07",
    "\x08",
    "\x1b[31m",
    "\r\n",
    "\t",
    "\x0b\x0c",
    "\x7f",
    "\x85",
    "\u2028",
    "\u2029",
    "\ufeff",
    "\u200b",
    "\ufffe",
    "\uffff",
    "\U0010ffff",
    "\U000e0001",
)


def g_control(rng: random.Random, rid: str) -> Case:
    roll = rng.random()
    if roll < 0.15:  # a lone surrogate, only expressible as a JSON \u escape
        where = rng.choice(["text", "id"])
        escape = rng.choice(["\\ud800", "\\udfff", "\\udc00x"])
        fields = {"id": rid, "text": "Hi."}
        payload = json.dumps(fields).replace(
            f'"{fields[where]}"', f'"{fields[where][:2]}{escape}"', 1
        )
        return Case(0, "control", f"lone surrogate {escape} in {where}", payload.encode(), "reject")
    pieces = [rng.choice(CONTROLS) for _ in range(rng.randint(1, 4))]
    only = rng.random() < 0.3
    text = "".join(pieces) if only else rng.choice(WORDS) + "".join(pieces) + rng.choice(WORDS)
    note = ("only " if only else "") + "controls " + repr("".join(pieces))
    if roll < 0.5:
        return Case(0, "control", "plain, " + note, text.encode("utf-8", "surrogatepass"))
    payload = json.dumps({"id": rid, "text": text}, ensure_ascii=rng.random() < 0.5)
    return Case(0, "control", "JSON, " + note, payload.encode(), sender_id=rid)


def g_random_bytes(rng: random.Random, rid: str) -> Case:
    size = rng.choice([0, rng.randint(1, 8), rng.randint(9, 64), rng.randint(65, 512)])
    if rng.random() < 0.05:
        size = rng.randint(4096, 65536)
    data = rng.randbytes(size)
    return Case(0, "random_bytes", f"{size} random bytes", data, "reject" if not size else "any")


def g_random_text(rng: random.Random, rid: str) -> Case:
    alphabet = string.ascii_letters + string.digits + string.punctuation + "      "
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
    return Case(0, "random_text", f"printable {text!r}", text.encode())


BAD_UTF8 = (b"\xff", b"\xfe", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"\x80", b"\xf8\x88\x80")


def g_invalid_utf8(rng: random.Random, rid: str) -> Case:
    bad = rng.choice(BAD_UTF8)
    if rng.random() < 0.3:
        text = rng.choice(WORDS).encode()
        at = rng.randint(0, len(text))
        return Case(
            0, "invalid_utf8", f"plain text with {bad!r}", text[:at] + bad + text[at:], "reject"
        )
    payload = json.dumps({"id": rid, "text": rng.choice(WORDS)}).encode()
    at = rng.randint(1, len(payload) - 1)
    return Case(
        0,
        "invalid_utf8",
        f"JSON with {bad!r} at byte {at}",
        payload[:at] + bad + payload[at:],
        "reject",
    )


def g_malformed(rng: random.Random, rid: str) -> Case:
    good = json.dumps(valid_fields(rng, rid))
    roll = rng.random()
    if roll < 0.4:
        cut = rng.randint(1, len(good) - 1)
        return Case(
            0, "malformed_json", f"truncated at {cut}/{len(good)}", good[:cut].encode(), "reject"
        )
    mutations: list[tuple[str, Callable[[str], str], str]] = [
        ("single quotes", lambda s: s.replace('"', "'"), "reject"),
        ("trailing comma", lambda s: s[:-1] + ",}", "reject"),
        ("comment", lambda s: s[:-1] + " // note\n}", "reject"),
        ("unquoted keys", lambda s: re.sub(r'"(\w+)":', r"\1:", s), "reject"),
        (
            "raw newline in a string",
            lambda s: s.replace('"text": "', '"text": "a\nb ', 1),
            "reject",
        ),
        ("two objects", lambda s: s + s, "reject"),
        ("garbage after", lambda s: s + "xyz", "reject"),
        ("missing colon", lambda s: s.replace(":", "", 1), "reject"),
        ("unbalanced", lambda s: s + "}", "reject"),
        ("NaN id", lambda s: s.replace(f'"{rid}"', "NaN", 1), "reject"),
        ("duplicate text key", lambda s: s[:-1] + ', "text": "Okay."}', "any"),
        ("byte-order mark", lambda s: "\ufeff" + s, "any"),
        ("leading junk", lambda s: "x" + s, "any"),
        ("whitespace around", lambda s: "\n\t " + s + " \r\n", "play"),
    ]
    if roll < 0.6:
        pos = rng.randint(0, len(good) - 1)
        mutated = good[:pos] + good[pos + 1 :]
        return Case(0, "malformed_json", f"char {pos} deleted", mutated.encode(), "any")
    if roll < 0.7:
        pos = rng.randint(0, len(good))
        char = rng.choice('{}[]":,\\')
        mutated = good[:pos] + char + good[pos:]
        return Case(0, "malformed_json", f"{char!r} inserted at {pos}", mutated.encode(), "any")
    name, mutate, expect = rng.choice(mutations)
    sid = rid if expect == "play" else None
    return Case(0, "malformed_json", name, mutate(good).encode(), expect, sender_id=sid)


def g_deep(rng: random.Random, rid: str) -> Case:
    depth = rng.choice([*range(2, 13), 50, 500, 5000, 100_000])
    shape = rng.choice(["array", "object", "in_text", "in_unknown_field", "unclosed"])
    if shape == "array":
        body = "[" * depth + "]" * depth
    elif shape == "object":
        body = '{"a": ' * depth + "1" + "}" * depth
    elif shape == "in_text":
        body = f'{{"id": "{rid}", "text": ' + "[" * depth + "]" * depth + "}"
    elif shape == "in_unknown_field":
        body = f'{{"id": "{rid}", "text": "Hi.", "x": ' + "[" * depth + "]" * depth + "}"
    else:
        body = "[" * depth
    return Case(0, "deep_nesting", f"{shape}, depth {depth}", body.encode(), "reject")


NON_OBJECT = (
    (b"[]", "reject"),
    (b"[1, 2]", "reject"),
    (b'["Hi."]', "reject"),
    (b"{}", "reject"),
    (b'""', "reject"),
    (b'" "', "reject"),
    (b'"\\u0000"', "any"),
    (b"123", "any"),
    (b"-1", "any"),
    (b"1e999", "any"),
    (b"0", "any"),
    (b"null", "any"),
    (b"true", "any"),
    (b"false", "any"),
)


def g_non_object(rng: random.Random, rid: str) -> Case:
    payload, expect = rng.choice(NON_OBJECT)
    return Case(0, "non_object_json", payload.decode(), payload, expect)


NAN, INF = Raw("NaN"), Raw("Infinity")
WRONG: dict[str, list[tuple[Any, str]]] = {
    "text": [(1, "reject"), (1.5, "reject"), (True, "reject"), (None, "reject"), ([], "reject"),
             ({}, "reject"), (["Hi."], "reject"), ("", "reject"), ("   ", "reject"),
             ("\n\t", "reject")],
    "id": [(1, "reject"), (1.5, "reject"), (True, "reject"), ([], "reject"), ({}, "reject"),
           ("x" * 201, "reject"), ("", "any"), (None, "play"), ("a/b/../c", "play"),
           (".", "play"), ("\u0000", "any"), (" ", "any"), ("x" * 200, "play")],
    "priority": [(1, "reject"), (True, "reject"), (None, "any"), ("urgent", "reject"),
                 ("", "reject"), (["high"], "reject"), ({}, "reject"), ("CRITICAL", "play")],
    "voice": [(1, "reject"), (True, "reject"), ([], "reject"), ({}, "reject"), ("", "any"),
              (None, "play")],
    "speaker": [(True, "reject"), (1.5, "reject"), ([], "reject"), ({}, "reject"), ("x", "any"),
                (0, "any"), (7, "any"), (-1, "any")],
    "speed": [("1", "reject"), (True, "reject"), ([], "reject"), ({}, "reject"), (0, "reject"),
              (-1, "reject"), (11, "reject"), (1e6, "reject"), (NAN, "reject"),
              (INF, "reject"), (Raw("-Infinity"), "reject"), (Raw("9" * 5000), "reject"),
              (0.5, "play"), (10, "play")],
    "volume": [("1", "reject"), (True, "reject"), ([], "reject"), (-0.1, "reject"),
               (2.1, "reject"), (NAN, "reject"), (INF, "reject"), (0, "play"), (2, "play")],
    "ttl": [("10", "reject"), (True, "reject"), ([], "reject"), (-1, "reject"),
            (1e12, "reject"), (NAN, "reject"), (0, "expire")],
    "expires_at": [("2030-01-01", "reject"), (True, "reject"), (-5, "reject"), (1e12, "reject"),
                   (NAN, "reject"), (1.0, "expire")],
    "interrupt": [(1, "reject"), (0, "reject"), ("yes", "reject"), ("true", "reject"),
                  ([], "reject"), (None, "play")],
}  # fmt: skip


def g_wrong_type(rng: random.Random, rid: str) -> Case:
    name = rng.choice(sorted(WRONG))
    value, expect = rng.choice(WRONG[name])
    fields: dict[str, Any] = {"id": rid, "text": rng.choice(WORDS)}
    fields[name] = value
    if rng.random() < 0.1 and name not in ("ttl", "expires_at"):
        fields.update(ttl=30, expires_at=round(time.time() + 60, 3))  # both: refused
        expect = "reject"
    shown = (
        value if not isinstance(value, str) or len(value) < 30 else f"{value[:20]}...x{len(value)}"
    )
    sid = rid if name != "id" and expect != "reject" else None
    key = None
    if name == "id" and isinstance(value, str) and expect == "play":
        # A fixed id ("."): the same id with the same text again is a duplicate.
        sid, key = value, (value, fields["text"])
    return Case(
        0, "wrong_type", f"{name}={shown!r}", dumps(fields, rng), expect, sender_id=sid,
        dedupe_key=key,
    )  # fmt: skip


UNKNOWN_KEYS = ("lang", "Text", "", " text", "text ", "TEXT", "k" * 1000, "\u0000", "siteId",
                "sessionId", "ID", "voice_id", "__proto__")  # fmt: skip


def g_unknown_field(rng: random.Random, rid: str) -> Case:
    fields: dict[str, Any] = valid_fields(rng, rid)
    if rng.random() < 0.1:
        for k in range(rng.choice([10, 100, 1000])):
            fields[f"extra{k}"] = k
        note = f"{len(fields) - 2} extra fields"
    else:
        key = rng.choice(UNKNOWN_KEYS)
        fields[key] = rng.choice([1, "en", None, [], {"a": 1}])
        note = f"unknown field {key[:20]!r}"
    return Case(0, "unknown_field", note, dumps(fields, rng), "reject")


UNKNOWN_VOICES = ("nonexistent", "en_US-joe-medium", "en_US-joe-medium-fp32",
                  "../../../etc/passwd", "/dev/zero", "default ", "Default", "DEFAULT",
                  "x" * 200, "x" * 201, "\u202edefault", "default\u0000")  # fmt: skip


def g_unknown_voice(rng: random.Random, rid: str) -> Case:
    voice = rng.choice(UNKNOWN_VOICES)
    fields = {"id": rid, "text": rng.choice(WORDS), "voice": voice}
    return Case(0, "unknown_voice", f"voice {voice[:30]!r}", dumps(fields, rng), "reject")


def g_huge(rng: random.Random, rid: str, limit: int) -> Case:
    size = rng.choice([limit + 1, 2 * limit, 100_000, 1_000_000])
    where = rng.choice(["text", "text", "plain", "id", "voice", "speaker", "unknown", "at_limit"])
    fields: dict[str, Any] = {"id": rid, "text": "Hi."}
    if where == "plain":
        return Case(0, "huge", f"plain text of {size} chars", b"a " * (size // 2) + b"a", "reject")
    if where == "at_limit":  # exactly the limit, but only one word to say: cheap
        fields["text"] = " " * (limit - 3) + "Hi."
        return Case(
            0,
            "huge",
            f"text of exactly {limit} chars, mostly spaces",
            dumps(fields, rng),
            "any",
            sender_id=rid,
        )
    if where == "unknown":
        fields["blob"] = "x" * size
    elif where == "text":
        fields["text"] = ("Hello world. " * (size // 13 + 1))[:size]
    else:
        fields[where] = "x" * size
    return Case(0, "huge", f"{where} of {size} chars", dumps(fields, rng), "reject")


def g_long_run(rng: random.Random, rid: str) -> Case:
    k = rng.randint(2, 12)
    runs = [
        ("12:" * k + "00", "12:*"),
        ("1-" * k + "1", "1-*"),
        ("9" * min(k * 2, 40), "9*"),
        ("a" * (k * 3), "a*"),
        ("-" * (k * 4), "-*"),
        ("." * (k * 4), ".*"),
        ("!" * (k * 4), "!*"),
        ("1." * k + "1", "1.*"),
        ("1/" * k + "1", "1/*"),
        ("http://example.com/" + "ab" * k, "url"),
        ("$" * k + "1", "$*"),
        ("1e" * k + "1", "1e*"),
        ("+" * k + "1", "+*"),
        ("%" * k, "%*"),
        ("0x" + "f" * k, "0x"),
    ]
    text, name = rng.choice(runs)
    fields = {"id": rid, "text": text}
    return Case(0, "long_run", f"{name} x{k}: {text[:30]!r}", dumps(fields, rng), sender_id=rid)


EMPTY = (b"", b" ", b"\n", b"\t \r\n", b'{"text": ""}', b'{"text": " "}', b'""', b"\x00")


def g_empty(rng: random.Random, rid: str) -> Case:
    payload = rng.choice(EMPTY)
    expect = "any" if payload == b"\x00" else "reject"
    return Case(0, "empty", repr(payload), payload, expect)


BAD_TOPICS = ("#", "+", "a/#", "a/+/b", "", "fuzz/#", "+/+", "#/a")


def g_props(rng: random.Random, rid: str, run_id: str) -> Case:
    valid = rng.random() < 0.5
    if valid:
        payload, expect, sid = dumps(valid_fields(rng, rid), rng), "play", rid
    else:
        payload, expect, sid = b'{"text": 1}', "reject", None
    case = Case(0, "mqtt5_props", "", payload, expect, sender_id=sid)
    what = rng.choice(["bad_topic", "no_topic", "long_topic", "unicode_topic", "correlation",
                       "expiry", "user_props", "content_type", "format_indicator"])  # fmt: skip
    if what == "bad_topic":
        case.response_topic = rng.choice(BAD_TOPICS)
        case.expect = "reject"
        case.sender_id = None
        case.note = f"response topic {case.response_topic!r}"
    elif what == "no_topic":
        case.response_topic = NONE
        case.correlation = b"" if rng.random() < 0.5 else None
        case.note = "no response topic" + (" (correlation data)" if case.correlation else "")
    elif what == "long_topic":
        size = rng.choice([100, 1000, 60_000])
        case.response_topic = f"{UNIQUE}/" + "x" * size
        case.note = f"response topic + {size} chars"
    elif what == "unicode_topic":
        case.response_topic = f"{UNIQUE}/ünï/🔥/ /שלום"
        case.note = "unicode response topic"
    elif what == "correlation":
        size = rng.choice([0, 1, 16, 1024, 65535])
        case.correlation = rng.randbytes(size)
        case.note = f"{size} bytes of correlation data"
    elif what == "expiry":
        case.expiry = rng.choice([0, 1, 3600, 2**32 - 1])
        case.expect = "any" if case.expiry <= 1 else case.expect
        case.note = f"message expiry {case.expiry}"
    elif what == "user_props":
        count = rng.choice([1, 10, 50])
        case.user_properties = [(f"k{n}", "v" * rng.randint(0, 100)) for n in range(count)]
        case.user_properties.append(("ünï", "🔥"))
        case.note = f"{count + 1} user properties"
    elif what == "content_type":
        case.content_type = rng.choice(["application/json", "text/plain", "x" * 1000])
        case.note = f"content type {case.content_type[:20]!r}"
    else:
        case.payload_format = 1
        if rng.random() < 0.5:
            case.payload = case.payload[:5] + b"\xff" + case.payload[5:]
            case.expect, case.sender_id = "reject", None
            case.note = "payload format indicator 1, invalid UTF-8"
        else:
            case.note = "payload format indicator 1"
    return case


def g_retained(rng: random.Random, rid: str) -> Case:
    if rng.random() < 0.3:
        return Case(0, "retained", "empty retained (clears)", b"", "reject", retain=True)
    fields = valid_fields(rng, rid)
    return Case(
        0, "retained", "valid, retained", dumps(fields, rng), "play", retain=True, sender_id=rid
    )


def g_duplicate(rng: random.Random, rid: str, seed: int, index: int) -> Case:
    dup_id = f"fz{seed}-dup{index // 40}"
    text = "Duplicate check."
    payload = json.dumps({"id": dup_id, "text": text}).encode()
    return Case(
        0,
        "duplicate",
        f"id {dup_id!r} again",
        payload,
        "play",
        sender_id=dup_id,
        dedupe_key=(dup_id, text),
    )


# (class, weight); the generator gets (rng, rid) or more, see make_case
CLASSES: list[tuple[str, float]] = [  # about 30 % of the payloads are spoken
    ("valid", 9),
    ("valid_plain", 2),
    ("expiring", 2),
    ("unicode", 3),
    ("control", 4),
    ("random_bytes", 9),
    ("random_text", 1),
    ("invalid_utf8", 7),
    ("malformed_json", 12),
    ("deep_nesting", 5),
    ("non_object_json", 3),
    ("wrong_type", 16),
    ("unknown_field", 5),
    ("unknown_voice", 3),
    ("huge", 3),
    ("long_run", 2),
    ("empty", 2),
    ("mqtt5_props", 8),
    ("retained", 1),
    ("duplicate", 2),
]

HEAVY = (
    ("12:" * 200 + "00", "'12:'*200+'00' (602 chars)"),
    ("1-" * 999 + "1", "'1-'*999+'1' (1999 chars)"),
    (None, "max_text_chars of words"),
    (None, "max_text_chars digits and letters, no spaces"),
)


def heavy_positions(n: int, count: int) -> list[int]:
    return [(k + 1) * n // (count + 1) for k in range(count)]


def make_case(seed: int, index: int, n: int, heavy: int, limit: int, run_id: str) -> Case:
    """Case `index` of a run; depends only on (seed, index, n, heavy, limit)."""
    rng = random.Random(f"{seed}:{index}")
    rid = f"fz{seed}-{index}"
    positions = heavy_positions(n, heavy)
    if index in positions:
        text, note = HEAVY[positions.index(index) % len(HEAVY)]
        if text is None and "words" in note:
            text = ("The quick brown fox jumps over the lazy dog. " * 50)[:limit]
        elif text is None:
            text = ("a1b2c3" * 400)[:limit]
        payload = json.dumps({"id": rid, "text": text}).encode()
        case = Case(index, "heavy", note, payload, "any", sender_id=rid, heavy=True)
    else:
        names = [name for name, _ in CLASSES]
        klass = rng.choices(names, weights=[w for _, w in CLASSES])[0]
        generators: dict[str, Callable[[], Case]] = {
            "valid": lambda: g_valid(rng, rid),
            "valid_plain": lambda: g_valid_plain(rng, rid),
            "expiring": lambda: g_expiring(rng, rid),
            "unicode": lambda: g_unicode(rng, rid),
            "control": lambda: g_control(rng, rid),
            "random_bytes": lambda: g_random_bytes(rng, rid),
            "random_text": lambda: g_random_text(rng, rid),
            "invalid_utf8": lambda: g_invalid_utf8(rng, rid),
            "malformed_json": lambda: g_malformed(rng, rid),
            "deep_nesting": lambda: g_deep(rng, rid),
            "non_object_json": lambda: g_non_object(rng, rid),
            "wrong_type": lambda: g_wrong_type(rng, rid),
            "unknown_field": lambda: g_unknown_field(rng, rid),
            "unknown_voice": lambda: g_unknown_voice(rng, rid),
            "huge": lambda: g_huge(rng, rid, limit),
            "long_run": lambda: g_long_run(rng, rid),
            "empty": lambda: g_empty(rng, rid),
            "mqtt5_props": lambda: g_props(rng, rid, run_id),
            "retained": lambda: g_retained(rng, rid),
            "duplicate": lambda: g_duplicate(rng, rid, seed, index),
        }
        case = generators[klass]()
        case.index = index
        case.qos = rng.choices([0, 1, 2], weights=[2, 6, 2])[0]
    if case.correlation is None and case.response_topic != NONE:
        case.correlation = f"c{index}".encode()
    return case


# --- the MQTT side ---------------------------------------------------------------------


@dataclass
class Inbound:
    at: float
    topic: str
    payload: bytes
    correlation: bytes | None


class Client:
    """The fuzzer's MQTT 5 client: publishes with properties, records what it receives
    (with correlation data) and when the broker drops it."""

    def __init__(self, port: int, topics: list[str]) -> None:
        self.messages: list[Inbound] = []
        self.cond = threading.Condition()
        self.disconnects: list[tuple[float, str]] = []
        self.closing = False
        self.topics = topics
        self._subscribed = threading.Event()
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=f"fuzz-{secrets.token_hex(4)}",
            protocol=MQTTProtocolVersion.MQTTv5,
        )
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_message = self._on_message
        self.client.on_disconnect = self._on_disconnect
        self.client.max_inflight_messages_set(64)
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        if not self._subscribed.wait(15):
            raise RuntimeError("the fuzz client did not connect")

    def _on_connect(self, client: mqtt.Client, *_: Any) -> None:
        client.subscribe([(t, 1) for t in self.topics])

    def _on_subscribe(self, *_: Any) -> None:
        self._subscribed.set()

    def _on_disconnect(
        self, _c: mqtt.Client, _u: object, _f: Any, reason: ReasonCode, _p: Any
    ) -> None:
        if self.closing:
            return
        with self.cond:
            self.disconnects.append((time.monotonic(), str(reason)))
            self.cond.notify_all()

    def _on_message(self, _c: mqtt.Client, _u: object, msg: mqtt.MQTTMessage) -> None:
        props = getattr(msg, "properties", None)
        correlation = getattr(props, "CorrelationData", None)
        with self.cond:
            self.messages.append(
                Inbound(time.monotonic(), msg.topic, bytes(msg.payload), correlation)
            )
            self.cond.notify_all()

    def publish(self, topic: str, case: Case, run_prefix: str) -> None:
        props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        if case.usable_topic:
            props.ResponseTopic = case.response_topic.replace(
                UNIQUE, f"{run_prefix}/{case.index}", 1
            )
        elif case.response_topic != NONE:
            props.ResponseTopic = case.response_topic
        if case.correlation is not None:
            props.CorrelationData = case.correlation
        if case.expiry is not None:
            props.MessageExpiryInterval = case.expiry
        if case.user_properties:
            props.UserProperty = case.user_properties
        if case.content_type is not None:
            props.ContentType = case.content_type
        if case.payload_format is not None:
            props.PayloadFormatIndicator = case.payload_format
        self.client.publish(topic, case.payload, qos=case.qos, retain=case.retain, properties=props)

    def wait(self, seen: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self.cond:
            while len(self.messages) <= seen:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True

    def close(self) -> None:
        self.closing = True
        self.client.disconnect()
        self.client.loop_stop()


# --- the run ---------------------------------------------------------------------------


class Fuzz:
    def __init__(self, args: argparse.Namespace, rig: Rig, client: Client, run_id: str) -> None:
        self.args = args
        self.rig = rig
        self.client = client
        self.run_prefix = f"fuzz/{run_id}/r"
        self.say = rig.topic("say")
        self.events_topic = rig.topic("events")
        self.telemetry_topic = rig.topic("telemetry")
        self.cases: list[Case] = []
        self.by_index: dict[int, Case] = {}
        self.by_id: dict[str, list[Case]] = {}
        self.outstanding: dict[int, Case] = {}
        self.alone: Case | None = None
        self.idless_events = 0  # id-less final events on the events topic, not matched alone
        self.other_id_events = 0  # final events with an id no payload carried (daemon's ids)
        self.late: list[tuple[int, str]] = []
        self.stray_rt: list[str] = []
        self.nonfinal: Counter[str] = Counter()
        self.telemetry: dict[str, Any] | None = None
        self.telemetry_at = 0.0
        self.samples: list[tuple[int, float]] = []
        self.crash: dict[str, Any] | None = None
        self._seen = 0
        self.played_keys: set[tuple[str, str]] = set()
        self.elapsed = 0.0
        self.last_answer = time.monotonic()
        self.stall: dict[str, Any] | None = None

    # --- answers -------------------------------------------------------------------------

    def process(self) -> None:
        messages = self.client.messages
        while self._seen < len(messages):
            m = messages[self._seen]
            self._seen += 1
            if m.topic == self.telemetry_topic:
                self.telemetry, self.telemetry_at = json.loads(m.payload), m.at
            elif m.topic == self.events_topic:
                self._on_event(m)
            elif m.topic.startswith(self.run_prefix + "/"):
                self._on_response(m)

    def _on_event(self, m: Inbound) -> None:
        event = json.loads(m.payload)
        kind, rid = str(event.get("event")), event.get("id")
        if kind not in FINAL:
            self.nonfinal[kind] += 1
            return
        owners = self.by_id.get(rid, []) if isinstance(rid, str) else []
        for case in owners:
            case.events_copies += 1
        alone = self.alone
        if alone is not None and (
            rid is None or rid == alone.sender_id or (not owners and alone.sender_id is None)
        ):
            self._final(alone, kind, event, m, via_events=True)
        elif rid is None:
            self.idless_events += 1
        elif not owners:
            self.other_id_events += 1

    def _on_response(self, m: Inbound) -> None:
        try:
            index = int(m.topic[len(self.run_prefix) + 1 :].split("/", 1)[0])
        except ValueError:
            self.stray_rt.append(m.topic[:100])
            return
        case = self.by_index.get(index)
        if case is None:
            self.stray_rt.append(m.topic[:100])
            return
        event = json.loads(m.payload)
        kind = str(event.get("event"))
        ok = m.correlation == case.correlation or (not m.correlation and not case.correlation)
        case.correlation_ok = ok if case.correlation_ok is None else case.correlation_ok and ok
        self._final(case, kind, event, m, via_events=False)

    def _final(
        self, case: Case, kind: str, event: dict[str, Any], m: Inbound, via_events: bool
    ) -> None:
        case.finals.append(kind)
        if len(case.finals) > 1:
            return
        if case.timed_out:
            self.late.append((case.index, kind))
        case.kind, case.answered_at = kind, m.at
        self.last_answer = m.at
        case.idless = not via_events and "id" not in event
        case.reason = event.get("reason")
        for name in ("audio_ms", "synthesis_ms"):
            value = event.get(name)
            if isinstance(value, (int, float)):
                setattr(case, name, float(value))
        self.outstanding.pop(case.index, None)
        if self.alone is case:
            self.alone = None
        if kind == "finished" and case.dedupe_key is not None:
            self.played_keys.add(case.dedupe_key)

    # --- sending -------------------------------------------------------------------------

    def send(self, case: Case) -> None:
        self.cases.append(case)
        self.by_index[case.index] = case
        if case.sender_id is not None:
            self.by_id.setdefault(case.sender_id, []).append(case)
        if case.dedupe_key is not None:
            earlier = [
                c for c in self.by_id.get(case.dedupe_key[0], [])
                if c is not case and c.dedupe_key == case.dedupe_key
                and (c.kind is None or c.kind == "finished")
            ]  # fmt: skip
            case.expect = "duplicate" if earlier else "play"
        case.sent_at = time.monotonic()
        self.outstanding[case.index] = case
        if not case.usable_topic:
            self.alone = case  # its final event is matched on the events topic
        try:
            self.client.publish(self.say, case, self.run_prefix)
        except (ValueError, TypeError) as err:  # paho refused it: nothing was sent
            case.publish_error = repr(err)
            self.outstanding.pop(case.index, None)
            self.alone = None

    def timeout_of(self, case: Case) -> float:
        return 600.0 if case.heavy else float(self.args.answer_timeout)

    def expire_outstanding(self) -> None:
        now = time.monotonic()
        for case in list(self.outstanding.values()):
            if case.sent_at is not None and now - case.sent_at > self.timeout_of(case):
                case.timed_out = True
                self.outstanding.pop(case.index)
                if self.alone is case:
                    self.alone = None
                log(f"  no answer to payload {case.index} ({case.klass}: {case.note[:60]})")

    def pump(self, until: Callable[[], bool]) -> bool:
        """Process answers until `until()` holds; False if the daemon died or stalls."""
        while not until():
            if not self.rig.alive():
                self.note_crash()
                return False
            if self.client.wait(self._seen, 1.0):
                self.process()
            self.expire_outstanding()
            if self.stalled():
                return False
        return True

    def stalled(self) -> bool:
        """Payloads wait and nothing was answered for --stall s (600 s with a heavy one
        out): the daemon is stuck. Recorded with its last telemetry; the run stops."""
        if not self.outstanding:
            return False
        limit = 600.0 if any(c.heavy for c in self.outstanding.values()) else self.args.stall
        silent = time.monotonic() - self.last_answer
        if silent <= limit:
            return False
        telemetry = self.telemetry or {}
        self.stall = {
            "silent_s": round(silent),
            "after_payloads": len(self.cases),
            "waiting": sorted(self.outstanding)[:50],
            "last_payloads": [c.index for c in self.cases[-20:]],
            "queue_depth": telemetry.get("queue_depth"),
            "syntheses_in_flight": telemetry.get("syntheses_in_flight"),
            "status": telemetry.get("status"),
        }
        log(f"the daemon answered nothing for {silent:.0f} s: stopping the run ({self.stall})")
        return True

    def run(self, indexes: Sequence[int]) -> None:
        args = self.args
        started = time.monotonic()
        self.samples.append((0, self.rig.sample()["rss_mb"]))
        for count, index in enumerate(indexes, 1):
            case = make_case(args.seed, index, args.requests, args.heavy, args.max_text_chars, "")
            if case.alone:
                ok = self.pump(lambda: not self.outstanding)
            else:
                ok = self.pump(
                    lambda: (
                        len(self.outstanding) < args.window
                        and not any(c.alone for c in self.outstanding.values())
                    )
                )
            if not ok:
                break
            self.send(case)
            if count % 100 == 0:
                self.rig.sweep_wavs()
                self.samples.append((count, self.rig.sample()["rss_mb"]))
            if count % args.progress_every == 0:
                rate = count / (time.monotonic() - started)
                log(
                    f"  {count}/{len(indexes)} payloads, "
                    f"RSS {self.samples[-1][1]:.1f} MB, {rate:.1f}/s"
                )
        if self.crash is None and self.stall is None:
            self.pump(lambda: not self.outstanding)
        self.elapsed = time.monotonic() - started
        if self.crash is None and self.stall is None:
            self.finish()
        self.rig.sweep_wavs()

    def finish(self) -> None:
        """Clear the retained say message, then a last valid request must play."""
        clear = Case(
            -1,
            "cleanup",
            "empty retained message (clears the say topic)",
            b"",
            "reject",
            retain=True,
        )
        last = Case(
            -2,
            "cleanup",
            "last valid request",
            json.dumps({"id": "fuzz-last", "text": "Fuzzing finished."}).encode(),
            "play",
            sender_id="fuzz-last",
        )
        for case in (clear, last):
            case.correlation = f"c{case.index}".encode()
            self.send(case)
            if not self.pump(lambda case=case: case.kind is not None or case.timed_out):  # type: ignore[misc]
                return
        self.samples.append((len(self.cases), self.rig.sample()["rss_mb"]))
        after = time.monotonic()
        self.pump(lambda: self.telemetry_at > after or time.monotonic() - after > 20)

    def note_crash(self) -> None:
        if self.crash is not None or self.rig.daemon is None or self.rig.daemon.proc is None:
            return
        proc = self.rig.daemon.proc
        last = [c.index for c in self.cases[-20:]]
        self.crash = {
            "exit_code": proc.poll(),
            "after_payloads": len(self.cases),
            "last_payloads": last,
            "log_tail": self.rig.daemon.log()[-4000:],
        }
        log(f"the daemon exited ({proc.poll()}) after {len(self.cases)} payloads")

    # --- results -------------------------------------------------------------------------

    def results(self) -> dict[str, Any]:
        args = self.args
        fuzz_cases = [c for c in self.cases if c.index >= 0]
        problems: dict[str, list[dict[str, Any]]] = {
            "no_final_event": [],
            "several_final_events": [],
            "unexpected_kind": [],
            "correlation_data_wrong": [],
            "not_published": [],
        }
        per_class: dict[str, Counter[str]] = {}
        answer_ms: dict[str, list[float]] = {}
        kinds: Counter[str] = Counter()
        for c in self.cases:
            row = per_class.setdefault(c.klass, Counter())
            row["sent"] += 1
            if c.publish_error:
                row["not_published"] += 1
                problems["not_published"].append(self.describe(c))
                continue
            row[c.kind or "none"] += 1
            kinds[c.kind or "none"] += 1
            if c.kind is None:
                problems["no_final_event"].append(self.describe(c))
            if len(c.finals) > 1:
                row["several"] += 1
                problems["several_final_events"].append(self.describe(c))
            if c.kind is not None and c.kind not in ALLOWED[c.expect]:
                row["unexpected"] += 1
                problems["unexpected_kind"].append(self.describe(c))
            if c.correlation_ok is False:
                problems["correlation_data_wrong"].append(self.describe(c))
            row["audio_ms"] += int(c.audio_ms)
            row["synthesis_ms"] += int(c.synthesis_ms)
            if c.answered_at is not None and c.sent_at is not None:
                answer_ms.setdefault(c.klass, []).append((c.answered_at - c.sent_at) * 1000)
        # Cross-check: a payload answered on its response topic with an id it carried has
        # the same final event on the events topic.
        copies_missing = [
            c.index for c in self.cases
            if c.kind and c.usable_topic and c.sender_id and len(self.by_id[c.sender_id]) == 1
            and c.events_copies != len(c.finals) and c.kind != "duplicate"
        ]  # fmt: skip
        reasons = Counter(
            re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'…'", c.reason or ""))[:90]
            for c in self.cases
            if c.kind == "rejected"
        )
        rss = [mb for _, mb in self.samples]
        telemetry = self.telemetry or {}
        # Each id-less answer on a response topic has its copy on the events topic; more
        # id-less final events there than that is a doubled answer (of a payload sent alone).
        idless_rt = sum(1 for c in self.cases if c.idless)
        return {
            "payloads": len(fuzz_cases),
            "seed": args.seed,
            "window": args.window,
            "heavy": args.heavy,
            "set": args.set,
            "elapsed_s": round(self.elapsed, 1),
            "payloads_per_s": round(len(fuzz_cases) / self.elapsed, 1) if self.elapsed else None,
            "final_events": dict(sorted(kinds.items())),
            "other_events": dict(sorted(self.nonfinal.items())),
            "per_class": {k: dict(sorted(v.items())) for k, v in sorted(per_class.items())},
            "answer_ms": {k: stats(v) for k, v in sorted(answer_ms.items())},
            "problems": {k: v[:50] for k, v in problems.items()},
            "problem_counts": {k: len(v) for k, v in problems.items()},
            "late_answers": self.late[:50],
            "events_topic": {
                "idless_final_events_not_matched_alone": self.idless_events,
                "idless_answers_on_response_topics": idless_rt,
                "final_events_with_daemon_ids": self.other_id_events,
                "payloads_without_their_events_topic_copy": copies_missing[:50],
            },
            "stray_response_topics": self.stray_rt[:20],
            "client_disconnects": self.client.disconnects,
            "rejection_reasons": dict(reasons.most_common(25)),
            "crash": self.crash,
            "stall": self.stall,
            "rss_mb": {
                "first": round(rss[0], 1),
                "max": round(max(rss), 1),
                "last": round(rss[-1], 1),
                "samples": [[n, round(mb, 1)] for n, mb in self.samples],
            },
            "daemon_counters": telemetry.get("counters"),
            "voice": voice_check(self.telemetry),
            "last_request": next((c.kind for c in self.cases if c.index == -2), None),
        }

    def describe(self, c: Case) -> dict[str, Any]:
        a = self.args
        return {
            "index": c.index,
            "class": c.klass,
            "note": c.note[:200],
            "expect": c.expect,
            "finals": c.finals,
            "reason": c.reason,
            "qos": c.qos,
            "retain": c.retain,
            "response_topic": c.response_topic[:80],
            "payload_preview": repr(c.payload[:120]),
            "payload_b64": base64.b64encode(c.payload).decode() if len(c.payload) <= 4096 else None,
            "payload_bytes": len(c.payload),
            "publish_error": c.publish_error,
            "replay": (
                f".venv/bin/python bench/fuzz.py --seed {a.seed} --requests {a.requests} "
                f"--heavy {a.heavy} --cases {c.index}"
                if c.index >= 0
                else None
            ),
        }


def print_report(r: dict[str, Any]) -> None:
    print(
        f"fuzz: {r['payloads']} payloads, seed {r['seed']}, window {r['window']}, "
        f"{r['elapsed_s']:.0f} s ({r['payloads_per_s']}/s); voice: {r['voice']}"
    )
    if r["set"]:
        print(f"  --set {' '.join(r['set'])}")
    cols = ["finished", "rejected", "expired", "interrupted", "duplicate", "none"]
    print(
        f"\n  {'class':16} {'sent':>5} "
        + " ".join(f"{c[:8]:>8}" for c in cols)
        + f" {'several':>7} {'unexp.':>6} {'answer p50/p99 ms':>18} {'audio/synth s':>13}"
    )
    for klass, row in r["per_class"].items():
        a = r["answer_ms"].get(klass, {})
        print(
            f"  {klass:16} {row.get('sent', 0):>5} "
            + " ".join(f"{row.get(c, 0) or '':>8}" for c in cols)
            + f" {row.get('several', 0) or '':>7} {row.get('unexpected', 0) or '':>6} "
            f"{fmt(a.get('p50')):>8} {fmt(a.get('p99')):>9} "
            f"{row.get('audio_ms', 0) / 1000:>6.0f} {row.get('synthesis_ms', 0) / 1000:>6.0f}"
        )
    print("\nfinal events: " + ", ".join(f"{k} {v}" for k, v in r["final_events"].items()))
    print("other events: " + ", ".join(f"{k} {v}" for k, v in r["other_events"].items()))
    print("\ntop rejection reasons:")
    for reason, n in list(r["rejection_reasons"].items())[:12]:
        print(f"  {n:>5}  {reason}")
    print("\nproblems: " + ", ".join(f"{k} {v}" for k, v in r["problem_counts"].items()))
    for kind, items in r["problems"].items():
        for p in items[:8]:
            print(
                f"  {kind}: #{p['index']} {p['class']} ({p['note'][:70]}) expect {p['expect']}, "
                f"got {p['finals'] or 'nothing'}"
                + (f" - {str(p['reason'])[:80]}" if p["reason"] else "")
            )
            if p["replay"]:
                print(f"    replay: {p['replay']}")
    if r["late_answers"]:
        print(f"  answers after the timeout: {r['late_answers'][:10]}")
    ev = r["events_topic"]
    print(
        f"\nevents topic: {ev['idless_final_events_not_matched_alone']} id-less final events "
        f"not sent alone (vs {ev['idless_answers_on_response_topics']} id-less answers on "
        f"response topics), payloads missing their copy there: "
        f"{len(ev['payloads_without_their_events_topic_copy'])}; stray response topics: "
        f"{len(r['stray_response_topics'])}; fuzz client dropped by the broker: "
        f"{len(r['client_disconnects'])}"
    )
    rss = r["rss_mb"]
    d = r["daemon"]
    print(
        f"daemon: PID {d['pid']} same at end: {d['same_pid_at_end']}; still serving (last "
        f"request): {r['last_request']}; watchdog pings at the end: {d['watchdog_ok']}; "
        f"exit {d['exit_code']} after SIGTERM ({d['stop_s']} s)"
    )
    print(f"  RSS MB: first {rss['first']}, max {rss['max']}, last {rss['last']}")
    print(
        f"  log: {d['log']['errors']} errors, {d['log']['tracebacks']} tracebacks, "
        f"{d['log']['warnings']} warnings"
    )
    for e in d["log"]["error_lines"][:8]:
        print(f"    {e['count']}x {e['line'][:150]}")
    if r["daemon_counters"]:
        print("  counters: " + ", ".join(f"{k} {v}" for k, v in r["daemon_counters"].items()))
    if r["stall"]:
        print(f"\nSTALL: {json.dumps(r['stall'])}")
    if r["crash"]:
        print(f"\nCRASH: {json.dumps({k: v for k, v in r['crash'].items() if k != 'log_tail'})}")
        print(r["crash"]["log_tail"][-2000:])
    print("\nchecks")
    for t in r["checks"]:
        print(f"  {t['verdict']:5} {t['check']:58} {t['value']}")


def checks(r: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    d, pc = r["daemon"], r["problem_counts"]

    def add(name: str, ok: bool, value: str) -> None:
        out.append({"check": name, "verdict": "PASS" if ok else "FAIL", "value": value})

    ev = r["events_topic"]
    surplus = ev["idless_final_events_not_matched_alone"] - ev["idless_answers_on_response_topics"]
    add(
        "every payload exactly one final event",
        pc["no_final_event"] == 0 and pc["several_final_events"] == 0 and surplus == 0,
        f"{pc['no_final_event']} without, {pc['several_final_events']} with several, "
        f"{surplus} unmatched id-less",
    )
    add(
        "final event kinds as each class allows",
        pc["unexpected_kind"] == 0,
        f"{pc['unexpected_kind']} unexpected",
    )
    add(
        "correlation data echoed",
        pc["correlation_data_wrong"] == 0,
        f"{pc['correlation_data_wrong']} wrong",
    )
    add("the daemon never stalled", not r["stall"], "stalled" if r["stall"] else "no")
    add(
        "same daemon process at the end",
        bool(d["same_pid_at_end"]) and not r["crash"],
        f"PID {d['pid']}",
    )
    add(
        "still serving: a last valid request plays",
        r["last_request"] == "finished",
        str(r["last_request"]),
    )
    add("watchdog pings still coming", bool(d["watchdog_ok"]), str(d["watchdog_ok"]))
    add("exit 0 on SIGTERM", d["exit_code"] == 0, str(d["exit_code"]))
    add("no tracebacks in the daemon log", d["log"]["tracebacks"] == 0, str(d["log"]["tracebacks"]))
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    load_before = os.getloadavg()
    root = Path(tempfile.mkdtemp(prefix="ttfz-"))
    rig = Rig(root, "fuzz", sets=args.set)
    run_id = secrets.token_hex(4)
    client: Client | None = None
    fuzz: Fuzz | None = None
    result: dict[str, Any] = {"benchmark": "fuzz", "root": str(root)}
    indexes = [int(i) for i in args.cases.split(",")] if args.cases else list(range(args.requests))
    watchdog_ok = same = False
    try:
        rig.start_broker()
        topics = [rig.topic("events"), rig.topic("telemetry"), f"fuzz/{run_id}/#"]
        client = Client(rig.port, topics)
        log(f"daemon: starting (wav-dir sink){' --set ' + ' '.join(args.set) if args.set else ''}")
        rig.start_daemon()
        fuzz = Fuzz(args, rig, client, run_id)
        log(f"fuzz: {len(indexes)} payloads, seed {args.seed}, window {args.window}")
        fuzz.run(indexes)
        same = rig.same_process()
        watchdog_ok = rig.alive() and rig.watchdog_after(time.monotonic(), 10)
    except BaseException:
        if rig.daemon is not None:
            log(f"--- daemon log ---\n{rig.daemon.log()[-3000:]}")
        raise
    finally:
        if client is not None:
            client.close()
        rig.stop()
        daemon_log = rig.log_summary()  # before the temp dir goes
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    assert fuzz is not None
    result.update(fuzz.results())
    result["daemon"] = {
        "pid": rig.pid,
        "same_pid_at_end": same,
        "watchdog_ok": watchdog_ok,
        "exit_code": rig.exit_code,
        "stop_s": rig.stop_s,
        "log": daemon_log,
    }
    result["checks"] = checks(result)
    result["machine"] = machine_info(load_before)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=TARGET, help="payloads (default 10000)")
    parser.add_argument("--seed", type=int, default=1, help="RNG seed (default 1)")
    parser.add_argument("--window", type=int, default=8, help="payloads in flight (default 8)")
    parser.add_argument(
        "--heavy", type=int, default=len(HEAVY), help=f"costly texts (default {len(HEAVY)})"
    )
    parser.add_argument(
        "--cases",
        help="comma-separated payload indexes: replay only these (same --seed, "
        "--requests, --heavy)",
    )
    parser.add_argument(
        "--answer-timeout", type=float, default=120.0, help="seconds to wait for an answer"
    )
    parser.add_argument(
        "--stall",
        type=float,
        default=240.0,
        help="stop the run when nothing is answered for this long (default 240 s)",
    )
    parser.add_argument(
        "--max-text-chars",
        type=int,
        default=MAX_TEXT_CHARS,
        help="the daemon's queue.max_text_chars (when changed with --set)",
    )
    parser.add_argument("--progress-every", type=int, default=1000, help=argparse.SUPPRESS)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="passed to the daemon's `edge-ttsd run --set` (repeatable)",
    )
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs)")
    args = parser.parse_args(argv)
    stop_on_signals()
    emit(run(args), args.out, args.json, print_report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
