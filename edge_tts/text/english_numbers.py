"""English number words: cardinals, ordinals, years, decimals and digit strings.

US style throughout: no "and" inside numbers ("one hundred one"), hyphenated tens
("twenty-one"), "point" for the decimal separator with the fraction read digit by digit.
"""

from typing import Final

_ONES: Final = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
)
_TENS: Final = (
    "",
    "",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
)
_SCALES: Final = (
    (10**15, "quadrillion"),
    (10**12, "trillion"),
    (10**9, "billion"),
    (10**6, "million"),
    (10**3, "thousand"),
)
# Past the largest scale a number is an identifier, not a quantity: read its digits.
# Keeping integer strings this short also stays far below int()'s 4300-digit limit.
_MAX_CARDINAL_DIGITS: Final = 18

_IRREGULAR_ORDINALS: Final = {
    "one": "first",
    "two": "second",
    "three": "third",
    "five": "fifth",
    "eight": "eighth",
    "nine": "ninth",
    "twelve": "twelfth",
}


def _below_hundred(n: int) -> str:
    if n < 20:
        return _ONES[n]
    tens, ones = divmod(n, 10)
    return _TENS[tens] + (f"-{_ONES[ones]}" if ones else "")


def _below_thousand(n: int) -> str:
    hundreds, rest = divmod(n, 100)
    parts = [f"{_ONES[hundreds]} hundred"] if hundreds else []
    if rest:
        parts.append(_below_hundred(rest))
    return " ".join(parts)


def cardinal(n: int) -> str:
    """3 -> "three", 1500 -> "one thousand five hundred", -5 -> "minus five"."""
    if n < 0:
        return "minus " + cardinal(-n)
    if n == 0:
        return "zero"
    if n >= 10**_MAX_CARDINAL_DIGITS:
        return digits(str(n))
    parts = []
    for value, name in _SCALES:
        count, n = divmod(n, value)
        if count:
            parts.append(f"{_below_thousand(count)} {name}")
    if n:
        parts.append(_below_thousand(n))
    return " ".join(parts)


def ordinal(n: int) -> str:
    """1 -> "first", 23 -> "twenty-third", 101 -> "one hundred first"."""
    words = cardinal(n)
    cut = max(words.rfind(" "), words.rfind("-")) + 1
    head, last = words[:cut], words[cut:]
    if last in _IRREGULAR_ORDINALS:
        return head + _IRREGULAR_ORDINALS[last]
    if last.endswith("y"):
        return head + last[:-1] + "ieth"
    return head + last + "th"


def year(n: int) -> str:
    """Read a four-digit year in pairs: 2024 -> "twenty twenty-four", 1905 -> "nineteen oh five".

    Round thousands and the first decade of a millennium are read as cardinals
    ("two thousand", "two thousand five") because that is how they are spoken.
    """
    if not 1000 <= n <= 9999:
        return cardinal(n)
    century, rest = divmod(n, 100)
    if n % 1000 == 0 or (century % 10 == 0 and rest < 10):
        return cardinal(n)
    if rest == 0:
        return f"{cardinal(century)} hundred"
    if rest < 10:
        return f"{cardinal(century)} oh {_ONES[rest]}"
    return f"{cardinal(century)} {_below_hundred(rest)}"


def digits(text: str) -> str:
    """Read each digit on its own: "007" -> "zero zero seven"; non-digits are skipped."""
    return " ".join(_ONES[int(ch)] for ch in text if "0" <= ch <= "9")


def integer(text: str) -> str:
    """Words for an unsigned digit string, commas allowed: "1,200" -> "one thousand two hundred".

    A leading zero ("007") or an implausibly long number is read digit by digit.
    """
    plain = text.replace(",", "")
    if not plain:
        return ""
    if (len(plain) > 1 and plain[0] == "0") or len(plain) > _MAX_CARDINAL_DIGITS:
        return digits(plain)
    return cardinal(int(plain))


def number(text: str) -> str:
    """Words for a written number: "-1,234.5" -> "minus one thousand two hundred thirty-four
    point five", ".5" -> "point five"."""
    sign = "minus " if text.startswith("-") else ""
    whole, _, fraction = text.lstrip("-").partition(".")
    words = [integer(whole)] if whole else []
    if fraction:
        words.append(f"point {digits(fraction)}")
    return sign + " ".join(words)


def is_one(text: str) -> bool:
    """True when a written number takes a singular unit ("1 km", "-1 °C" but not "1.0 km")."""
    return text.lstrip("-") == "1"
