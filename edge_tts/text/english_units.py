"""English numbers with what they count into words (english.py's rules): ordinals,
decades, everyday fractions, amounts with units (a range of them too), amps, dotted
versions and addresses, number ranges and plain numbers; and the number patterns
english.py's other rules (money) share."""

import re
from collections.abc import Callable
from typing import Final

from edge_tts.text import english_numbers as num
from edge_tts.text.clean import period

Reader = tuple[re.Pattern[str], Callable[[re.Match[str]], str]]

# Written numbers. Every pattern starts with a lookbehind that rejects a start inside a run
# of digits (or of comma groups), so "1,000,000,..." is scanned once, not once per position.
INTEGER: Final = r"(?:(?<!\d,)\d{1,3}(?:,\d{3})++(?!\d)|\d++)"
UNSIGNED: Final = rf"(?:(?<![\d.]){INTEGER}(?:\.\d++)?|(?<![\w.])\.\d++)"
SIGNED: Final = rf"(?:(?<![\w.)-])-)?{UNSIGNED}"


# --- ordinals, units, ranges -------------------------------------------------------------

_ORDINAL: Final = re.compile(rf"(?<![\d.])(?P<n>{INTEGER})(?i:st|nd|rd|th)\b")


def _ordinal(match: re.Match[str]) -> str:
    digits = match["n"].replace(",", "")
    return match.group() if len(digits) > 18 else num.ordinal(int(digits))


# "1990s" / "the '80s" / "her 20s" -> "nineteen nineties" / "the eighties" / "her twenties".
# "10s" is left alone: it is more often ten seconds than the tens.
_DECADE: Final = re.compile(r"(?<![\w.,'])'?(?P<n>[2-9]0|\d{2}[1-9]0|\d{2}00)'?s\b")


def _decade(match: re.Match[str]) -> str:
    value = int(match["n"])
    words = num.year(value) if value >= 1000 else num.cardinal(value)
    return words[:-1] + "ies" if words.endswith("y") else words + "s"


# Only the everyday fractions; "24/7" or "50/50" are read as two numbers (_NUMBER_SLASH).
_FRACTIONS: Final = {
    "1/2": "one half",
    "1/3": "one third",
    "2/3": "two thirds",
    "1/4": "one quarter",
    "3/4": "three quarters",
}
_FRACTION: Final = re.compile(r"(?<![\d/.])(?:1/[234]|[23]/[34])(?![\d/]|\.\d)")
_NUMBER_SLASH: Final = re.compile(r"(?<=\d)/(?=\d)")


def _fraction(match: re.Match[str]) -> str:
    return _FRACTIONS.get(match.group(), match.group())


