"""English expansion: abbreviations, dates, times, money, units, numbers and symbols -> words.

Input is cleaned text (ASCII punctuation, single spaces). The rules in _RULES run in order;
each one turns its digits into words so later, more general rules never see them again.

Spelling choices (espeak-ng, the phonemizer Piper voices were trained with, was checked):
- "AM"/"PM" after the hour: espeak says "ay em"/"pee em". The split form "A M" is read
  with the article "a" (a schwa), so it is not used.
- 12:00 PM / 12 PM -> "noon", 12:00 AM / 12 AM -> "midnight": clearer than "twelve PM".
- 24-hour times: "23:15" -> "twenty-three fifteen", "10:00" -> "ten o'clock",
  "13:00" -> "thirteen hundred", "00:00" -> "midnight".
- Dates read US style, "November twenty-ninth, twenty twenty-six". Numeric d/m/y vs m/d/y is
  ambiguous: "a/b/yyyy" is month/day when a <= 12, otherwise day/month.
- A bare four-digit number is a cardinal ("1500" -> "one thousand five hundred"); years are
  only read in pairs inside a date ("November 2026", "2026-11-29") or a year range.
"""

import calendar
import re
from collections.abc import Callable
from typing import Final, NamedTuple

from edge_tts.text import english_numbers as num
from edge_tts.text.clean import joined, tidy

Replacement = str | Callable[[re.Match[str]], str]
Rule = tuple[re.Pattern[str], Replacement]

# Written numbers. Every pattern starts with a lookbehind that rejects a start inside a run
# of digits (or of comma groups), so "1,000,000,..." is scanned once, not once per position.
_INTEGER: Final = r"(?:(?<!\d,)\d{1,3}(?:,\d{3})++(?!\d)|\d++)"
_UNSIGNED: Final = rf"(?:(?<![\d.]){_INTEGER}(?:\.\d++)?|(?<![\w.])\.\d++)"
_SIGNED: Final = rf"(?:(?<![\w.)-])-)?{_UNSIGNED}"

_CLOSERS: Final = "\"')]"


# --- context helpers --------------------------------------------------------------------


def _next_word_capitalized(match: re.Match[str]) -> bool:
    after = match.string[match.end() : match.end() + 2]
    return after[:1] == " " and after[1:].isupper()


def _ends_sentence(match: re.Match[str], *, before_name: bool) -> bool:
    """Whether the period an abbreviation swallowed was also the end of the sentence."""
    after = match.string[match.end() : match.end() + 2]
    if not after or after[0] in _CLOSERS:
        return True
    # A title's period is followed by the capitalised name, which is no new sentence.
    return not before_name and after[0] == " " and (after[1:].isupper() or after[1:].isdigit())


def _period(match: re.Match[str], *, before_name: bool = False) -> str:
    """The sentence period to put back after an expansion that consumed group "dot"."""
    return "." if match.group("dot") and _ends_sentence(match, before_name=before_name) else ""


def _starts_sentence(text: str, index: int) -> bool:
    before = text[max(0, index - 2) : index].rstrip()
    return not before or before[-1] in ".!?:;\"'("


def _match_case(source: str, words: str) -> str:
    return words[:1].upper() + words[1:] if source[:1].isupper() else words


# --- abbreviations ----------------------------------------------------------------------

# Latin and short forms: (pattern, words, may end a sentence).
_SHORT_FORMS: Final = (
    (r"e\.g", "for example", False),
    (r"i\.e", "that is", False),
    (r"etc", "et cetera", True),
    (r"vs", "versus", False),
    (r"approx", "approximately", False),
    (r"a\.k\.a|aka", "also known as", False),
)


def _short_form_rule(pattern: str, words: str, may_end_sentence: bool) -> Rule:
    regex = re.compile(rf"(?<![\w.])(?:{pattern})(?P<dot>\.)?(?!\w)", re.IGNORECASE)

    def replace(match: re.Match[str]) -> str:
        period = _period(match) if may_end_sentence else ""
        return _match_case(match.group(), words) + period

    return regex, replace


