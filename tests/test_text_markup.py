"""Plain text keeps its meaning: comparisons and the heart read as words (English and
Mandarin), markdown and inline HTML dropped (text/markup.py), or kept literal when
text.strip_markup is off."""

from __future__ import annotations

import pytest

from edge_tts.config import SynthesisSettings, TextSettings
from edge_tts.speech.routing import Router
from edge_tts.text.frontend import normalize
from edge_tts.text.markup import without_markup
from edge_tts.voice.base import SpeechOptions

from .support.fakes import FakeVoice

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Temperature < 5 degrees", "Temperature less than five degrees"),
        ("Temperature > 30 degrees", "Temperature greater than thirty degrees"),
        ("I <3 you", "I heart you"),
        ("x<3", "x less than three"),  # no space before it: a comparison
        ("x <= 4, y >= -2", "x less than or equal to four, y greater than or equal to minus two"),
        ("x ≤ 4, y ≥ 2", "x less than or equal to four, y greater than or equal to two"),
        ("a != b", "a not equal to b"),
        ("Kitchen -> hall", "Kitchen to hall"),
    ],
)
def test_comparisons_are_read_as_words_in_english(text: str, said: str) -> None:
    assert normalize(text) == said


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("温度<5度", "温度小于五度"),
        ("温度>30度", "温度大于三十度"),
        ("温度<=-5度", "温度小于等于负五度"),
        ("电量>=20%", "电量大于等于百分之二十"),
        ("x≠3", "x不等于三"),
    ],
)
def test_comparisons_are_read_as_words_in_mandarin(text: str, said: str) -> None:
    assert normalize(text, "zh") == said


@pytest.mark.parametrize(
    ("text", "stripped"),
    [
        ("**Warning:** the door is open", "Warning: the door is open"),
        ("__Note__ and *this* and _that_ and ~~not~~", "Note and this and that and not"),
        ("# Summary\nAll good.", "Summary.\nAll good."),
        ("### Done!", "Done!"),
        ("- kitchen\n- hall\n* garage\n+ attic", "kitchen.\nhall.\ngarage.\nattic."),
        ("> quoted words", "quoted words."),
        ("```python\nlights on\n```", "\nlights on\n"),
        ("Run `status` now", "Run status now"),
        ("See [the log](http://example.com/log) ![a cat](cat.png)", "See the log a cat"),
        ("<b>garage</b> open<br/>now", "garage open now"),
        ('<span class="x">Hi</span> <P>there</P>', "Hi  there"),
        ("5&nbsp;km &mdash; fast", "5\xa0km — fast"),
        ("---\nafter the rule", "\nafter the rule"),
    ],
)
def test_markdown_and_html_are_dropped_from_plain_text(text: str, stripped: str) -> None:
    assert without_markup(text) == stripped


@pytest.mark.parametrize(
    "text",
    [
        "2*3*4 is 24",  # arithmetic, not emphasis
        "my_var_name",
        "x<y and z>w",  # not HTML names: a comparison
        "- 5 degrees",  # a sign, not a bullet
        "> 5 minutes late",
        "#1 priority",
        "1. first\n2. second",
        "AT&T and R&D",
    ],
)
def test_what_only_looks_like_markup_is_kept(text: str) -> None:
    assert without_markup(text) == text


def _plan(text: str, settings: TextSettings | None = None) -> str:
    router = Router(SynthesisSettings(), text=settings)
    return " ".join(c.text for c in router.plan(text, FakeVoice(), SpeechOptions()))


def test_the_router_strips_plain_text_unless_told_to_keep_it_literal() -> None:
    assert _plan("**Alert:** <b>garage</b> open") == "Alert: garage open"
    literal = _plan("**Alert:** <b>garage</b>", TextSettings(strip_markup=False))
    assert literal == "**Alert:** less than b greater than garage less than /b greater than"
