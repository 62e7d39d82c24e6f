"""Generators of payloads the daemon must refuse (or may, for the odd ones marked "any"):
random bytes, invalid UTF-8, broken and deep JSON, JSON that is not an object, a wrong
type per field, unknown fields and voices, empty payloads, MQTT 5 properties."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable
from typing import Any

from .case import NONE, UNIQUE, WORDS, Case, Raw, dumps, short_fields, valid_fields


def g_random_bytes(rng: random.Random, rid: str) -> Case:
    size = rng.choice([0, rng.randint(1, 8), rng.randint(9, 64), rng.randint(65, 512)])
    if rng.random() < 0.05:
        size = rng.randint(4096, 65536)
    data = rng.randbytes(size)
    return Case(0, "random_bytes", f"{size} random bytes", data, "reject" if not size else "any")


BAD_UTF8 = (b"\xff", b"\xfe", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"\x80", b"\xf8\x88\x80")


def g_invalid_utf8(rng: random.Random, rid: str) -> Case:
    bad = rng.choice(BAD_UTF8)
    if rng.random() < 0.3:
        text = rng.choice(WORDS).encode()
        at = rng.randint(0, len(text))
        note = f"plain text with {bad!r}"
        return Case(0, "invalid_utf8", note, text[:at] + bad + text[at:], "reject")
    payload = json.dumps({"id": rid, "text": rng.choice(WORDS)}).encode()
    at = rng.randint(1, len(payload) - 1)
    note = f"JSON with {bad!r} at byte {at}"
    return Case(0, "invalid_utf8", note, payload[:at] + bad + payload[at:], "reject")


MUTATIONS: list[tuple[str, Callable[[str], str], str]] = [
    ("single quotes", lambda s: s.replace('"', "'"), "reject"),
    ("trailing comma", lambda s: s[:-1] + ",}", "reject"),
    ("comment", lambda s: s[:-1] + " // note\n}", "reject"),
    ("unquoted keys", lambda s: re.sub(r'"(\w+)":', r"\1:", s), "reject"),
    ("raw newline in a string", lambda s: s.replace('"text": "', '"text": "a\nb ', 1), "reject"),
    ("two objects", lambda s: s + s, "reject"),
    ("garbage after", lambda s: s + "xyz", "reject"),
    ("missing colon", lambda s: s.replace(":", "", 1), "reject"),
    ("unbalanced", lambda s: s + "}", "reject"),
    ("NaN id", lambda s: re.sub(r'"id": "[^"]*"', '"id": NaN', s, count=1), "reject"),
    ("duplicate text key", lambda s: s[:-1] + ', "text": "Okay."}', "any"),
    ("byte-order mark", lambda s: "\ufeff" + s, "any"),  # plain text: the JSON is spoken
    ("leading junk", lambda s: "x" + s, "any"),  # likewise
    ("whitespace around", lambda s: "\n\t " + s + " \r\n", "play"),
]


def carried_id(payload: str) -> str | None:
    """The id a mutated payload still carries when it parses: deleting a digit turns
    "fz1-4201" into "fz1-421", another payload's id, whose events it would seem to double."""
    try:
        fields = json.loads(payload)
    except ValueError:
        return None
    value = fields.get("id") if isinstance(fields, dict) else None
    return value if isinstance(value, str) else None


def g_malformed(rng: random.Random, rid: str) -> Case:
    # A lean base mostly: a payload that no longer starts with '{' is spoken whole.
    good = json.dumps(short_fields(rng, rid))
    roll = rng.random()
    if roll < 0.4:
        cut = rng.randint(1, len(good) - 1)
        note = f"truncated at {cut}/{len(good)}"
        return Case(0, "malformed_json", note, good[:cut].encode(), "reject")
    if roll < 0.6:
        pos = rng.randint(0, len(good) - 1)
        mutated = good[:pos] + good[pos + 1 :]
        note = f"char {pos} deleted"
        return Case(0, "malformed_json", note, mutated.encode(), sender_id=carried_id(mutated))
    if roll < 0.7:
        pos = rng.randint(0, len(good))
        char = rng.choice('{}[]":,\\')
        mutated = good[:pos] + char + good[pos:]
        note = f"{char!r} inserted at {pos}"
        return Case(0, "malformed_json", note, mutated.encode(), sender_id=carried_id(mutated))
    name, mutate, expect = rng.choice(MUTATIONS)
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
    long_str = isinstance(value, str) and len(value) >= 30
    shown = f"{value[:20]}...x{len(value)}" if long_str else value
    sid = rid if name != "id" and expect != "reject" else None
    key = None
    if name == "id" and isinstance(value, str) and expect == "play":
        # A fixed id ("."): the same id with the same text again is a duplicate.
        sid, key = value, (value, fields["text"])
    note = f"{name}={shown!r}"
    return Case(0, "wrong_type", note, dumps(fields), expect, sender_id=sid, dedupe_key=key)


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
    return Case(0, "unknown_field", note, dumps(fields), "reject")


