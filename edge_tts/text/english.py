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

import re
from collections.abc import Callable, Iterable
from typing import Final, NamedTuple

from edge_tts.text import english_dates as dates
from edge_tts.text import english_numbers as num
from edge_tts.text import english_units as units
from edge_tts.text.clean import joined, period, tidy
from edge_tts.text.english_units import SIGNED, UNSIGNED

Replacement = str | Callable[[re.Match[str]], str]
Rule = tuple[re.Pattern[str], Replacement]


# --- context helpers --------------------------------------------------------------------


def _next_word_capitalized(match: re.Match[str]) -> bool:
    after = match.string[match.end() : match.end() + 2]
    return after[:1] == " " and after[1:].isupper()


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
        end = period(match) if may_end_sentence else ""
        return _match_case(match.group(), words) + end

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
    return _SUFFIXES[match.group("abbr")] + period(match)


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
        return prefix + name_word + period(match, before_name=True)
    return prefix + street_word + period(match)


def _number_abbreviation(match: re.Match[str]) -> str:
    return _match_case(match.group("no"), "number ")


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
    rf"(?P<neg>(?<![\w.)-])-)?(?P<sym>{_SYMBOL}) ?(?P<amount>{UNSIGNED}){_SCALE}"
)
# "5 €" / "5€", the continental way of writing euros and pounds.
_MONEY_AFTER: Final = re.compile(rf"(?P<amount>{SIGNED}) ?(?P<sym>[€£])")
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


def _joined(rules: Iterable[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]]) -> list[Rule]:
    return [(pattern, _unit(read)) for pattern, read in rules]


_RULES: Final[tuple[Rule, ...]] = (
    *(_short_form_rule(*row) for row in _SHORT_FORMS),
    (_TITLE, _title),
    (_NAME_OR_STREET_RE, _name_or_street),
    (_SUFFIX, _suffix),
    (_NUMBER_ABBREVIATION, _number_abbreviation),
    *_COMPARISONS,
    *_NUMBER_SIGNS,
    *_joined(dates.RULES),
    *_joined((units.DOTTED,)),
    (_PHONE, _unit(_phone)),
    (_MONEY, _unit(_money)),
    (_MONEY_AFTER, _unit(_money)),
    *_joined(units.MEASURES),
    units.NUMBER_SLASH,
    *_JOINING_SYMBOLS,
    (_LETTER_DIGIT, " "),
    *_joined((units.CARDINAL,)),
)


def expand(text: str) -> str:
    """Expand cleaned English text so that espeak reads it as a person would."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return tidy(text)
