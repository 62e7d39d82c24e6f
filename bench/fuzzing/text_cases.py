"""Generators of payloads the daemon may speak: valid requests, texts that expire, odd
scripts and control characters, runs without spaces, huge and retained ones, duplicates.

Each takes a seeded `random.Random` and the payload's id and returns a Case (index 0;
make_case sets it). What plays is kept short (see case.WORDS); the long texts are the
--heavy ones, a few per run.
"""

from __future__ import annotations

import json
import random
import string
import time
from typing import Any

from .case import WORDS, Case, dumps, valid_fields


def g_valid(rng: random.Random, rid: str) -> Case:
    fields = valid_fields(rng, rid)
    roll = rng.random()
    if roll < 0.03:
        fields["priority"] = "critical"
    elif roll < 0.05:
        fields["interrupt"] = True
    note = "valid: " + ", ".join(sorted(k for k in fields if k not in ("id", "text")))
    return Case(0, "valid", note, dumps(fields), "play", sender_id=rid)


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
    return Case(0, "expiring", f"already expired: {choice}", dumps(fields), "expire", sender_id=rid)


# One code path each (emoji and sequences, RTL and bidi controls, CJK, Hangul,
# combining marks, fullwidth, mathematical letters, Greek, Cyrillic, ligatures, fractions,
# Arabic-Indic digits), kept short: espeak spells foreign scripts out letter by letter.
UNICODE_PIECES = (
    "🔥",
    "🚪🔓",
    "👍🏽",
    "👨\u200d👩\u200d👧",
    "🏳️\u200d🌈",
    "مرحبا",
    "שלום",
    "\u202eevil\u202c",
    "\u200fباب",
    "你好",
    "はい",
    "안녕하세요",
    "e\u0301e\u0301",
    "Z̴̛͉a̸l̶g̷o̴",
    "ＡＢＣ１２３",
    "𝔘𝔫𝔦",
    "Ωμέγα",
    "Привет",
    "ß ﬁ ﬀ",
    "½ ¾ ⅞",
    "٣٤٥",
    "\u0300\u0301\u0302",
    "\ufe0f",
)


def g_unicode(rng: random.Random, rid: str) -> Case:
    # One piece (two in one payload of ten), a word beside it in one of five.
    pieces = [rng.choice(UNICODE_PIECES) for _ in range(1 if rng.random() < 0.9 else 2)]
    if rng.random() < 0.2:
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
    controls = "".join(rng.choice(CONTROLS) for _ in range(rng.randint(1, 4)))
    place = rng.choice(["only", "before", "after", "between"])
    word = rng.choice(WORDS)
    text = {
        "only": controls,
        "before": controls + word,
        "after": word + controls,
        "between": word[: len(word) // 2] + controls + word[len(word) // 2 :],
    }[place]
    note = f"controls {place}: {controls!r}"
    if roll < 0.5:
        return Case(0, "control", "plain, " + note, text.encode("utf-8", "surrogatepass"))
    payload = json.dumps({"id": rid, "text": text}, ensure_ascii=rng.random() < 0.5)
    return Case(0, "control", "JSON, " + note, payload.encode(), sender_id=rid)


def g_random_text(rng: random.Random, rid: str) -> Case:
    alphabet = string.ascii_letters + string.digits + string.punctuation + "      "
    size = rng.randint(1, 8) if rng.random() < 0.9 else rng.randint(9, 40)
    text = "".join(rng.choice(alphabet) for _ in range(size))
    return Case(0, "random_text", f"printable {text!r}", text.encode())


def g_huge(rng: random.Random, rid: str, limit: int) -> Case:
    size = rng.choice([limit + 1, 2 * limit, 100_000, 1_000_000])
    where = rng.choice(["text", "text", "plain", "id", "voice", "speaker", "unknown", "at_limit"])
    fields: dict[str, Any] = {"id": rid, "text": "Hi."}
    if where == "plain":
        return Case(0, "huge", f"plain text of {size} chars", b"a " * (size // 2) + b"a", "reject")
    if where == "at_limit":  # exactly the limit, but only one word to say: cheap
        fields["text"] = " " * (limit - 3) + "Hi."
        note = f"text of exactly {limit} chars, mostly spaces"
        return Case(0, "huge", note, dumps(fields), "any", sender_id=rid)
    if where == "unknown":
        fields["blob"] = "x" * size
    elif where == "text":
        fields["text"] = ("Hello world. " * (size // 13 + 1))[:size]
    else:
        fields[where] = "x" * size
    return Case(0, "huge", f"{where} of {size} chars", dumps(fields), "reject")


def g_long_run(rng: random.Random, rid: str) -> Case:
    # Mostly short (each "12:" is a word to say, a run of digits one long number); one in
    # seven long enough to pass the first chunk's 40 characters (the url at k >= 11, the
    # others at 13-14), where a run without spaces must be cut anyway.
    k = rng.randint(1, 4) if rng.random() < 6 / 7 else rng.randint(10, 14)
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
    return Case(0, "long_run", f"{name} x{k}: {text[:30]!r}", dumps(fields), sender_id=rid)


def g_retained(rng: random.Random, rid: str) -> Case:
    if rng.random() < 0.3:
        return Case(0, "retained", "empty retained (clears)", b"", "reject", retain=True)
    fields = valid_fields(rng, rid)
    return Case(0, "retained", "valid, retained", dumps(fields), "play", retain=True, sender_id=rid)


def g_duplicate(rng: random.Random, rid: str, seed: int, index: int) -> Case:
    dup_id = f"fz{seed}-dup{index // 40}"
    text = "Twice."
    payload = json.dumps({"id": dup_id, "text": text}).encode()
    note = f"id {dup_id!r} again"
    return Case(0, "duplicate", note, payload, "play", sender_id=dup_id, dedupe_key=(dup_id, text))
