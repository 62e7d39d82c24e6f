"""Streamed text (an LLM's deltas) → complete sentences, as soon as each is known."""

from __future__ import annotations

from ..text import split_sentences


class SentenceBuffer:
    """Holds the text of a `synthesize-chunk` stream until a sentence of it is complete.

    A sentence is complete once the text after it has begun: only then can the splitter
    tell that "Dr." or "3." did not end it. The last one is complete at `finish()`.
    """

    def __init__(self) -> None:
        self._text = ""

    def add(self, piece: str) -> list[str]:
        """The sentences `piece` completed, in order (none yet: an empty list)."""
        self._text += piece
        sentences = split_sentences(self._text)
        if len(sentences) < 2:
            return []
        # The splitter folds whitespace, so the rest is found in the folded text; when it
        # is not a suffix there (a punctuation-only piece merged back), wait for more.
        folded = " ".join(self._text.split())
        last = sentences[-1]
        if not folded.endswith(last):
            return []
        trailing = " " if self._text[-1:].isspace() else ""  # "Hi. How " + "are": a space
        self._text = last + trailing
        return sentences[:-1]

    def finish(self) -> str:
        """What is left: the last sentence, complete now that no more text comes."""
        rest, self._text = self._text.strip(), ""
        return rest