# Titles are only expanded before a capitalised name ("Rev" alone may be a verb).
_TITLES: Final = {
    "Mr": "Mister",
    "Mrs": "Missus",
    "Ms": "Miz",
    "Prof": "Professor",
    "Mt": "Mount",
    "Capt": "Captain",
    "Sgt": "Sergeant",
    "Lt": "Lieutenant",
    "Rev": "Reverend",
}
_TITLE: Final = re.compile(rf"\b(?P<abbr>{'|'.join(_TITLES)})\b\.?(?= [A-Z])")

# Abbreviations after a name that can end a sentence: "Main Ave.", "John Smith Jr."
_SUFFIXES: Final = {
    "Jr": "Junior",
    "Sr": "Senior",
    "Ave": "Avenue",
    "Rd": "Road",
    "Blvd": "Boulevard",
    "Hwy": "Highway",
    "Inc": "Incorporated",
    "Ltd": "Limited",
}
_SUFFIX: Final = re.compile(rf"\b(?P<abbr>{'|'.join(_SUFFIXES)})\b(?P<dot>\.)?")

# "St." / "Dr." before a name vs after a street name: (name word, street word).
_NAME_OR_STREET: Final = {"St": ("Saint", "Street"), "Dr": ("Doctor", "Drive")}
# Between two capitalised words "Dr." is far more often a doctor than a drive.
_NAME_WHEN_AMBIGUOUS: Final = frozenset({"Dr"})
_NAME_OR_STREET_RE: Final = re.compile(
    r"(?:(?P<before>(?<![\w'])[A-Z0-9][\w']*+) )?\b(?P<abbr>St|Dr)\b(?P<dot>\.)?"
)
_NUMBER_ABBREVIATION: Final = re.compile(r"\b(?P<no>[Nn]o)\. ?(?=\d)")


def _title(match: re.Match[str]) -> str:
    return _TITLES[match.group("abbr")]


def _suffix(match: re.Match[str]) -> str:
    return _SUFFIXES[match.group("abbr")] + _period(match)


def _is_before_name(match: re.Match[str]) -> bool:
    if match.group("before") is None:
        return True
    if not _next_word_capitalized(match):
        return False
    # "Visit St. Louis" (sentence-initial word) vs "We took Main St. Then ..."
    return match.group("abbr") in _NAME_WHEN_AMBIGUOUS or _starts_sentence(
        match.string, match.start()
    )


def _name_or_street(match: re.Match[str]) -> str:
    name_word, street_word = _NAME_OR_STREET[match.group("abbr")]
    before = match.group("before")
    prefix = f"{before} " if before else ""
    if _is_before_name(match):
        return prefix + name_word + _period(match, before_name=True)
    return prefix + street_word + _period(match)


def _number_abbreviation(match: re.Match[str]) -> str:
    return _match_case(match.group("no"), "number ")


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
    return words if year else words + _period(match)


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
    return match.group() if words is None else words + _period(match)


def _hour_ampm(match: re.Match[str]) -> str:
    words = _twelve_hour(int(match["h"]), 0, match["ampm"])
    return match.group() if words is None else words + _period(match)


def _clock(match: re.Match[str]) -> str:
    words = _twenty_four_hour(int(match["h"]), int(match["m"]))
    seconds = int(match["s"] or 0)
    if words is None or seconds > 59:
        return match.group()
    if seconds:
        words += f" and {num.cardinal(seconds)} second{'' if seconds == 1 else 's'}"
    return words


# --- phone numbers and money -------------------------------------------------------------

_PHONE: Final = re.compile(r"(?<![\w-])(?:\(\d{3}\) ?|\d{3}-)?\d{3}-\d{4}(?![\w-])")
_DIGIT_GROUP: Final = re.compile(r"\d+")


def _phone(match: re.Match[str]) -> str:
    return ", ".join(num.digits(group) for group in _DIGIT_GROUP.findall(match.group()))


class _Currency(NamedTuple):
    major: str
    majors: str
    minor: str
    minors: str


