"""Language-neutral cleaning."""

import pytest

from edge_tts.text.clean import clean, is_speakable

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("raw", "cleaned"),
    [
        # Controls go; newline and tab are whitespace.
        ("a\x00b\x07c", "abc"),
        ("line one\nline two\ttab", "line one line two tab"),
        ("a\r\n\r\nb", "a b"),
        ("field\x1fseparated", "field separated"),
        # Zero-width characters, BOM, soft hyphen, bidi marks.
        ("\ufeffHello", "Hello"),
        ("zero\u200bwidth\u200c\u200djoin\u2060", "zerowidthjoin"),
        ("soft\u00adhyphen", "softhyphen"),
        ("\u200eleft\u200f", "left"),
        # Odd whitespace.
        ("no\u00a0break", "no break"),
        ("thin\u2009space and\u202fnarrow", "thin space and narrow"),
        ("ideographic\u3000space", "ideographic space"),
        ("  padded   out  ", "padded out"),
        # Quotes.
        ("\u201cquoted\u201d and \u2018single\u2019", "\"quoted\" and 'single'"),
        ("don\u2019t", "don't"),
        ("\u00abguillemets\u00bb", '"guillemets"'),
        # Full-width punctuation and CJK brackets.
        ("你好，世界。", "你好,世界."),
        ("what？！", "what?"),
        ("note：this；that", "note:this;that"),
        ("（aside）", "(aside)"),
        ("「quote」", '"quote"'),
        ("\uff21\uff11", "A1"),
        # Ellipsis and dashes.
        ("wait\u2026", "wait..."),
        ("wait\u2026 what", "wait... what"),
        ("Hello \u2014 world", "Hello, world"),
        ("Hello\u2014world", "Hello, world"),
        ("Hello \u2013 world", "Hello, world"),
        ("Hello -- world", "Hello, world"),
        ("Paris\u2013London", "Paris-London"),
        ("5\u201310", "5-10"),
        ("5 \u2013 10", "5-10"),
        ("\u2212 5", "- 5"),
        ("\u2014 leading dash", "leading dash"),
        # Repeated punctuation.
        ("Stop!!!", "Stop!"),
        ("Really???", "Really?"),
        ("What?!", "What?"),
        ("What!?", "What?"),
        ("Well,,, ok", "Well, ok"),
        ("Hmm....", "Hmm..."),
        ("End..", "End."),
        ("etc.,", "etc,"),
        ("Hello , world .", "Hello, world."),
        ("costs .5", "costs .5"),
        (". . . leading", "leading"),
        # NFC and letter-like symbols.
        ("cafe\u0301", "caf\u00e9"),
        ("20\u2103", "20°C"),
        # Emoji and variation selectors.
        ("\U0001f514 Doorbell \u2764\ufe0f", "Doorbell"),
        # Lone surrogates and private use never reach the phonemizer.
        ("a\ud800b\ue000c", "abc"),
    ],
)
def test_clean(raw: str, cleaned: str) -> None:
    assert clean(raw) == cleaned


@pytest.mark.parametrize(
    ("text", "speakable"),
    [
        ("", False),
        ("   ", False),
        ("...", False),
        ("?!", False),
        ("$ %", False),
        ("a", True),
        ("5", True),
        ("é", True),
        ("中", True),
    ],
)
def test_is_speakable(text: str, speakable: bool) -> None:
    assert is_speakable(text) is speakable
