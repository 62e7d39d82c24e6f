"""Language-neutral cleaning: strip invisible characters, fold Unicode punctuation to ASCII,
collapse whitespace and repeated punctuation.

Everything here is a single linear pass (str.translate or a regex whose matches cannot start
inside a run of the characters they consume), so a 100 KB message costs milliseconds.
"""

import re
import unicodedata
from typing import Final

from edge_tts.text.readings import PLACEHOLDERS

# Explicit replacements, checked before the Unicode category rules below.
_REPLACEMENTS: Final[dict[str, str]] = {
    # Whitespace the category rules would miss or that must not vanish.
    "\t": " ",
    "\n": " ",
    "\r": " ",
    "\x0b": " ",
    "\x0c": " ",
    "\x85": " ",
    "\x1c": " ",
    "\x1d": " ",
    "\x1e": " ",
    "\x1f": " ",
    # Quotes and primes.
    "‘": "'",
    "’": "'",
    "‚": "'",
    "‛": "'",
    "ʼ": "'",
    "´": "'",
    "`": "'",
    "′": "'",
    "“": '"',
    "”": '"',
    "„": '"',
    "‟": '"',
    "″": '"',
    "«": '"',
    "»": '"',
    "‹": '"',
    "›": '"',
    "「": '"',
    "」": '"',
    "『": '"',
    "』": '"',
    "《": '"',
    "》": '"',
    "〈": '"',
    "〉": '"',
    # CJK punctuation outside the full-width ASCII block.
    "。": ".",
    "｡": ".",
    "、": ",",
    "､": ",",
    "【": "(",
    "】": ")",
    "〔": "(",
    "〕": ")",
    "・": " ",
    # Ellipsis and hyphen-like characters; en/em dashes are kept for _DASH below.
    "…": "...",
    "‥": "..",
    "‐": "-",
    "‑": "-",
    "‒": "-",
    "−": "-",
    "―": "—",
    "•": ",",
    # Letter-like symbols that hide a unit.
    "℃": "°C",
    "℉": "°F",
}

_FULLWIDTH_FIRST: Final = 0xFF01  # "！"
_FULLWIDTH_LAST: Final = 0xFF5E  # "～"
_FULLWIDTH_OFFSET: Final = 0xFEE0

# Emoji and pictographs: espeak would read their names aloud mid-announcement.
_PICTOGRAPH_RANGES: Final = ((0x1F000, 0x1FAFF), (0x2600, 0x27BF), (0xFE00, 0xFE0F))

# Unicode categories that carry no speech: controls, format (zero-width, BOM, bidi marks),
# private use, lone surrogates and unassigned code points.
_DROPPED_CATEGORIES: Final = frozenset({"Cc", "Cf", "Co", "Cs", "Cn"})
_SPACE_CATEGORIES: Final = frozenset({"Zs", "Zl", "Zp"})

# The translate table is memoised per code point; cap it so hostile input cannot grow it
# without bound in a long-running daemon.
_TABLE_CACHE_LIMIT: Final = 4096


def _translate(code: int) -> str | None:
    char = chr(code)
    if char in _REPLACEMENTS:
        return _REPLACEMENTS[char]
    if _FULLWIDTH_FIRST <= code <= _FULLWIDTH_LAST:
        return chr(code - _FULLWIDTH_OFFSET)
    if any(low <= code <= high for low, high in _PICTOGRAPH_RANGES):
        return None
    category = unicodedata.category(char)
    if category in _DROPPED_CATEGORIES:
        return None
    if category in _SPACE_CATEGORIES:
        return " "
    return char


class _CleanTable(dict[int, str | None]):
    """str.translate table computed lazily, so the whole Unicode range is never enumerated."""

    def __missing__(self, code: int) -> str | None:
        value = _translate(code)
        if len(self) < _TABLE_CACHE_LIMIT:
            self[code] = value
        return value


_TABLE: Final = _CleanTable()

