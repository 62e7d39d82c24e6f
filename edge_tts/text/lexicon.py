"""A pronunciation lexicon: words and phrases the voices say wrong, with how to say them.

One entry a line (`text.lexicon` in the settings, or the lines of `text.lexicon_file`):

    # a comment
    I-95 = I ninety-five                  an alias: said instead, as text
    Nguyen = ipa: ŋwˈɪn                   phonemes for a Piper voice (espeak-ng IPA)
    重庆 = pinyin: chong2 qing4            pinyin with tones for the Mandarin voice
    read @en-us = ipa: ɹˈɛd               only where a voice of that language reads it
    Bremen @german = ipa: bʁˈeːmən        ... or that voice (its name in `voices`)

Matching, before the text is normalized (so `3号楼` and `I-95` can be entries): a phrase
starting or ending with a letter or digit of a spaced script (Latin, Greek, Cyrillic...)
matches only where no such letter or digit stands beside it; Chinese and Japanese text
has no spaces, so there a phrase matches anywhere. At each place the longest phrase
wins, and the text it says is not looked up again. A phrase in lower case matches in any
case ("nguyen" matches "Nguyen"); one with a capital matches only as written.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final

from .document import Document, Piece, Span
from .readings import Reading, reading
from .scripts import script_of

log = logging.getLogger(__name__)

MAX_FILE_BYTES: Final = 2 * 1024 * 1024  # a lexicon file larger than this is refused
_UNSPACED: Final = frozenset({"CJK", "HIRAGANA", "KATAKANA", "THAI"})  # no word boundaries
_SCOPE: Final = re.compile(r"(?P<phrase>.*?)\s+@(?P<scope>[\w-]+)")
_READING: Final = re.compile(r"(?P<alphabet>ipa|x-pinyin|pinyin)\s*:\s*(?P<phonemes>.*)")


class LexiconError(ValueError):
    """An entry that cannot be used: the message says which and why."""


@dataclass(frozen=True)
class Entry:
    phrase: str
    alias: str | None = None  # said instead, as text
    reading: Reading | None = None  # or said as these phonemes
    scope: str | None = None  # a language ("en", "zh-CN") or a voice's name; None: any
    where: str = field(default="", compare=False)  # "lexicon.txt line 3": for messages

    @property
    def key(self) -> str:
        """What the text must hold: the phrase, lower-cased when case does not matter."""
        return self.phrase if self.cased else self.phrase.lower()

    @property
    def cased(self) -> bool:
        return self.phrase != self.phrase.lower()


def parse_entry(line: str, where: str) -> Entry | None:
    """One line: an entry, or None for a blank line or a comment. LexiconError says what
    is wrong, with `where`."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    left, sep, right = line.partition("=")
    if not sep:
        raise LexiconError(f"{where}: expected 'PHRASE = READING', got {line[:60]!r}")
    scoped = _SCOPE.fullmatch(left.strip())
    phrase = " ".join((scoped["phrase"] if scoped else left).split())
    scope = scoped["scope"] if scoped else None
    if not phrase:
        raise LexiconError(f"{where}: no phrase before '='")
    said = right.strip()
    found = _READING.fullmatch(said)
    if found is None:
        if not said:
            raise LexiconError(f"{where}: no reading after '=' for {phrase!r}")
        return Entry(phrase, alias=said, scope=scope, where=where)
    alphabet = "ipa" if found["alphabet"] == "ipa" else "x-pinyin"
    try:
        return Entry(phrase, reading=reading(alphabet, found["phonemes"]), scope=scope, where=where)
    except ValueError as err:
        raise LexiconError(f"{where}: {found['alphabet']} {err}") from None


def parse_lines(lines: Iterable[str], source: str) -> list[Entry]:
    entries = (parse_entry(line, f"{source} line {n}") for n, line in enumerate(lines, 1))
    return [entry for entry in entries if entry is not None]


def load(inline: Iterable[str], file: Path | None) -> list[Entry]:
    """The entries given inline (`text.lexicon`), then those of the file; a later entry
    for the same phrase and scope wins. LexiconError for a bad entry or an unreadable
    file, saying which."""
    entries = [
        entry
        for n, line in enumerate(inline, 1)
        if (entry := parse_entry(line, f"text.lexicon item {n}")) is not None
    ]
    if file is not None:
        entries.extend(parse_lines(read_file(file).splitlines(), str(file)))
    for warning in duplicates(entries):
        log.warning("%s", warning)
    kept = {(entry.key, entry.scope): entry for entry in entries}
    return list(kept.values())