_CURRENCIES: Final = {
    "$": _Currency("dollar", "dollars", "cent", "cents"),
    "€": _Currency("euro", "euros", "cent", "cents"),
    "£": _Currency("pound", "pounds", "penny", "pence"),
    "¥": _Currency("yen", "yen", "", ""),
}
_SYMBOL: Final = "[" + re.escape("".join(_CURRENCIES)) + "]"
_SCALE: Final = r"(?: (?P<scale>thousand|million|billion|trillion)\b)?"
_MONEY: Final = re.compile(
    rf"(?P<neg>(?<![\w.)-])-)?(?P<sym>{_SYMBOL}) ?(?P<amount>{_UNSIGNED}){_SCALE}"
)
# "5 €" / "5€", the continental way of writing euros and pounds.
_MONEY_AFTER: Final = re.compile(rf"(?P<amount>{_SIGNED}) ?(?P<sym>[€£])")
_MAX_MONEY_DIGITS: Final = 15


def _money_words(currency: _Currency, amount: str) -> str:
    whole, _, fraction = amount.replace(",", "").partition(".")
    if len(fraction) > 2 or len(whole) > _MAX_MONEY_DIGITS or (fraction and not currency.minor):
        return f"{num.number(amount)} {currency.majors}"
    units = int(whole or "0")
    cents = int(fraction.ljust(2, "0")) if fraction else 0
    parts = []
    if units or not cents:
        parts.append(f"{num.cardinal(units)} {currency.major if units == 1 else currency.majors}")
    if cents:
        parts.append(f"{num.cardinal(cents)} {currency.minor if cents == 1 else currency.minors}")
    return " and ".join(parts)


def _money(match: re.Match[str]) -> str:
    currency, amount = _CURRENCIES[match["sym"]], match["amount"]
    sign = "minus " if (match.groupdict().get("neg") or amount.startswith("-")) else ""
    amount = amount.lstrip("-")
    scale = match.groupdict().get("scale")
    if scale:
        return f"{sign}{num.number(amount)} {scale} {currency.majors}"
    return sign + _money_words(currency, amount)


# --- ordinals, units, ranges -------------------------------------------------------------

_ORDINAL: Final = re.compile(rf"(?<![\d.])(?P<n>{_INTEGER})(?i:st|nd|rd|th)\b")


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
    rf"(?P<a>{_SIGNED})(?:{_RANGE_JOIN}(?P<b>{_UNSIGNED}))? ?"
    rf"(?P<unit>{'|'.join(pattern for pattern, _, _ in _UNITS)}){_UNIT_END}"
)
# "A" is also a letter: only amps when the word before the number is not a capitalised label
# ("a 16 A fuse" but "Gate 5 A", "Apartment 16A").
_AMPS: Final = re.compile(rf"(?P<a>{_SIGNED}) ?A{_UNIT_END}")
_LABEL_WINDOW: Final = 24  # enough to see "Apartment " before the number
_RANGE: Final = re.compile(rf"(?<![\w.-])(?P<a>-?{_UNSIGNED}) ?- ?(?P<b>{_UNSIGNED})(?![\w-])")
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
    return f"{amount} {unit}{_period(match)}"


def _word_before(text: str, index: int) -> str:
    window = text[max(0, index - _LABEL_WINDOW) : index].rstrip()
    return window.rpartition(" ")[2]


def _amps(match: re.Match[str]) -> str:
    if _word_before(match.string, match.start())[:1].isupper():
        return match.group()
    unit = "amp" if num.is_one(match["a"]) else "amps"
    return f"{num.number(match['a'])} {unit}{_period(match)}"


def _range(match: re.Match[str]) -> str:
    first, last = match["a"], match["b"]
    if _YEAR_LIKE.fullmatch(first) and _YEAR_LIKE.fullmatch(last):
        return f"{num.year(int(first))} to {num.year(int(last))}"
    return _amount_words(first, last)


def _dotted(match: re.Match[str]) -> str:
    return " dot ".join(num.integer(part) for part in match.group().split("."))


