"""Sentence and chunk splitting.

Works on any text, normalized or not: abbreviations, initials and decimals are recognised
here too, so a raw message still splits at real sentence ends only. Every chunk keeps its
trailing punctuation because the voice model uses it for intonation.

Chinese (and Japanese) writing puts no space after 。！？；，：、, which clean() folds to
ASCII: next to a CJK character those marks end a sentence or a clause without the space
that English needs, and no space is added where none was written.
"""

import re
import unicodedata
from typing import Final

from edge_tts.text.clean import HAN_JOINER, UNIT_JOINER, is_speakable

# A run of terminators plus closing quotes/brackets, followed by a space or the end. The
# lookbehind stops a match starting inside a run, keeping long "!!!!..." input linear.
_TERMINATOR: Final = re.compile(r"(?<![.!?])(?P<marks>[.!?]++)(?P<close>[\"')\]]*+)(?= |$)")

# A sentence end in CJK text: the terminators, ASCII (as clean() leaves them) or full-width,
# and closing quotes. It counts when a CJK character stands before it or after it.
_CJK_TERMINATOR: Final = re.compile(r"(?<![.!?;。！？；])[.!?;。！？；]++[\"')\]”’」』]*+")
_CJK: Final = (
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ffff"
)
_CJK_CHAR: Final = re.compile(f"[{_CJK}]")

# Words whose period never ends a sentence: they always introduce something.
_CONTINUES: Final = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "st", "mt", "capt", "sgt", "lt", "rev", "e.g", "i.e"}
    | {"vs", "cf", "approx", "ca", "a.k.a"}
)
# Words whose period does not end a sentence when a number follows ("No. 5", "Nov. 29").
_CONTINUES_BEFORE_NUMBER: Final = frozenset(
    {"no", "nr", "p", "pp", "vol", "ch", "fig", "jan", "feb", "mar", "apr", "jun", "jul"}
    | {"aug", "sep", "sept", "oct", "nov", "dec"}
)
_OPENERS: Final = "\"'(["
# Longer than any abbreviation above, so a truncated long word can never match one.
_WORD_WINDOW: Final = 12


def _word_before(text: str, end: int) -> str:
    window = text[max(0, end - _WORD_WINDOW) : end]
    return window.rpartition(" ")[2].lstrip(_OPENERS)


def _is_initial(word: str) -> bool:
    """ "J" in "J. Smith", "U.S" in "U.S. Army"."""
    letters = word.split(".")
    return all(len(part) == 1 and part.isalpha() for part in letters)


def _period_ends_sentence(text: str, match: re.Match[str], following: str) -> bool:
    if not (following.isupper() or following.isdigit() or following in _OPENERS):
        return False
    word = _word_before(text, match.start()).lower()
    if word in _CONTINUES or (following.isdigit() and word in _CONTINUES_BEFORE_NUMBER):
        return False
    return not (following.isupper() and _is_initial(word))


def _is_boundary(text: str, match: re.Match[str]) -> bool:
    following = text[match.end() + 1 : match.end() + 2]
    if not following:
        return True
    if "!" in match["marks"] or "?" in match["marks"]:
        # '"Stop!" he said.' - quoted speech goes on after the closing quote.
        return not (match["close"] and following.islower())
    return _period_ends_sentence(text, match, following)


def _touches_cjk(text: str, match: re.Match[str]) -> bool:
    before = text[match.start() - 1 : match.start()]
    after = text[match.end() : match.end() + 2].lstrip(" ")[:1]
    return bool(_CJK_CHAR.match(before) or _CJK_CHAR.match(after))


def _sentence_ends(text: str) -> list[int]:
    ends = [m.end() for m in _TERMINATOR.finditer(text) if _is_boundary(text, m)]
    if text.isascii() or not _CJK_CHAR.search(text):
        return ends
    cjk_ends = (m.end() for m in _CJK_TERMINATOR.finditer(text) if _touches_cjk(text, m))
    return sorted({*ends, *cjk_ends})


def sentence_ends(folded: str) -> list[int]:
    """Where sentences end (after their marks and closing quotes) in text whose whitespace
    is folded to single spaces. Each end depends only on the _WORD_WINDOW characters
    before its marks and the two after them, so a window of a text has the same ends."""
    return _sentence_ends(folded)


def _merge_unspeakable(pieces: list[str]) -> list[str]:
    """Attach punctuation-only pieces to a neighbour instead of returning them alone."""
    merged: list[str] = []
    pending = ""
    for piece in pieces:
        if not is_speakable(piece):
            if merged:
                merged[-1] = f"{merged[-1]} {piece}"
            else:
                pending = f"{pending} {piece}".strip()
            continue
        merged.append(f"{pending} {piece}".strip())
        pending = ""
    if pending:
        merged.append(pending)
    return merged


def split_sentences(text: str) -> list[str]:
    """Split text into sentences, each keeping its final punctuation and closing quotes."""
    text = " ".join(text.split())
    pieces: list[str] = []
    start = 0
    for end in _sentence_ends(text):
        pieces.append(text[start:end].strip())
        start = end
    pieces.append(text[start:].strip())
    return _merge_unspeakable([piece for piece in pieces if piece])


# Split points, most preferred first: after clause punctuation, before a conjunction,
# between words. Each matches the single space it splits at (split_long collapses
# whitespace first), or nothing after a clause mark in CJK text, which has no space there.
_CLAUSE_BREAK: Final = re.compile(
    rf"(?<=[,;:—–，、：；]) |(?<=[，、：；])(?! )|(?<=[,;:])(?=[{_CJK}])|(?<=[{_CJK}][,;:])(?! )"
)
_CONJUNCTIONS: Final = (
    "and",
    "but",
    "or",
    "nor",
    "so",
    "because",
    "which",
    "who",
    "while",
    "when",
    "where",
    "whereas",
    "although",
    "though",
    "unless",
    "until",
)
_CONJUNCTION_BREAK: Final = re.compile(rf" (?=(?:{'|'.join(_CONJUNCTIONS)})\b)")
_WORD_BREAK: Final = re.compile(" ")
_LEVELS: Final = (_CLAUSE_BREAK, _CONJUNCTION_BREAK, _WORD_BREAK)
_MAX_BALANCED_CHUNKS: Final = 8


