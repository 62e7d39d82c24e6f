"""The `<say-as>` kinds the vendors add to the W3C's (Polly, Azure, Google, Alexa):
fraction, unit, verbatim, address, name, duration, expletive, interjection. Each is a
checker (ValueError says why the text is not one) and a reader per language (English,
Mandarin), as in say_as.py, which lists them with its own.
"""

from __future__ import annotations

import re
from typing import Final

from . import chinese_numbers as zh_num
from . import english_numbers as en_num
from .document import SayAs

_FRACTION: Final = re.compile(r"(?:(?P<whole>\d+)[ +])?(?P<num>\d+) ?/ ?(?P<den>\d+)")
_UNIT: Final = re.compile(r"[+-]?\d[\d,]*(?:\.\d+)?\s*[^\d\s].*")
# A duration: "1:30" (its fields in the format's order, h:m by default), or 1'21" (Polly:
# minutes and seconds), or "2h 30m 10s".
_CLOCK_FIELDS: Final = re.compile(r"\d+(?::\d+){0,2}")
_MARKED: Final = re.compile(r"(?:(?P<m>\d+)')?\s*(?:(?P<s>\d+)\")?")
_LETTERED: Final = re.compile(
    r"(?:(?P<h>\d+)\s*h)?\s*(?:(?P<m>\d+)\s*m(?:in)?)?\s*(?:(?P<s>\d+)\s*s)?"
)
_DURATION_FORMATS: Final = ("h:m:s", "h:m", "m:s", "h", "m", "s")
_UNIT_WORDS: Final = {
    "h": (("hour", "hours"), "小时"),
    "m": (("minute", "minutes"), "分钟"),
    "s": (("second", "seconds"), "秒"),
}
# A street's abbreviations, as an address is written (the English normalizer knows "St.").
_STREET: Final = {
    "st": "Street",
    "ave": "Avenue",
    "av": "Avenue",
    "rd": "Road",
    "blvd": "Boulevard",
    "dr": "Drive",
    "ln": "Lane",
    "ct": "Court",
    "pl": "Place",
    "sq": "Square",
    "pkwy": "Parkway",
    "hwy": "Highway",
    "apt": "Apartment",
    "ste": "Suite",
    "fl": "Floor",
}
_STREET_WORD: Final = re.compile(rf"\b({'|'.join(_STREET)})\b\.?", re.IGNORECASE)
_HOUSE_NUMBER: Final = re.compile(r"^(\d{3,4})(?=\s)")
EXPLETIVE_EN: Final = "beep"  # Polly and Google bleep it out; we have words, not tones
EXPLETIVE_ZH: Final = "哔"


def check_any(say_as: SayAs, text: str) -> None:
    if not text:
        raise ValueError("has no text to read")


def as_written(say_as: SayAs, text: str) -> str:
    """name, interjection: the text as it is (it is a name, or a word said with feeling:
    there is nothing to expand)."""
    return text


# --- fractions ------------------------------------------------------------------------------


def check_fraction(say_as: SayAs, text: str) -> None:
    match = _FRACTION.fullmatch(text)
    if match is None:
        raise ValueError(f"{text[:40]!r} is not a fraction (3/4, 2 1/2, 2+1/2)")
    if int(match["den"]) == 0:
        raise ValueError(f"{text!r} divides by zero")


def fraction_en(say_as: SayAs, text: str) -> str:
    match = _full(_FRACTION, text)
    numerator, denominator = int(match["num"]), int(match["den"])
    plural = numerator != 1
    if denominator == 2:
        part = "halves" if plural else "half"
    elif denominator == 4:
        part = "quarters" if plural else "quarter"
    elif denominator == 1:
        part = "over one"
    else:
        part = en_num.ordinal(denominator) + ("s" if plural else "")
    said = f"{en_num.cardinal(numerator)} {part}"
    return f"{en_num.cardinal(int(match['whole']))} and {said}" if match["whole"] else said


def fraction_zh(say_as: SayAs, text: str) -> str:
    match = _full(_FRACTION, text)
    numerator, denominator = (zh_num.cardinal(match[k], liang=False) for k in ("num", "den"))
    said = f"{denominator}分之{numerator}"
    return f"{zh_num.cardinal(match['whole'], liang=False)}又{said}" if match["whole"] else said


# --- units, addresses, expletives --------------------------------------------------------------


def check_unit(say_as: SayAs, text: str) -> None:
    if not _UNIT.fullmatch(text):
        raise ValueError(f"{text[:40]!r} is not a number and a unit (10 km, 17.5lb)")


def unit(say_as: SayAs, text: str) -> str:
    """The normalizer reads a number and its unit (10km: ten kilometers, 十公里)."""
    return text


def address_en(say_as: SayAs, text: str) -> str:
    """A house number as people say it (1600: sixteen hundred), street words in full."""
    text = _HOUSE_NUMBER.sub(lambda m: en_num.year(int(m[1])), text)
    return _STREET_WORD.sub(lambda m: _STREET[m[1].lower()], text)


def expletive_en(say_as: SayAs, text: str) -> str:
    return EXPLETIVE_EN


def expletive_zh(say_as: SayAs, text: str) -> str:
    return EXPLETIVE_ZH


# --- durations ---------------------------------------------------------------------------------


def _duration(say_as: SayAs, text: str) -> dict[str, int]:
    """{"h": 1, "m": 30} from the text, ValueError when it is not a duration."""
    if _CLOCK_FIELDS.fullmatch(text):
        values = [int(v) for v in text.split(":")]
        order = say_as.format or {3: "h:m:s", 2: "h:m", 1: "s"}[len(values)]
        if order not in _DURATION_FORMATS:
            choices = ", ".join(_DURATION_FORMATS)
            raise ValueError(f"duration format {order!r} is not one of {choices}")
        names = order.split(":")
        if len(names) != len(values):
            raise ValueError(f"{text!r} does not have the fields of format {order!r}")
        return dict(zip(names, values, strict=True))
    for pattern in (_MARKED, _LETTERED):
        match = pattern.fullmatch(text)
        if match is not None and any(match.groupdict().values()):
            return {k: int(v) for k, v in match.groupdict().items() if v is not None}
    raise ValueError(f"{text[:40]!r} is not a duration (1:30, 1'21\", 2h 30m)")


def check_duration(say_as: SayAs, text: str) -> None:
    _duration(say_as, text)


def duration_en(say_as: SayAs, text: str) -> str:
    fields = _duration(say_as, text)
    words = [
        f"{en_num.cardinal(value)} {_UNIT_WORDS[name][0][value != 1]}"
        for name, value in fields.items()
        if value or len(fields) == 1
    ]
    if not words:
        return "zero seconds"
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def duration_zh(say_as: SayAs, text: str) -> str:
    fields = _duration(say_as, text)
    said = "".join(
        ("两" if value == 2 else zh_num.cardinal(str(value))) + _UNIT_WORDS[name][1]
        for name, value in fields.items()
        if value or len(fields) == 1
    )
    return said or "零秒"


def _full(pattern: re.Pattern[str], text: str) -> re.Match[str]:
    match = pattern.fullmatch(text)
    assert match is not None, "checked at parse time"
    return match
