"""SSML `<say-as>`: a piece of text read as a kind of thing (a code spelled out, a date, a
phone number), in the language of the voice that reads it.

`check` says at parse time whether the text can be read so (a ValueError says why not);
`render` rewrites it, once the router knows the voice, into text the language's
normalizer reads as intended: words and characters, or a form it expands itself (a
clock time, an amount of money). Languages other than English and Mandarin get the text
as it is, their voice reads digits its own way.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from typing import Final

from . import chinese_numbers as zh_num
from . import english_numbers as en_num
from . import say_as_words as words
from .document import SayAs
from .english_dates import MONTHS
from .languages import primary_language

DATE_FORMATS: Final = ("mdy", "dmy", "ymd", "ydm", "md", "dm", "ym", "my", "y", "m", "d")
TIME_FORMATS: Final = ("hms12", "hms24")  # Azure's and Google's: a 12- or 24-hour reading
_LEAP_YEAR: Final = 2000  # a day and month without a year may be the 29th of February

_NUMBER: Final = re.compile(r"(?P<sign>[+-])?(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<frac>\d+))?")
_ORDINAL: Final = re.compile(r"(?P<n>\d{1,18})(?:st|nd|rd|th|\.)?", re.IGNORECASE)
_DATE_FIELD: Final = re.compile(r"\d+")
_DATE: Final = re.compile(r"\d{1,4}(?:[-/. ]+\d{1,4}){0,2}")
_TIME: Final = re.compile(
    r"(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2}))? ?(?P<ampm>[ap])?(?:\.?m\.?)?", re.IGNORECASE
)
_PHONE: Final = re.compile(r"\+?[\d().\- ]*\d[\d().\- ]*")
_DIGIT_GROUP: Final = re.compile(r"\d+")
_DIGITS: Final = re.compile(r"[\d .\-]*\d[\d .\-]*")
_AMOUNT: Final = r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
_UNITS: Final = r"USD|EUR|GBP|JPY|CNY|RMB"
_CODES: Final = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "JP¥", "CNY": "¥", "RMB": "¥"}
_CURRENCY: Final = re.compile(
    rf"(?P<neg>-)?(?:(?P<pre>[$€£¥]|{_UNITS}) ?(?P<amount>{_AMOUNT})"
    rf"|(?P<amount2>{_AMOUNT}) ?(?P<post>[$€£¥元]|{_UNITS}))"
)


def check(say_as: SayAs, text: str) -> None:
    """Raise ValueError saying why `text` cannot be read as `say_as` says. A format is
    read for a date, a time and a duration; on another kind (Google's telephone country
    code, a cardinal's) it chooses nothing and is ignored, as the W3C leaves it."""
    if say_as.kind == "time" and say_as.format is not None and say_as.format not in TIME_FORMATS:
        raise ValueError(f"time format {say_as.format!r} is not one of {', '.join(TIME_FORMATS)}")
    _READERS[say_as.kind][0](say_as, text.strip())


def render(say_as: SayAs, text: str, language: str) -> str:
    """`text` as words (or a form the normalizer expands) of `language`; `check`ed."""
    text = text.strip()
    readers = _READERS[say_as.kind]
    reader = {"en": readers[1], "zh": readers[2]}.get(primary_language(language))
    return text if reader is None else reader(say_as, text)


# --- characters -----------------------------------------------------------------------


def _any(say_as: SayAs, text: str) -> None:
    if not text:
        raise ValueError("has no text to read")


def _characters_en(say_as: SayAs, text: str) -> str:
    # espeak-ng reads a lone "A" as the article; "eh" is the letter's name.
    words = [
        en_num.digits(char) if char.isdigit() else "eh" if char in "Aa" else char.upper()
        for char in text
        if char.isalnum()
    ]
    return " ".join(words)


def _characters_zh(say_as: SayAs, text: str) -> str:
    # Latin letters are spelled by the Mandarin front-end; digits are read one by one.
    return "".join(zh_num.digits(c) if c.isdigit() else c for c in text if c.isalnum())


# --- numbers ----------------------------------------------------------------------------


def _check_digits(say_as: SayAs, text: str) -> None:
    if not _DIGITS.fullmatch(text):
        raise ValueError(f"{text[:40]!r} is not a string of digits")


def _check_number(say_as: SayAs, text: str) -> None:
    if not _NUMBER.fullmatch(text):
        raise ValueError(f"{text[:40]!r} is not a number (digits, optional sign and decimals)")


def _cardinal_en(say_as: SayAs, text: str) -> str:
    match = _full(_NUMBER, text)
    sign = {"-": "minus ", "+": "plus "}.get(match["sign"] or "", "")
    return sign + en_num.number(match["int"] + (f".{match['frac']}" if match["frac"] else ""))


def _cardinal_zh(say_as: SayAs, text: str) -> str:
    match = _full(_NUMBER, text)
    sign = {"-": "负", "+": "正"}.get(match["sign"] or "", "")
    return sign + zh_num.decimal(match["int"].replace(",", ""), match["frac"] or "")


def _check_ordinal(say_as: SayAs, text: str) -> None:
    if not _ORDINAL.fullmatch(text):
        raise ValueError(f"{text[:40]!r} is not an ordinal (digits, optionally 1st, 2nd, ...)")


def _ordinal_en(say_as: SayAs, text: str) -> str:
    return en_num.ordinal(int(_full(_ORDINAL, text)["n"]))


def _ordinal_zh(say_as: SayAs, text: str) -> str:
    return "第" + zh_num.cardinal(_full(_ORDINAL, text)["n"], liang=False)


# --- dates and times ----------------------------------------------------------------------


def _date_fields(say_as: SayAs, text: str) -> dict[str, int]:
    """{"y": 2026, "m": 12, "d": 1} from the text in the format given (else guessed: a
    four-digit field first is a year, then month and day; else month, day, year)."""
    order, widths = _date_format(say_as.format)
    if widths and text.isdigit() and len(text) == sum(widths):  # "20261201", "yyyymmdd"
        starts = [sum(widths[:i]) for i in range(len(widths))]
        text = " ".join(text[s : s + w] for s, w in zip(starts, widths, strict=True))
    if not _DATE.fullmatch(text):
        raise ValueError(f"{text[:40]!r} is not a date of digits (e.g. 2026-12-01)")
    values = _DATE_FIELD.findall(text)
    order = order or _default_order(values)
    if order not in DATE_FORMATS:
        raise ValueError(f"date format {order!r} is not one of {', '.join(DATE_FORMATS)}")
    if len(order) != len(values):
        raise ValueError(f"{text!r} does not have the {len(order)} field(s) of format {order!r}")
    fields = {name: int(value) for name, value in zip(order, values, strict=True)}
    _check_date(fields, text)
    return fields


def _date_format(given: str | None) -> tuple[str | None, list[int]]:
    """The field order of a format, and its fields' widths when it spells them: Google's
    "yyyymmdd" and "dd-mm-yyyy" are "ymd" and "dmy" (widths 4, 2, 2 and 2, 2, 4)."""
    if given is None:
        return None, []
    runs = re.findall(r"y+|m+|d+", given.lower())
    if not runs or "".join(runs) != re.sub(r"[^ymd]", "", given.lower()):
        return given, []  # refused below, with the formats we read
    spelled = any(len(run) > 1 for run in runs)
    return "".join(run[0] for run in runs), [len(run) for run in runs] if spelled else []


def _default_order(values: list[str]) -> str:
    year_first = len(values[0]) == 4
    return {3: "ymd" if year_first else "mdy", 2: "ym" if year_first else "md"}.get(
        len(values), "y" if year_first else "d"
    )


def _check_date(fields: dict[str, int], text: str) -> None:
    month, day, year = fields.get("m"), fields.get("d"), fields.get("y")
    if year is not None and not 1 <= year <= 9999:
        raise ValueError(f"{text!r}: no year {year}")
    if month is not None and not 1 <= month <= 12:
        raise ValueError(f"{text!r}: no month {month}")
    last = calendar.monthrange(year or _LEAP_YEAR, month)[1] if month else 31
    if day is not None and not 1 <= day <= last:
        raise ValueError(f"{text!r}: no day {day} in that month")


def _check_date_text(say_as: SayAs, text: str) -> None:
    _date_fields(say_as, text)


def _date_en(say_as: SayAs, text: str) -> str:
    fields = _date_fields(say_as, text)
    month, day, year = fields.get("m"), fields.get("d"), fields.get("y")
    words = []
    if month is not None:
        words.append(MONTHS[month - 1])
    if day is not None:
        words.append(en_num.ordinal(day) + ("," if year is not None else ""))
    if year is not None:
        words.append(en_num.year(year))
    return " ".join(words)


def _date_zh(say_as: SayAs, text: str) -> str:
    fields = _date_fields(say_as, text)
    parts = [
        (zh_num.digits(str(fields["y"])) + "年") if "y" in fields else "",
        (zh_num.cardinal(str(fields["m"]), liang=False) + "月") if "m" in fields else "",
        (zh_num.cardinal(str(fields["d"]), liang=False) + "日") if "d" in fields else "",
    ]
    return "".join(parts)


def _time(text: str) -> re.Match[str]:
    match = _TIME.fullmatch(text)
    if match is None:
        raise ValueError(f"{text[:40]!r} is not a time (e.g. 14:30, 2:30 pm)")
    hour, minute, second = int(match["h"]), int(match["m"]), int(match["s"] or 0)
    top = 12 if match["ampm"] else 23
    if not (1 if match["ampm"] else 0) <= hour <= top or minute > 59 or second > 59:
        raise ValueError(f"{text!r} is not a time of day")
    return match


def _check_time(say_as: SayAs, text: str) -> None:
    _time(text)


def _time_en(say_as: SayAs, text: str) -> str:
    match = _time(text)
    hour, ampm = int(match["h"]), f" {match['ampm'].upper()}M" if match["ampm"] else ""
    if say_as.format == "hms12" and not ampm:  # 14:30 read "two thirty PM"
        hour, ampm = (hour % 12 or 12), (" PM" if hour >= 12 else " AM")
    seconds = f":{match['s']}" if match["s"] else ""
    return f"{hour}:{match['m']}{seconds}{ampm}"  # the normalizer reads clocks


def _time_zh(say_as: SayAs, text: str) -> str:
    match = _time(text)
    hour, seconds = int(match["h"]), f":{match['s']}" if match["s"] else ""
    prefix = {"a": "上午", "p": "下午"}.get((match["ampm"] or "").lower(), "")
    if say_as.format == "hms12" and not prefix:
        hour, prefix = (hour % 12 or 12), ("下午" if hour >= 12 else "上午")
    return f"{prefix}{hour}:{match['m']}{seconds}"


# --- telephone and money --------------------------------------------------------------------


def _check_phone(say_as: SayAs, text: str) -> None:
    if not _PHONE.fullmatch(text):
        raise ValueError(f"{text[:40]!r} is not a telephone number (digits, + - ( ) . spaces)")


def _phone_en(say_as: SayAs, text: str) -> str:
    groups = ", ".join(en_num.digits(group) for group in _DIGIT_GROUP.findall(text))
    return ("plus " if text.startswith("+") else "") + groups


def _phone_zh(say_as: SayAs, text: str) -> str:
    groups = ",".join(zh_num.digits(group, yao=True) for group in _DIGIT_GROUP.findall(text))
    return ("加" if text.startswith("+") else "") + groups


def _currency(text: str) -> tuple[str, str, bool]:
    """(sign or code, amount, negative)."""
    match = _CURRENCY.fullmatch(text)
    if match is None:
        raise ValueError(
            f"{text[:40]!r} is not an amount of money ($12.50, 12.50 EUR, ¥30, 30元, USD 5)"
        )
    unit = match["pre"] or match["post"]
    return unit, (match["amount"] or match["amount2"]), bool(match["neg"])


def _check_currency(say_as: SayAs, text: str) -> None:
    _currency(text)


def _currency_en(say_as: SayAs, text: str) -> str:
    unit, amount, negative = _currency(text)
    sign = _CODES.get(unit, unit)
    if sign in ("¥", "元"):
        return ("minus " if negative else "") + f"{en_num.number(amount)} yuan"
    if sign == "JP¥":
        sign = "¥"
    return ("-" if negative else "") + sign + amount  # the normalizer reads money


def _currency_zh(say_as: SayAs, text: str) -> str:
    unit, amount, negative = _currency(text)
    sign = _CODES.get(unit, unit)
    minus = "负" if negative else ""
    if sign == "JP¥":
        integer, _, fraction = amount.replace(",", "").partition(".")
        return f"{minus}{zh_num.decimal(integer, fraction)}日元"
    return minus + ("¥" if sign == "元" else sign) + amount  # the normalizer reads money


def _full(pattern: re.Pattern[str], text: str) -> re.Match[str]:
    match = pattern.fullmatch(text)
    assert match is not None, "checked at parse time"
    return match


Reader = Callable[[SayAs, str], str]
Checker = Callable[[SayAs, str], None]

_READERS: Final[dict[str, tuple[Checker, Reader, Reader]]] = {
    "characters": (_any, _characters_en, _characters_zh),
    "spell-out": (_any, _characters_en, _characters_zh),
    "digits": (_check_digits, lambda s, t: en_num.digits(t), lambda s, t: zh_num.digits(t)),
    "cardinal": (_check_number, _cardinal_en, _cardinal_zh),
    "number": (_check_number, _cardinal_en, _cardinal_zh),
    "ordinal": (_check_ordinal, _ordinal_en, _ordinal_zh),
    "date": (_check_date_text, _date_en, _date_zh),
    "time": (_check_time, _time_en, _time_zh),
    "telephone": (_check_phone, _phone_en, _phone_zh),
    "currency": (_check_currency, _currency_en, _currency_zh),
    "verbatim": (_any, _characters_en, _characters_zh),  # Google's spell-out
    "fraction": (words.check_fraction, words.fraction_en, words.fraction_zh),
    "unit": (words.check_unit, words.unit, words.unit),
    "address": (words.check_any, words.address_en, words.as_written),
    "name": (words.check_any, words.as_written, words.as_written),
    "duration": (words.check_duration, words.duration_en, words.duration_zh),
    "expletive": (words.check_any, words.expletive_en, words.expletive_zh),
    "bleep": (words.check_any, words.expletive_en, words.expletive_zh),  # Google's name
    "interjection": (words.check_any, words.as_written, words.as_written),
}