def duplicates(entries: Iterable[Entry]) -> list[str]:
    """A warning for each entry an entry after it replaces (the same phrase and scope):
    legal (a file may override the inline entries), but in one file most often a
    mistake the author does not see."""
    seen: dict[tuple[str, str | None], Entry] = {}
    warnings = []
    for entry in entries:
        earlier = seen.get((entry.key, entry.scope))
        if earlier is not None:
            warnings.append(
                f"{earlier.where}: {earlier.phrase!r} is given again at {entry.where}, which wins"
            )
        seen[(entry.key, entry.scope)] = entry
    return warnings


def read_file(file: Path) -> str:
    """A lexicon file's text; LexiconError when it cannot be read or is not UTF-8."""
    try:
        with file.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise LexiconError(f"cannot read the lexicon {file}: {err.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise LexiconError(f"the lexicon {file} is larger than {MAX_FILE_BYTES // 1024} KiB")
    try:
        return data.decode("utf-8-sig")  # a BOM (Windows' editors write one) is no text
    except UnicodeDecodeError as err:
        raise LexiconError(f"the lexicon {file} is not UTF-8 (byte {err.start})") from None


# Whether an entry applies where it matched: the router's say (the voice that would read
# it: its language and name, and the phonemes it reads).
Accepts = Callable[[Entry, Span], bool]


class Lexicon:
    """The entries in use. `replace` swaps them whole (SIGHUP), so a request being
    planned sees either the old entries or the new ones, never a mix."""

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self._set(entries)

    def replace(self, entries: Iterable[Entry]) -> None:
        self._set(entries)

    def __len__(self) -> int:
        return self._count

    def _set(self, entries: Iterable[Entry]) -> None:
        listed = list(entries)
        self._table, self._count = _table(listed), len(listed)

    def apply(self, document: Document, accepts: Accepts) -> Document:
        """The document with each entry's phrase, where it matches and `accepts` says it
        applies, replaced by its alias or its reading. Only plain text is looked at:
        not a <say-as>, nor a <phoneme>'s word."""
        table = self._table  # one table for the whole document, whatever replace() does
        if not table.children:
            return document
        pieces: list[Piece] = []
        for piece in document:
            if isinstance(piece, Span) and piece.plain:
                pieces.extend(_rewritten(piece, table, accepts))
            else:
                pieces.append(piece)
        return tuple(pieces)


class _Node:
    """A trie of the phrases by lower-cased character: matching at a place costs the
    length of the longest phrase there, whatever the number of entries."""

    __slots__ = ("children", "entries")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.entries: list[Entry] = []  # the phrases that end here


def _table(entries: Iterable[Entry]) -> _Node:
    root = _Node()
    for entry in entries:
        node = root
        for char in entry.phrase:
            node = node.children.setdefault(char.lower(), _Node())
        node.entries.append(entry)
    return root


def _rewritten(span: Span, table: _Node, accepts: Accepts) -> Iterator[Span]:
    text, start, i = span.text, 0, 0
    while i < len(text):
        match = _match(text, i, table, span, accepts)
        if match is None:
            i += 1
            continue
        entry, end = match
        if i > start:
            yield replace(span, text=text[start:i])
        written = text[i:end]
        if entry.alias is not None:
            yield replace(span, text=entry.alias, where=entry.where)
        else:
            yield replace(span, text=written, reading=entry.reading, where=entry.where)
        start = i = end
    if start < len(text):
        yield replace(span, text=text[start:])


def _match(
    text: str, i: int, table: _Node, span: Span, accepts: Accepts
) -> tuple[Entry, int] | None:
    """The longest entry whose phrase stands at `i`, on word boundaries, that applies."""
    ends: list[tuple[int, list[Entry]]] = []
    node, end = table, i
    while end < len(text) and (child := node.children.get(text[end].lower())) is not None:
        node, end = child, end + 1
        if node.entries:
            ends.append((end, node.entries))
    for end, entries in reversed(ends):
        written = text[i:end]
        if not _bounded(text, i, end):
            continue
        for entry in entries:
            if (not entry.cased or written == entry.phrase) and accepts(
                entry, replace(span, text=written)
            ):
                return entry, end
    return None


def _bounded(text: str, start: int, end: int) -> bool:
    """No letter or digit of a spaced script runs on past either end of the phrase."""
    if start > 0 and _spaced_word(text[start]) and _spaced_word(text[start - 1]):
        return False
    return not (end < len(text) and _spaced_word(text[end - 1]) and _spaced_word(text[end]))


def _spaced_word(char: str) -> bool:
    return char.isalnum() and script_of(char) not in _UNSPACED