# (pattern, singular, plural). Case matters: "m" is meters, "M" is not a unit here.
_UNITS: Final = (
    (r"° ?C", "degree Celsius", "degrees Celsius"),
    (r"° ?F", "degree Fahrenheit", "degrees Fahrenheit"),
    (r"°", "degree", "degrees"),
    (r"%", "percent", "percent"),
    (r"km/h|kph|kmh", "kilometer per hour", "kilometers per hour"),
    (r"mph", "mile per hour", "miles per hour"),
    (r"m/s", "meter per second", "meters per second"),
    (r"kWh", "kilowatt hour", "kilowatt hours"),
    (r"Wh", "watt hour", "watt hours"),
    (r"mAh", "milliamp hour", "milliamp hours"),
    (r"kW", "kilowatt", "kilowatts"),
    (r"MW", "megawatt", "megawatts"),
    (r"W", "watt", "watts"),
    (r"mV", "millivolt", "millivolts"),
    (r"V", "volt", "volts"),
    (r"mA", "milliamp", "milliamps"),
    (r"km", "kilometer", "kilometers"),
    (r"cm", "centimeter", "centimeters"),
    (r"mm", "millimeter", "millimeters"),
    (r"m", "meter", "meters"),
    (r"mi", "mile", "miles"),
    (r"ft", "foot", "feet"),
    (r"kg", "kilogram", "kilograms"),
    (r"mg", "milligram", "milligrams"),
    (r"g", "gram", "grams"),
    (r"lbs?", "pound", "pounds"),
    (r"oz", "ounce", "ounces"),
    (r"ml|mL", "milliliter", "milliliters"),
    (r"l|L", "liter", "liters"),
    (r"TB", "terabyte", "terabytes"),
    (r"GB", "gigabyte", "gigabytes"),
    (r"MB", "megabyte", "megabytes"),
    (r"kB|KB", "kilobyte", "kilobytes"),
    (r"GHz", "gigahertz", "gigahertz"),
    (r"MHz", "megahertz", "megahertz"),
    (r"kHz", "kilohertz", "kilohertz"),
    (r"Hz", "hertz", "hertz"),
    (r"dB", "decibel", "decibels"),
    (r"hPa", "hectopascal", "hectopascals"),
    (r"PSI|psi", "P S I", "P S I"),
    (r"ms", "millisecond", "milliseconds"),
    (r"mins?", "minute", "minutes"),
    (r"secs?|s", "second", "seconds"),
    (r"hrs?|h", "hour", "hours"),
    (r"[x×]", "times", "times"),
)
_UNIT_TABLE: Final = tuple(
    (re.compile(pattern), singular, plural) for pattern, singular, plural in _UNITS
)
_UNIT_END: Final = r"(?P<dot>\.)?(?![\w°/'])"
_RANGE_JOIN: Final = r"(?: ?- ?| to )"
_MEASURE: Final = re.compile(
    rf"(?P<a>{SIGNED})(?:{_RANGE_JOIN}(?P<b>{UNSIGNED}))? ?"
    rf"(?P<unit>{'|'.join(pattern for pattern, _, _ in _UNITS)}){_UNIT_END}"
)
# "A" is also a letter: only amps when the word before the number is not a capitalised label
# ("a 16 A fuse" but "Gate 5 A", "Apartment 16A").
_AMPS: Final = re.compile(rf"(?P<a>{SIGNED}) ?A{_UNIT_END}")
_LABEL_WINDOW: Final = 24  # enough to see "Apartment " before the number
_RANGE: Final = re.compile(rf"(?<![\w.-])(?P<a>-?{UNSIGNED}) ?- ?(?P<b>{UNSIGNED})(?![\w-])")
# Versions and addresses, "1.2.3" / "192.168.1.1": not a decimal, so each part is a number.
_DOTTED: Final = re.compile(r"(?<![\d.])\d++(?:\.\d++){2,}+(?!\.?\d)")
_YEAR_LIKE: Final = re.compile(r"1[1-9]\d\d|20\d\d")


def _unit_words(unit: str, amount: str) -> str:
    for pattern, singular, plural in _UNIT_TABLE:
        if pattern.fullmatch(unit):
            return singular if num.is_one(amount) else plural
    raise AssertionError(f"unit {unit!r} matched the alternation but no table row")


def _amount_words(first: str, last: str | None) -> str:
    if last is None:
        return num.number(first)
    return f"{num.number(first)} to {num.number(last)}"


def _measure(match: re.Match[str]) -> str:
    amount = _amount_words(match["a"], match["b"])
    unit = _unit_words(match["unit"], match["b"] or match["a"])
    return f"{amount} {unit}{period(match)}"


def _word_before(text: str, index: int) -> str:
    window = text[max(0, index - _LABEL_WINDOW) : index].rstrip()
    return window.rpartition(" ")[2]


def _amps(match: re.Match[str]) -> str:
    if _word_before(match.string, match.start())[:1].isupper():
        return match.group()
    unit = "amp" if num.is_one(match["a"]) else "amps"
    return f"{num.number(match['a'])} {unit}{period(match)}"


def _range(match: re.Match[str]) -> str:
    first, last = match["a"], match["b"]
    if _YEAR_LIKE.fullmatch(first) and _YEAR_LIKE.fullmatch(last):
        return f"{num.year(int(first))} to {num.year(int(last))}"
    return _amount_words(first, last)


def _dotted(match: re.Match[str]) -> str:
    return " dot ".join(num.integer(part) for part in match.group().split("."))


def _cardinal(match: re.Match[str]) -> str:
    return num.number(match.group())


# Read as one unit each (english.py joins their words), in this order: an ordinal or a
# decade before a plain number, a measure's range before a bare range.
MEASURES: Final[tuple[Reader, ...]] = (
    (_ORDINAL, _ordinal),
    (_DECADE, _decade),
    (_FRACTION, _fraction),
    (_MEASURE, _measure),
    (_AMPS, _amps),
    (_RANGE, _range),  # bare: "1200-1500", as years when both look like one
)
DOTTED: Final[Reader] = (_DOTTED, _dotted)
# The slash between two numbers ("24/7") read as a pause.
NUMBER_SLASH: Final = (_NUMBER_SLASH, " ")
CARDINAL: Final[Reader] = (re.compile(SIGNED), _cardinal)
