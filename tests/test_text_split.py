"""Sentence splitting and long-sentence chunking."""

import pytest

from edge_tts.text import split_long, split_sentences

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("One. Two! Three?", ["One.", "Two!", "Three?"]),
        ("no trailing punctuation", ["no trailing punctuation"]),
        ("First one. second has no capital", ["First one. second has no capital"]),
        ("", []),
        ("   ", []),
        # Abbreviations.
        ("Dr. Smith is here. He left.", ["Dr. Smith is here.", "He left."]),
        ("Take e.g. this one. Then go.", ["Take e.g. this one.", "Then go."]),
        ("Main St. is closed. Use Elm.", ["Main St. is closed.", "Use Elm."]),
        ("Mr. and Mrs. Jones left.", ["Mr. and Mrs. Jones left."]),
        ("Cats vs. Dogs tonight.", ["Cats vs. Dogs tonight."]),
        ("See No. 5 and Nov. 29 for details.", ["See No. 5 and Nov. 29 for details."]),
        ("Apples, etc. The end.", ["Apples, etc.", "The end."]),
        # Decimals, times, initials.
        ("It is 3.5 m tall. Wow.", ["It is 3.5 m tall.", "Wow."]),
        ("At 9:30 we go. OK.", ["At 9:30 we go.", "OK."]),
        ("It was 5. Then 6.", ["It was 5.", "Then 6."]),
        ("J. R. R. Tolkien wrote it. Yes.", ["J. R. R. Tolkien wrote it.", "Yes."]),
        ("In the U.S. Army. Fine.", ["In the U.S. Army.", "Fine."]),
        # Mixed and repeated terminators.
        ("Really?! Yes!", ["Really?!", "Yes!"]),
        ("Wait... What now?", ["Wait...", "What now?"]),
        ("Wait... what now?", ["Wait... what now?"]),
        ("What? no way", ["What?", "no way"]),
        # Quotes stay with their sentence.
        ('He said "Stop!" Then he left.', ['He said "Stop!"', "Then he left."]),
        ('"Stop!" he said.', ['"Stop!" he said.']),
        ('"Go home." She said so.', ['"Go home."', "She said so."]),
        ("(It works.) Next.", ["(It works.)", "Next."]),
        # Punctuation-only pieces join a neighbour instead of standing alone.
        ("Hello. ...", ["Hello. ..."]),
        ("... Hello", ["... Hello"]),
        # Whitespace is collapsed.
        ("One.\n\n  Two.", ["One.", "Two."]),
    ],
)
def test_split_sentences(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


@pytest.mark.parametrize(
    ("sentence", "max_chars", "chunks"),
    [
        ("Short enough.", 60, ["Short enough."]),
        ("", 10, []),
        # Clause punctuation first; the comma stays on its chunk.
        (
            "When the door opens, the light turns on; then the alarm sounds.",
            30,
            ["When the door opens,", "the light turns on;", "then the alarm sounds."],
        ),
        (
            "Reminder: the dentist appointment is tomorrow.",
            40,
            ["Reminder:", "the dentist appointment is tomorrow."],
        ),
        (
            "One, two, three, four, five, six, seven.",
            20,
            ["One, two, three,", "four, five, six,", "seven."],
        ),
        ("Dash \u2014 split here please ok.", 12, ["Dash \u2014", "split here", "please ok."]),
        # Then before a conjunction.
        (
            "The washer finished and the dryer started because it was scheduled.",
            40,
            ["The washer finished", "and the dryer started", "because it was scheduled."],
        ),
        (
            "The garage is open but nobody is home which is unusual.",
            30,
            ["The garage is open", "but nobody is home", "which is unusual."],
        ),
        # Then between words.
        (
            "Supercalifragilistic words keep going on and on",
            20,
            ["Supercalifragilistic", "words keep going on", "and on"],
        ),
        # Word-level chunks are evened out instead of leaving a one-word orphan.
        (
            "The washing machine has finished its cycle now",
            40,
            ["The washing machine has", "finished its cycle now"],
        ),
        # A word longer than the limit is cut at the limit...
        ("a " + "x" * 30 + " b", 10, ["a", "x" * 10, "x" * 10, "x" * 10, "b"]),
        # ... or after an in-word mark in the second half of it.
        ("one-one-one-one", 10, ["one-one-", "one-one"]),
        ("你好，世界你好世界", 4, ["你好，", "世界你好", "世界"]),
        # Decimals, times and thousands separators are not clause breaks.
        (
            "It is 3.5, 9:30 and 1,234 in total here",
            18,
            ["It is 3.5,", "9:30", "and 1,234 in", "total here"],
        ),
    ],
)
def test_split_long(sentence: str, max_chars: int, chunks: list[str]) -> None:
    assert split_long(sentence, max_chars) == chunks


LONG_SENTENCES = [
    "Good morning, today will be cloudy with a high of eighteen degrees and a forty percent "
    "chance of rain, so take an umbrella; the wind will pick up in the afternoon, which may "
    "bring down branches, and the temperature will drop quickly after sunset because the sky "
    "clears.",
    " ".join(f"word{i}" for i in range(300)),
    "x" * 250 + " tail",
    "Tabs\tand\nnewlines   collapse, into single spaces; even here: yes.",
]


@pytest.mark.parametrize("sentence", LONG_SENTENCES)
@pytest.mark.parametrize("max_chars", [1, 5, 20, 60, 200])
def test_split_long_keeps_words_and_limit(sentence: str, max_chars: int) -> None:
    chunks = split_long(sentence, max_chars)
    assert "".join("".join(chunks).split()) == "".join(sentence.split())
    for chunk in chunks:
        assert chunk == chunk.strip() and chunk
        assert len(chunk) <= max_chars


def test_split_long_prefers_clause_boundaries() -> None:
    chunks = split_long(LONG_SENTENCES[0], 100)
    assert all(chunk[-1] in ",;:." for chunk in chunks)


def test_split_long_rejects_non_positive_limit() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        split_long("text", 0)