def _cardinal(match: re.Match[str]) -> str:
    return num.number(match.group())


# --- symbols ------------------------------------------------------------------------------

# Comparisons, arrows and the heart: espeak-ng says nothing for < and >, so "Temperature
# < 5 degrees" lost its meaning. First, before "-" in "->" or "< -2" is read.
_COMPARISONS: Final[tuple[Rule, ...]] = (
    (re.compile(r" ?(?:->|=>|→) ?"), " to "),
    (re.compile(r" ?(?:<=|≤) ?"), " less than or equal to "),
    (re.compile(r" ?(?:>=|≥) ?"), " greater than or equal to "),
    (re.compile(r" ?(?:!=|<>|≠) ?"), " not equal to "),
    (re.compile(r"(?:(?<=\s)|^)<3+(?=$|[\s.,!?)])"), "heart"),  # "I <3 you"; "x<3" compares
    (re.compile(r" ?< ?"), " less than "),
    (re.compile(r" ?> ?"), " greater than "),
)
# Signs in front of a number, read before the number rules see it.
_NUMBER_SIGNS: Final[tuple[Rule, ...]] = (
    (re.compile(r"(?<![\w+])\+(?=\d)"), "plus "),
    (re.compile(r"~ ?(?=\d)"), "about "),
    (re.compile(r"# ?(?=\d)"), "number "),
)
# Symbols joining words or numbers; late, since the words they add lengthen every later pass.
_JOINING_SYMBOLS: Final[tuple[Rule, ...]] = (
    (re.compile(r" ?& ?"), " and "),
    (re.compile(r" ?@ ?"), " at "),
    (re.compile(r"(?<=[\w)]) ?\+ ?(?=[\w(])"), " plus "),
    (re.compile(r"(?<=[\w)]) ?= ?(?=[\w(-])"), " equals "),
)
# "MP3" -> "MP 3", "3D" -> "3 D": lets the number be read on its own.
_LETTER_DIGIT: Final = re.compile(r"(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")


def _unit(read: Callable[[re.Match[str]], str]) -> Callable[[re.Match[str]], str]:
    """A rule that reads one unit (a number, a date, an amount): its words joined, so no
    chunk is cut inside it ("minus one | thousand two hundred")."""
    return lambda match: joined(read(match))


_RULES: Final[tuple[Rule, ...]] = (
    *(_short_form_rule(*row) for row in _SHORT_FORMS),
    (_TITLE, _title),
    (_NAME_OR_STREET_RE, _name_or_street),
    (_SUFFIX, _suffix),
    (_NUMBER_ABBREVIATION, _number_abbreviation),
    *_COMPARISONS,
    *_NUMBER_SIGNS,
    (_ISO_DATE, _unit(_iso_date)),
    (_SLASH_DATE, _unit(_slash_date)),
    (_MONTH_DAY, _unit(_month_day)),
    (_DAY_MONTH, _unit(_day_month)),
    (_MONTH_YEAR, _unit(_month_year)),
    (_CLOCK_AMPM, _unit(_clock_ampm)),
    (_HOUR_AMPM, _unit(_hour_ampm)),
    (_CLOCK, _unit(_clock)),
    (_DOTTED, _unit(_dotted)),
    (_PHONE, _unit(_phone)),
    (_MONEY, _unit(_money)),
    (_MONEY_AFTER, _unit(_money)),
    (_ORDINAL, _unit(_ordinal)),
    (_DECADE, _unit(_decade)),
    (_FRACTION, _unit(_fraction)),
    (_MEASURE, _unit(_measure)),
    (_AMPS, _unit(_amps)),
    (_RANGE, _range),
    (_NUMBER_SLASH, " "),
    *_JOINING_SYMBOLS,
    (_LETTER_DIGIT, " "),
    (re.compile(_SIGNED), _unit(_cardinal)),
)


def expand(text: str) -> str:
    """Expand cleaned English text so that espeak reads it as a person would."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return tidy(text)