# An en dash inside a word is a compound ("Paris–London"); between numbers, even spaced,
# it is a range ("5 – 10").
_JOINING_DASH: Final = re.compile(r"(?<=\w)–(?=\w)|(?<=\d) – (?=\d)")
# Any other dash marks a clause break; a comma gives the same pause and split point.
_CLAUSE_DASH: Final = re.compile(r" ?(?:[—–]|-{2,}+) ?")
_SPACE_BEFORE_PUNCT: Final = re.compile(r" (?=[.,;:!?])(?![.,;:!?]*+\w)")
_PUNCT_RUN: Final = re.compile(r"(?<![.,;:!?])[.,;:!?](?: ?[.,;:!?])++")
_LEADING_PUNCT: Final = re.compile(r"^[ .,;:!?]++(?!\d)")


def _collapse_punctuation(match: re.Match[str]) -> str:
    marks = match.group().replace(" ", "")
    if "?" in marks:
        return "?"
    if "!" in marks:
        return "!"
    if marks == "." * len(marks):
        return "..." if len(marks) >= 3 else "."
    # "etc.," / "a.m.:" - a period before a clause mark is almost always an abbreviation's.
    return marks[-1]


# Joins the words of one normalized unit (a number, a date, an amount: "minus one
# thousand two hundred") while the text is split, so no chunk ends inside one; a space
# again in the chunks (split.split_chunks via frontend). Not whitespace to str.split().
UNIT_JOINER: Final = "\u2060"  # WORD JOINER


# Chinese has no spaces: a unit's characters are joined one to the next, and the joiner
# between two of them stands for nothing (not for a space), in length as in the chunks.
_HAN: Final = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
HAN_JOINER: Final = re.compile(f"(?<=[{_HAN}]){UNIT_JOINER}(?=[{_HAN}])")


def joined(words: str) -> str:
    """The words of one normalized unit, joined so no cut falls between them."""
    return words.replace(" ", UNIT_JOINER)


def joined_characters(characters: str) -> str:
    """A Chinese unit ("一千二百"), each character joined to the next."""
    return UNIT_JOINER.join(characters)


def unjoined(text: str) -> str:
    return HAN_JOINER.sub("", text).replace(UNIT_JOINER, " ")


_CLOSERS: Final = "\"')]"


def _ends_sentence(match: re.Match[str], *, before_name: bool) -> bool:
    """Whether the period an abbreviation swallowed was also the end of the sentence."""
    after = match.string[match.end() : match.end() + 2]
    if not after or after[0] in _CLOSERS:
        return True
    # A title's period is followed by the capitalised name, which is no new sentence.
    return not before_name and after[0] == " " and (after[1:].isupper() or after[1:].isdigit())


def period(match: re.Match[str], *, before_name: bool = False) -> str:
    """The sentence period to put back after an expansion (an abbreviation, a unit, a
    time) that consumed its match's group "dot"."""
    return "." if match.group("dot") and _ends_sentence(match, before_name=before_name) else ""


def tidy(text: str) -> str:
    """Collapse whitespace, drop spaces before punctuation and reduce punctuation runs."""
    text = " ".join(text.split())
    text = _SPACE_BEFORE_PUNCT.sub("", text)
    text = _PUNCT_RUN.sub(_collapse_punctuation, text)
    return _LEADING_PUNCT.sub("", text)


_KEPT_PLACEHOLDERS: Final = re.compile(f"([{PLACEHOLDERS}])")


def clean(text: str, *, placeholders: bool = False) -> str:
    """Language-neutral cleaning; the result is NFC, ASCII punctuation, single spaces.

    Private-use characters are dropped, but with `placeholders` the ones the router put
    in for readings (readings.py; it took every private-use character out of the text
    it was given first)."""
    if placeholders:
        pieces = _KEPT_PLACEHOLDERS.split(text)  # odd indices: the placeholders
        text = "".join(p if i % 2 else p.translate(_TABLE) for i, p in enumerate(pieces))
    else:
        text = text.translate(_TABLE)
    text = unicodedata.normalize("NFC", text)
    text = " ".join(text.split())
    text = _JOINING_DASH.sub("-", text)
    text = _CLAUSE_DASH.sub(", ", text)
    return tidy(text)


_SPEAKABLE: Final = re.compile(r"[^\W_]")


def is_speakable(text: str) -> bool:
    """True when the text holds at least one letter or digit (any script)."""
    return _SPEAKABLE.search(text) is not None
