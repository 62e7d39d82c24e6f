"""English dates and times into words (english.py's rules; its docstring says how each
is read): ISO, slash, month-day, day-month and month-year dates; 12- and 24-hour clocks."""

import calendar
import re
from collections.abc import Callable
from typing import Final

from edge_tts.text import english_numbers as num
from edge_tts.text.clean import period

# --- dates --------------------------------------------------------------------------------

MONTHS: Final = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_MONTH_NUMBERS: Final = {
    **{name: index for index, name in enumerate(MONTHS, 1)},
    **{name[:3]: index for index, name in enumerate(MONTHS, 1)},
    "Sept": 9,
}
# Longest first so "Sept" wins over "Sep" and "June" over "Jun".
_MONTH: Final = "|".join(sorted(_MONTH_NUMBERS, key=len, reverse=True))
_DAY_SUFFIX: Final = r"(?:st|nd|rd|th)?\b(?![:.]\d)"
_LEAP_YEAR: Final = 2000  # lets "Feb 29" through when no year is given

_ISO_DATE: Final = re.compile(
    r"(?<![\d-])(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})(?:(?P<t>T)(?=\d\d:\d\d)|(?![\d-]))"
)
_SLASH_DATE: Final = re.compile(r"(?<![\d/])(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<y>\d{4})(?![\d/])")
_MONTH_DAY: Final = re.compile(
    rf"\b(?P<month>{_MONTH})\b\.? (?P<day>\d{{1,2}}){_DAY_SUFFIX}(?:,? (?P<year>\d{{4}})\b)?"
)
_DAY_MONTH: Final = re.compile(
    rf"(?<![\d.,:/-])(?P<day>\d{{1,2}})(?:st|nd|rd|th)? (?P<of>of )?(?P<month>{_MONTH})\b"
    rf"(?P<dot>\.)?(?:,? (?P<year>\d{{4}})\b)?"
)
_MONTH_YEAR: Final = re.compile(rf"\b(?P<month>{_MONTH})\b\.? (?P<year>\d{{4}})\b(?![:.]\d)")


def _date_words(month: int, day: int, year: int | None) -> str | None:
    """ "November twenty-ninth[, twenty twenty-six]", or None for an impossible date."""
    if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year or _LEAP_YEAR, month)[1]:
        return None
    words = f"{MONTHS[month - 1]} {num.ordinal(day)}"
    return words if year is None else f"{words}, {num.year(year)}"


def _optional_int(text: str | None) -> int | None:
    return None if text is None else int(text)


def _iso_date(match: re.Match[str]) -> str:
    words = _date_words(int(match["m"]), int(match["d"]), int(match["y"]))
    if words is None:
        return match.group()
    return words + (" at " if match["t"] else "")


def _slash_date(match: re.Match[str]) -> str:
    first, second, year = int(match["a"]), int(match["b"]), int(match["y"])
    words = _date_words(first, second, year) or _date_words(second, first, year)
    return match.group() if words is None else words


def _month_day(match: re.Match[str]) -> str:
    month = _MONTH_NUMBERS[match["month"]]
    words = _date_words(month, int(match["day"]), _optional_int(match["year"]))
    return match.group() if words is None else words


def _day_month(match: re.Match[str]) -> str:
    month, day, year = _MONTH_NUMBERS[match["month"]], int(match["day"]), match["year"]
    words = _date_words(month, day, _optional_int(year))
    if words is None:
        return match.group()
    if match["of"]:
        year_words = f", {num.year(int(year))}" if year else ""
        words = f"{num.ordinal(day)} of {MONTHS[month - 1]}{year_words}"
    # Without a year the month's period may have been the sentence's.
    return words if year else words + period(match)


def _month_year(match: re.Match[str]) -> str:
    return f"{MONTHS[_MONTH_NUMBERS[match['month']] - 1]} {num.year(int(match['year']))}"


# --- times --------------------------------------------------------------------------------

_AMPM: Final = r"(?P<ampm>[AaPp])\.? ?[Mm]\b(?P<dot>\.)?"
_CLOCK_AMPM: Final = re.compile(rf"(?<![\d:.])(?P<h>\d{{1,2}}):(?P<m>\d{{2}}) ?{_AMPM}")
_HOUR_AMPM: Final = re.compile(rf"(?<![\d:.,])(?P<h>\d{{1,2}}) ?{_AMPM}")
_CLOCK: Final = re.compile(
    r"(?<![\d:.])(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2}))?(?![\d:]|\.\d)"
)


# Indexed by "is afternoon": "ten o'clock" but military-style "thirteen hundred".
_ON_THE_HOUR: Final = ("o'clock", "hundred")


def _minute_words(minute: int) -> str:
    return f"oh {num.cardinal(minute)}" if minute < 10 else num.cardinal(minute)


def _twelve_hour(hour: int, minute: int, ampm: str) -> str | None:
    if not 1 <= hour <= 12 or minute > 59:
        return None
    is_pm = ampm in "Pp"
    if hour == 12 and minute == 0:
        return "noon" if is_pm else "midnight"
    minutes = f" {_minute_words(minute)}" if minute else ""
    return f"{num.cardinal(hour)}{minutes} {'PM' if is_pm else 'AM'}"


def _twenty_four_hour(hour: int, minute: int) -> str | None:
    if minute > 59 or hour > 24 or (hour == 24 and minute):
        return None
    if minute:
        return f"{num.cardinal(hour)} {_minute_words(minute)}"
    if hour in (0, 24):
        return "midnight"
    return f"{num.cardinal(hour)} {_ON_THE_HOUR[hour > 12]}"


def _clock_ampm(match: re.Match[str]) -> str:
    words = _twelve_hour(int(match["h"]), int(match["m"]), match["ampm"])
    return match.group() if words is None else words + period(match)


def _hour_ampm(match: re.Match[str]) -> str:
    words = _twelve_hour(int(match["h"]), 0, match["ampm"])
    return match.group() if words is None else words + period(match)


def _clock(match: re.Match[str]) -> str:
    words = _twenty_four_hour(int(match["h"]), int(match["m"]))
    seconds = int(match["s"] or 0)
    if words is None or seconds > 59:
        return match.group()
    if seconds:
        words += f" and {num.cardinal(seconds)} second{'' if seconds == 1 else 's'}"
    return words


# In the order english.py runs them: a full date before its parts, a clock with AM/PM
# before a bare hour.
RULES: Final[tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...]] = (
    (_ISO_DATE, _iso_date),
    (_SLASH_DATE, _slash_date),
    (_MONTH_DAY, _month_day),
    (_DAY_MONTH, _day_month),
    (_MONTH_YEAR, _month_year),
    (_CLOCK_AMPM, _clock_ampm),
    (_HOUR_AMPM, _hour_ampm),
    (_CLOCK, _clock),
)