UNKNOWN_VOICES = ("nonexistent", "en_US-joe-medium", "en_US-joe-medium-fp32",
                  "../../../etc/passwd", "/dev/zero", "default ", "Default", "DEFAULT",
                  "x" * 200, "x" * 201, "\u202edefault", "default\u0000")  # fmt: skip


def g_unknown_voice(rng: random.Random, rid: str) -> Case:
    voice = rng.choice(UNKNOWN_VOICES)
    fields = {"id": rid, "text": rng.choice(WORDS), "voice": voice}
    return Case(0, "unknown_voice", f"voice {voice[:30]!r}", dumps(fields), "reject")


SSML = (
    "<speak>Gate <say-as interpret-as='characters'>B12</say-as> closes.<break time='700ms'/>"
    "<p>Please <prosody rate='slow'>hurry</prosody>.</p></speak>"
)
SSML_BREAKS: list[tuple[str, Callable[[random.Random, str], str]]] = [
    ("cut", lambda rng, s: s[: rng.randint(8, len(s) - 2)]),  # no proper prefix is whole
    ("closing tag renamed", lambda rng, s: s.replace("</prosody>", "</prosodi>")),
    ("unknown element", lambda rng, s: s.replace("<p>", "<p><emphasis>x</emphasis>")),
    ("unknown attribute", lambda rng, s: s.replace("<break ", "<break pitch='x' ")),
    ("bad break", lambda rng, s: s.replace("700ms", rng.choice(["soon", "11s", "-1s", "ms"]))),
    ("bad say-as", lambda rng, s: s.replace("characters", rng.choice(["emoji", "", "date"]))),
    ("bad rate", lambda rng, s: s.replace("'slow'", rng.choice(["'warp'", "'900%'", "''"]))),
    ("DTD", lambda rng, s: '<!DOCTYPE speak [<!ENTITY a "a">]>' + s.replace("Gate", "&a;")),
    ("entity", lambda rng, s: s.replace("Gate", rng.choice(["&nbsp;", "&#0;", "&a"]))),
    ("nested 40", lambda rng, s: s.replace("<p>", "<p>" + "<s>" * 40 + "x" + "</s>" * 40)),
    ("audio", lambda rng, s: s.replace("<p>", "<p><audio src='http://x/a.wav'/>")),
    ("text after", lambda rng, s: s + "tail"),
]


def g_malformed_ssml(rng: random.Random, rid: str) -> Case:
    """SSML broken in a way the parser must refuse (tests/support/ssml_cases.py has the
    systematic list): sent as JSON with text_format ssml, or as a plain <speak payload."""
    what, breaks = rng.choice(SSML_BREAKS)
    document = breaks(rng, SSML)
    if rng.random() < 0.5:
        payload = dumps({"id": rid, "text": document, "text_format": "ssml"})
    else:
        payload = document.encode()
    return Case(0, "malformed_ssml", what, payload, "reject")


EMPTY = (b"", b" ", b"\n", b"\t \r\n", b'{"text": ""}', b'{"text": " "}', b'""', b"\x00")


def g_empty(rng: random.Random, rid: str) -> Case:
    payload = rng.choice(EMPTY)
    expect = "any" if payload == b"\x00" else "reject"
    return Case(0, "empty", repr(payload), payload, expect)


BAD_TOPICS = ("#", "+", "a/#", "a/+/b", "", "fuzz/#", "+/+", "#/a")
PROPS = ("bad_topic", "no_topic", "long_topic", "unicode_topic", "correlation", "expiry",
         "user_props", "content_type", "format_indicator")  # fmt: skip


def g_props(rng: random.Random, rid: str) -> Case:
    if rng.random() < 0.5:
        case = Case(0, "mqtt5_props", "", dumps(valid_fields(rng, rid)), "play", sender_id=rid)
    else:
        case = Case(0, "mqtt5_props", "", b'{"text": 1}', "reject")
    what = rng.choice(PROPS)
    if what == "bad_topic":
        case.response_topic = rng.choice(BAD_TOPICS)
        case.expect, case.sender_id = "reject", None
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
