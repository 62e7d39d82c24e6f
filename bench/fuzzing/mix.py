"""Which payload comes at which index: the classes and their weights, the heavy texts."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from . import junk, text_cases
from .case import NONE, Case

Generator = Callable[[random.Random, str, "Context"], Case]


class Context:
    """What a few generators need beyond (rng, rid)."""

    def __init__(self, seed: int, index: int, limit: int) -> None:
        self.seed, self.index, self.limit = seed, index, limit


# (class, weight, generator(rng, rid, ctx)); about 30 % of the payloads are spoken.
CLASSES: list[tuple[str, float, Generator]] = [
    ("valid", 9, lambda rng, rid, _: text_cases.g_valid(rng, rid)),
    ("valid_plain", 2, lambda rng, rid, _: text_cases.g_valid_plain(rng, rid)),
    ("expiring", 2, lambda rng, rid, _: text_cases.g_expiring(rng, rid)),
    ("unicode", 3, lambda rng, rid, _: text_cases.g_unicode(rng, rid)),
    ("control", 4, lambda rng, rid, _: text_cases.g_control(rng, rid)),
    ("random_bytes", 9, lambda rng, rid, _: junk.g_random_bytes(rng, rid)),
    ("random_text", 1, lambda rng, rid, _: text_cases.g_random_text(rng, rid)),
    ("invalid_utf8", 7, lambda rng, rid, _: junk.g_invalid_utf8(rng, rid)),
    ("malformed_json", 12, lambda rng, rid, _: junk.g_malformed(rng, rid)),
    ("malformed_ssml", 6, lambda rng, rid, _: junk.g_malformed_ssml(rng, rid)),
    ("deep_nesting", 5, lambda rng, rid, _: junk.g_deep(rng, rid)),
    ("non_object_json", 3, lambda rng, rid, _: junk.g_non_object(rng, rid)),
    ("wrong_type", 16, lambda rng, rid, _: junk.g_wrong_type(rng, rid)),
    ("unknown_field", 5, lambda rng, rid, _: junk.g_unknown_field(rng, rid)),
    ("unknown_voice", 3, lambda rng, rid, _: junk.g_unknown_voice(rng, rid)),
    ("huge", 3, lambda rng, rid, ctx: text_cases.g_huge(rng, rid, ctx.limit)),
    ("long_run", 2, lambda rng, rid, _: text_cases.g_long_run(rng, rid)),
    ("empty", 2, lambda rng, rid, _: junk.g_empty(rng, rid)),
    ("mqtt5_props", 8, lambda rng, rid, _: junk.g_props(rng, rid)),
    ("retained", 1, lambda rng, rid, _: text_cases.g_retained(rng, rid)),
    ("duplicate", 2, lambda rng, rid, ctx: text_cases.g_duplicate(rng, rid, ctx.seed, ctx.index)),
]

# Each ~2 min of audio (~36 s of synthesis on idle cores): spread over the run, and sent
# when nothing else that plays is in flight (rejected payloads go on beside them).
HEAVY = (
    ("12:" * 200 + "00", "'12:'*200+'00' (602 chars)"),
    ("1-" * 999 + "1", "'1-'*999+'1' (1999 chars)"),
    (None, "max_text_chars of words"),
    (None, "max_text_chars digits and letters, no spaces"),
)


def heavy_positions(n: int, count: int) -> list[int]:
    return [(k + 1) * n // (count + 1) for k in range(count)]


def heavy_case(index: int, rid: str, slot: int, limit: int) -> Case:
    text, note = HEAVY[slot % len(HEAVY)]
    if text is None and "words" in note:
        text = ("The quick brown fox jumps over the lazy dog. " * 50)[:limit]
    elif text is None:
        text = ("a1b2c3" * 400)[:limit]
    payload = json.dumps({"id": rid, "text": text}).encode()
    return Case(index, "heavy", note, payload, "any", sender_id=rid, heavy=True)


def make_case(seed: int, index: int, n: int, heavy: int, limit: int) -> Case:
    """Case `index` of a run; depends only on (seed, index, n, heavy, limit)."""
    rng = random.Random(f"{seed}:{index}")
    rid = f"fz{seed}-{index}"
    positions = heavy_positions(n, heavy)
    if index in positions:
        case = heavy_case(index, rid, positions.index(index), limit)
    else:
        klass = rng.choices(CLASSES, weights=[w for _, w, _ in CLASSES])[0]
        case = klass[2](rng, rid, Context(seed, index, limit))
        case.index = index
        case.qos = rng.choices([0, 1, 2], weights=[2, 6, 2])[0]
    if case.correlation is None and case.response_topic != NONE:
        case.correlation = f"c{index}".encode()
    return case
