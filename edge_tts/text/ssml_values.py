"""The values SSML attributes take, as numbers: break times and strengths, prosody rates
and volumes, emphasis levels (ssml.py reads the elements; this module only the values)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

MAX_BREAK_S: Final = 10.0
# <break strength>, in seconds; W3C leaves the durations to the engine (these are Azure's).
BREAK_STRENGTHS: Final[Mapping[str, float]] = {
    "none": 0.0,
    "x-weak": 0.25,
    "weak": 0.5,
    "medium": 0.75,
    "strong": 1.0,
    "x-strong": 1.25,
}
RATES: Final[Mapping[str, float]] = {
    "x-slow": 0.5,
    "slow": 0.75,
    "medium": 1.0,
    "default": 1.0,
    "fast": 1.25,
    "x-fast": 1.5,
}
VOLUMES: Final[Mapping[str, float]] = {
    "silent": 0.0,
    "x-soft": 0.25,
    "soft": 0.5,
    "medium": 1.0,
    "default": 1.0,
    "loud": 1.5,
    "x-loud": 2.0,
}
RATE_RANGE: Final = (0.2, 5.0)  # one <prosody rate>, as a multiplier
VOLUME_RANGE: Final = (0.0, 4.0)  # one <prosody volume>, as a gain
# <emphasis level>: (rate, volume). A Piper voice has no stress control, so emphasis is a
# little slower and louder (and, as its own span, a chunk of its own: a short pause on
# each side); "reduced" the other way. W3C's default level is "moderate".
EMPHASIS: Final[Mapping[str, tuple[float, float]]] = {
    "strong": (0.85, 1.25),
    "moderate": (0.92, 1.12),
    "none": (1.0, 1.0),
    "reduced": (1.1, 0.8),
}

_TIME: Final = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*(ms|s)\s*")
_PERCENT: Final = re.compile(r"\s*([+-]?)(\d+(?:\.\d+)?)\s*%\s*")
_NUMBER: Final = re.compile(r"\s*(\d+(?:\.\d+)?)\s*")
_DECIBELS: Final = re.compile(r"\s*([+-]?\d+(?:\.\d+)?)\s*dB\s*")


def seconds(text: str) -> float | None:
    """ "500ms" -> 0.5, "1.5s" -> 1.5, and "3" -> 3 (Google Assistant's samples write a
    break's time without a unit: seconds); None when it is not a duration."""
    match = _TIME.fullmatch(text)
    if match is None:
        bare = _NUMBER.fullmatch(text)
        return None if bare is None else float(bare[1])
    return float(match[1]) / (1000 if match[2] == "ms" else 1)


def rate_value(text: str) -> float | None:
    percent = _percent(text)
    if percent is not None:
        return percent
    number = _NUMBER.fullmatch(text)
    return None if number is None else float(number[1])


def volume_value(text: str) -> float | None:
    decibels = _DECIBELS.fullmatch(text)
    if decibels is not None:
        return float(10 ** (float(decibels[1]) / 20))
    return _percent(text)


def _percent(text: str) -> float | None:
    """ "80%" -> 0.8, "+20%" -> 1.2, "-20%" -> 0.8."""
    match = _PERCENT.fullmatch(text)
    if match is None:
        return None
    sign, share = match[1], float(match[2]) / 100
    return 1 + share if sign == "+" else 1 - share if sign == "-" else share
