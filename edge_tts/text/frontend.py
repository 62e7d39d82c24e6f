"""The text front-end: message text in, short speakable chunks out."""

import re
from typing import Final

from edge_tts.text.clean import clean, is_speakable, tidy, unjoined
from edge_tts.text.languages import chunk_limit, expander_for
from edge_tts.text.scripts import check_scripts
from edge_tts.text.split import split_long, split_sentences, visible_length


class EmptyTextError(ValueError):
    """The text has nothing to speak: it is empty or only whitespace, punctuation or controls."""


# espeak-ng ignores "..." entirely (no pause, even the word gap goes), so an ellipsis becomes
# the punctuation it stands for: a sentence end before a capital, a closing bracket or quote
# or the end of the text, else a comma.
_ELLIPSIS_AT_END: Final = re.compile(r"\.\.\.(?=$|[)\]\"']| [A-Z0-9\"'(])")
_ELLIPSIS: Final = re.compile(r"\.\.\. ?")
_EXCERPT_CHARS: Final = 40


def _ellipses_to_pauses(text: str) -> str:
    text = _ELLIPSIS_AT_END.sub(".", text)
    return tidy(_ELLIPSIS.sub(", ", text))


def normalize(
    text: str, language: str = "en", *, placeholders: bool = False, units: bool = False
) -> str:
    """Clean text and expand numbers, units, dates and abbreviations for the language.

    Returns "" for text with nothing in it; never raises for odd input. `placeholders`:
    keep the router's placeholders for readings (clean()). `units`: keep the words of
    each normalized unit joined (clean.UNIT_JOINER), for `split_chunks`, which never cuts
    between them.
    """
    text = clean(text, placeholders=placeholders)
    expand = expander_for(language)
    if expand is not None:
        text = expand(text)
    text = _ellipses_to_pauses(text)
    return text if units else unjoined(text)


def _check_limits(max_chunk_chars: int, first_chunk_chars: int) -> None:
    if max_chunk_chars < 1 or first_chunk_chars < 1:
        raise ValueError(
            "chunk limits must be at least 1, got "
            f"max_chunk_chars={max_chunk_chars}, first_chunk_chars={first_chunk_chars}"
        )


def _speakable(chunks: list[str]) -> list[str]:
    return [chunk for chunk in chunks if is_speakable(chunk)]


def _shorten_first(chunks: list[str], first_chunk_chars: int, max_chunk_chars: int) -> list[str]:
    """Cut the first chunk at a clause boundary so the first audio starts sooner."""
    if visible_length(chunks[0]) <= first_chunk_chars:
        return chunks
    first = chunks[0]
    head = _speakable(split_long(first, first_chunk_chars))[0]
    # The exact rest, not the other pieces re-joined with spaces: Chinese has none.
    rest = first[first.index(head) + len(head) :].strip()
    clause_mark = re.match(r"[,:;]+", rest)  # one cut just before its comma: keep it on
    if clause_mark:
        head, rest = head + clause_mark.group(), rest[clause_mark.end() :].strip()
    return [head, *split_long(rest, max_chunk_chars), *chunks[1:]]


def prepare(
    text: str,
    language: str = "en",
    *,
    max_chunk_chars: int,
    first_chunk_chars: int,
) -> list[str]:
    """Normalize text and split it into chunks ready for synthesis, first chunk short.

    The limits have no defaults here: the daemon's are `synthesis.max_chunk_chars` and
    `synthesis.first_chunk_chars` (config), counted in English characters (a Chinese
    character counts 2.5: languages.chunk_limit). Raises UnsupportedScriptError for letters the
    language's voice cannot read, EmptyTextError when nothing speakable is left,
    ValueError for bad limits.
    """
    return split_chunks(
        normalize(text, language, units=True),
        language,
        max_chunk_chars=max_chunk_chars,
        first_chunk_chars=first_chunk_chars,
        source=text,
    )


def split_chunks(
    normalized: str,
    language: str,
    *,
    max_chunk_chars: int,
    first_chunk_chars: int,
    source: str | None = None,
) -> list[str]:
    """`prepare` for text normalized already (`normalize`, piece by piece for SSML: the
    router). `source`, the text before normalization, is what an error quotes."""
    _check_limits(max_chunk_chars, first_chunk_chars)
    max_chunk_chars = chunk_limit(max_chunk_chars, language)
    first_chunk_chars = chunk_limit(first_chunk_chars, language)
    check_scripts(normalized, language)
    if not is_speakable(normalized):
        excerpt = (normalized if source is None else source)[:_EXCERPT_CHARS]
        raise EmptyTextError(
            f"text has nothing speakable (empty, or only whitespace, punctuation or control "
            f"characters): {excerpt!r}"
        )
    chunks = _speakable(
        [
            chunk
            for sentence in split_sentences(normalized)
            for chunk in split_long(sentence, max_chunk_chars)
        ]
    )
    # Punctuation-only pieces are dropped: they carry no speech, only a pause.
    chunks = _shorten_first(chunks, first_chunk_chars, max_chunk_chars)
    return _speakable([unjoined(chunk).strip() for chunk in chunks])