def _pieces(text: str, split_point: re.Pattern[str]) -> list[str]:
    """Text cut after each match of split_point: every piece but the last ends with the
    separator it was cut at (a space, or nothing in CJK text)."""
    pieces: list[str] = []
    start = 0
    for match in split_point.finditer(text):
        if match.end() > start:
            pieces.append(text[start : match.end()])
            start = match.end()
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def visible_length(text: str) -> int:
    """Its length in the chunk it ends up in: a joiner inside a Chinese unit is nothing
    there (clean.unjoined), one between English words a space."""
    return len(text) - len(HAN_JOINER.findall(text))


def _greedy(pieces: list[str], width: int) -> list[str]:
    """Join neighbouring pieces while the result, without its trailing separator, fits."""
    packed: list[str] = []
    current = ""
    for piece in pieces:
        if current and visible_length(current) + visible_length(piece.rstrip(" ")) <= width:
            current += piece
            continue
        if current:
            packed.append(current.rstrip(" "))
        current = piece
    if current:
        packed.append(current.rstrip(" "))
    return packed


def _pack(pieces: list[str], max_chars: int) -> list[str]:
    """As few chunks as greedy packing needs, but as even as possible.

    Plain greedy packing leaves orphans ("... finished its" + "cycle,"); the narrowest width
    that still needs no more chunks spreads the words evenly. The chunk count only falls as
    the width grows, so a binary search finds it. Past a few chunks an orphan no longer
    matters, and the search is skipped to keep huge inputs cheap.
    """
    greedy = _greedy(pieces, max_chars)
    fewest = len(greedy)
    if fewest > _MAX_BALANCED_CHUNKS:
        return greedy
    low, high = 1, max_chars
    while low < high:
        middle = (low + high) // 2
        if len(_greedy(pieces, middle)) <= fewest:
            high = middle
        else:
            low = middle + 1
    return _greedy(pieces, low)


# Where a word with no spaces in it may be cut: between the words of a unit (clean.
# UNIT_JOINER: a number longer than a whole chunk), else after these marks, else anywhere.
_UNIT_BREAK: Final = re.compile("\u2060")
_IN_WORD_BREAK: Final = re.compile(r"[-:/_.,;!?·、，。；：！？]")


def _cut_word(word: str, max_chars: int) -> list[str]:
    """A run without spaces ("1-1-1-...", Chinese text): cut after an in-word mark in the
    second half of the limit, else at the limit, never before a combining mark."""
    pieces: list[str] = []
    while visible_length(word) > max_chars:
        cut = _cut_in(word, max_chars) if _CJK_CHAR.search(word) else _cut_latin(word, max_chars)
        while cut > 1 and unicodedata.combining(word[cut]):
            cut -= 1
        pieces.append(word[:cut])
        word = word[cut:]
    return [*pieces, word] if word else pieces


def _cut_latin(word: str, max_chars: int) -> int:
    """Between the words of a unit, else after an in-word mark, else at the limit."""
    marks = [m.end() for m in _UNIT_BREAK.finditer(word, max_chars // 2, max_chars)] or [
        m.end() for m in _IN_WORD_BREAK.finditer(word, max_chars // 2, max_chars)
    ]
    return marks[-1] if marks else max_chars


def _cut_in(word: str, max_chars: int) -> int:
    """Chinese: after an in-word mark in the second half of the limit, else between two
    characters there, else anywhere before it, never inside a unit (its characters
    joined: a number, a date) unless the unit alone is longer than a chunk."""
    hidden = {m.start() for m in HAN_JOINER.finditer(word)}
    limit, half, seen = len(word), 1, 0
    for index in range(len(word)):
        seen += index not in hidden
        if seen == max_chars // 2 + 1 and half == 1:
            half = index
        if seen > max_chars:
            limit = index
            break
    cuts = range(limit, 0, -1)
    inside = {i for i in cuts if i - 1 in hidden or i in hidden or word[i - 1] == UNIT_JOINER}
    outside = [i for i in cuts if i not in inside]
    late = [i for i in outside if i >= half]
    marked = [i for i in late if _IN_WORD_BREAK.match(word, i - 1)]
    joined = [i for i in cuts if i - 1 in hidden]
    return next(iter(marked or late or outside or joined), limit)


def _split(text: str, max_chars: int, level: int) -> list[str]:
    if visible_length(text) <= max_chars:
        return [text]
    if level == len(_LEVELS):
        return _cut_word(text, max_chars)
    pieces = _pieces(text, _LEVELS[level])
    chunks: list[str] = []
    for packed in _pack(pieces, max_chars):
        chunks.extend(_split(packed, max_chars, level + 1))
    return chunks


def split_long(sentence: str, max_chars: int) -> list[str]:
    """Split a sentence into chunks of at most max_chars characters.

    Prefers clause punctuation (, ; : — –, and in CJK text also without a space after
    it), then the space before a conjunction, then any space; a word longer than
    max_chars (text without spaces: long number runs, Chinese) is cut after an in-word
    mark, else at the limit. No chunk is ever longer. Whitespace
    is collapsed; the characters and their order are unchanged.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    text = " ".join(sentence.split())
    return _split(text, max_chars, 0) if text else []
