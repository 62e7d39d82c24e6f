"""English number words."""

import pytest

from edge_tts.text import english_numbers as num

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (0, "zero"),
        (7, "seven"),
        (13, "thirteen"),
        (21, "twenty-one"),
        (40, "forty"),
        (100, "one hundred"),
        (101, "one hundred one"),
        (300, "three hundred"),
        (999, "nine hundred ninety-nine"),
        (1500, "one thousand five hundred"),
        (2024, "two thousand twenty-four"),
        (1_000_000, "one million"),
        (
            1_234_567,
            "one million two hundred thirty-four thousand five hundred sixty-seven",
        ),
        (2_000_000_001, "two billion one"),
        (-5, "minus five"),
        (
            10**18,
            "one zero zero zero zero zero zero zero zero zero zero zero zero zero zero zero "
            "zero zero zero",
        ),
    ],
)
def test_cardinal(value: int, words: str) -> None:
    assert num.cardinal(value) == words


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (1, "first"),
        (2, "second"),
        (3, "third"),
        (4, "fourth"),
        (5, "fifth"),
        (8, "eighth"),
        (9, "ninth"),
        (11, "eleventh"),
        (12, "twelfth"),
        (20, "twentieth"),
        (23, "twenty-third"),
        (29, "twenty-ninth"),
        (100, "one hundredth"),
        (101, "one hundred first"),
        (112, "one hundred twelfth"),
        (1000, "one thousandth"),
    ],
)
def test_ordinal(value: int, words: str) -> None:
    assert num.ordinal(value) == words


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (2024, "twenty twenty-four"),
        (2026, "twenty twenty-six"),
        (2010, "twenty ten"),
        (2000, "two thousand"),
        (2005, "two thousand five"),
        (1999, "nineteen ninety-nine"),
        (1905, "nineteen oh five"),
        (1900, "nineteen hundred"),
        (1066, "ten sixty-six"),
        (999, "nine hundred ninety-nine"),
    ],
)
def test_year(value: int, words: str) -> None:
    assert num.year(value) == words


@pytest.mark.parametrize(
    ("written", "words"),
    [
        ("21.5", "twenty-one point five"),
        ("3.14", "three point one four"),
        ("0.5", "zero point five"),
        (".5", "point five"),
        ("-5", "minus five"),
        ("1,234", "one thousand two hundred thirty-four"),
        ("007", "zero zero seven"),
        ("1" * 30, " ".join(["one"] * 30)),
    ],
)
def test_number(written: str, words: str) -> None:
    assert num.number(written) == words


@pytest.mark.parametrize(
    ("written", "singular"),
    [("1", True), ("-1", True), ("1.0", False), ("0", False), ("2", False)],
)
def test_is_one(written: str, singular: bool) -> None:
    assert num.is_one(written) is singular
