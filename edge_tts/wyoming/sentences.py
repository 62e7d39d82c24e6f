"""Streamed text (an LLM's deltas) → complete sentences, as soon as each is known."""

from __future__ import annotations

from ..text import split_sentences
from ..text.clean import is_speakable
from ..text.split import sentence_ends

# How much of the text before a piece can decide a sentence end the piece completes:
# more than the word before a period that the splitter looks at (12 characters), the
# marks and closing quotes, and a space.
_LOOK_BACK = 32


class SentenceBuffer:
    """Holds the text of a `synthesize-chunk` stream until a sentence of it is complete.

    A sentence is complete once the text after it has begun: only then can the splitter
    tell that "Dr." or "3." did not end it. The last one is complete at `finish()`.

    The work per piece is the piece and a short window before it: the whole text is
    split again only when the window shows a new sentence end with something to say
    after it, and then sentences go out and the text shrinks. (Splitting all the text
    on every piece made a long stream without a sentence end quadratic.)
    """

    def __init__(self) -> None:
        self._parts: list[str] = []  # the text so far, whitespace folded to single spaces
        self._tail = ""  # its last _LOOK_BACK characters
        self._end_unsaid = False  # an end was seen with nothing to say after it yet

    def add(self, piece: str) -> list[str]:
        """The sentences `piece` completed, in order (none yet: an empty list)."""
        folded = self._fold(piece)
        if not folded:
            return []
        self._parts.append(folded)
        window, start = self._tail + folded, len(self._tail)
        self._tail = window[-_LOOK_BACK:]
        # Only an end at the old text's last mark or later can be new: the ones before it
        # had the two characters after them already, so they were decided.
        ends = [end for end in sentence_ends(window) if end >= start - 1]
        decided = [end for end in ends if end + 1 < len(window)]  # the next word has begun
        said = is_speakable(folded)
        split = bool(ends) and is_speakable(window[ends[0] :])
        # 'Hi. "' has an end (the quote decided it) that waits for a word to say.
        unsaid = bool(decided) and not is_speakable(window[decided[-1] :])
        split = split or (self._end_unsaid and said)
        self._end_unsaid = (self._end_unsaid and not said) or unsaid
        return self._split() if split else []

    def finish(self) -> str:
        """What is left: the last sentence, complete now that no more text comes."""
        rest = "".join(self._parts).strip()
        self._parts, self._tail, self._end_unsaid = [], "", False
        return rest

    def _split(self) -> list[str]:
        text = "".join(self._parts)
        self._parts = [text]
        sentences = split_sentences(text)
        # A punctuation-only piece merged back leaves the last sentence no suffix of the
        # text: then wait for more.
        last = sentences[-1] if sentences else ""
        if len(sentences) < 2 or not text.rstrip(" ").endswith(last):
            return []
        rest = last + (" " if text.endswith(" ") else "")  # "Hi. How " + "are": a space
        self._parts, self._tail = [rest], rest[-_LOOK_BACK:]
        return sentences[:-1]

    def _fold(self, piece: str) -> str:
        """`piece` as it continues the folded text: each run of whitespace one space."""
        after_word = bool(self._tail) and not self._tail.endswith(" ")
        words = piece.split()
        if not words:
            return " " if piece and after_word else ""
        lead = " " if piece[0].isspace() and after_word else ""
        return lead + " ".join(words) + (" " if piece[-1].isspace() else "")
