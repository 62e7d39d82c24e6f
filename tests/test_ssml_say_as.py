"""SSML `<say-as>` kinds and formats the vendors use (Polly, Azure, Google, Alexa): what
each one says, in English and in Mandarin, through the parser and the normalizer."""

from __future__ import annotations

import pytest

from edge_tts.text.document import Span
from edge_tts.text.frontend import normalize
from edge_tts.text.say_as import render
from edge_tts.text.ssml import SsmlError, parse

pytestmark = pytest.mark.unit


def said(element: str, language: str = "en") -> str:
    pieces = parse(f"<speak>{element}</speak>", max_chars=1000)
    span = pieces[0]
    assert isinstance(span, Span) and span.say_as is not None
    return normalize(render(span.say_as, span.text, language), language)


def say_as(kind: str, text: str, extra: str = "") -> str:
    return f'<say-as interpret-as="{kind}"{extra}>{text}</say-as>'


@pytest.mark.parametrize(
    ("element", "english", "mandarin"),
    [
        (say_as("fraction", "3/4"), "three quarters", "四分之三"),
        (say_as("fraction", "1/2"), "one half", "二分之一"),
        (say_as("fraction", "5/8"), "five eighths", "八分之五"),
        (say_as("fraction", "1/3"), "one third", "三分之一"),
        (say_as("fraction", "2 1/2"), "two and one half", "二又二分之一"),
        (say_as("fraction", "2+3/4"), "two and three quarters", "二又四分之三"),
        (say_as("unit", "10km"), "ten kilometers", "十公里"),
        (say_as("unit", "17.5lb"), "seventeen point five pounds", None),
        (say_as("unit", "5 kg"), "five kilograms", "五公斤"),
        (say_as("verbatim", "abc"), "eh B C", None),
        (say_as("address", "1600 Amphitheatre Pkwy"), "sixteen hundred Amphitheatre Parkway", None),
        (say_as("address", "12 Main St. Apt 4"), "twelve Main Street Apartment four", None),
        (say_as("name", "Jo Smith"), "Jo Smith", None),
        (
            say_as("duration", "1:30", ' format="h:m"'),
            "one hour and thirty minutes",
            "一小时三十分钟",
        ),
        (say_as("duration", "2:05", ' format="m:s"'), "two minutes and five seconds", "两分钟五秒"),
        (say_as("duration", "1:02:03"), "one hour, two minutes and three seconds", None),
        (say_as("duration", "1'21&quot;"), "one minute and twenty-one seconds", "一分钟二十一秒"),
        (say_as("duration", "2h 30m"), "two hours and thirty minutes", "两小时三十分钟"),
        (say_as("expletive", "darn"), "beep", "哔"),
        (say_as("bleep", "darn"), "beep", "哔"),
        (say_as("interjection", "wow"), "wow", None),
        (
            say_as("date", "1960-09-10", ' format="yyyymmdd" detail="1"'),
            "September tenth, nineteen sixty",
            "一九六零年九月十日",
        ),
        (say_as("date", "19600910", ' format="yyyymmdd"'), "September tenth, nineteen sixty", None),
        (
            say_as("date", "10-09-1960", ' format="dd-mm-yyyy"'),
            "September tenth, nineteen sixty",
            None,
        ),
        (say_as("date", "0910", ' format="mmdd"'), "September tenth", None),
        (say_as("time", "14:30", ' format="hms12"'), "two thirty PM", "下午两点三十分"),
        (say_as("time", "9:05", ' format="hms12"'), "nine oh five AM", None),
        (say_as("time", "14:30", ' format="hms24"'), "fourteen thirty", "十四点三十分"),
        (
            say_as("telephone", "(781) 771-7777", ' format="1"'),
            "seven eight one, seven seven one, seven seven seven seven",
            None,
        ),
        (
            say_as("currency", "$42.01", ' language="en-US"'),
            "forty-two dollars and one cent",
            None,
        ),
        (say_as("cardinal", "12", ' format="ymd"'), "twelve", "十二"),  # format: ignored
    ],
)
def test_what_each_say_as_says(element: str, english: str, mandarin: str | None) -> None:
    assert said(element) == english
    if mandarin is not None:
        assert said(element, "zh") == mandarin


@pytest.mark.parametrize(
    ("element", "reason"),
    [
        (say_as("fraction", "three quarters"), "is not a fraction"),
        (say_as("fraction", "1/0"), "divides by zero"),
        (say_as("unit", "km"), "is not a number and a unit"),
        (say_as("duration", "soon"), "is not a duration"),
        (say_as("duration", "1:30", ' format="q"'), "duration format 'q' is not one of"),
        (say_as("time", "14:30", ' format="hms36"'), "time format 'hms36' is not one of"),
        (say_as("date", "1960-09-10", ' format="qqq"'), "date format 'qqq' is not one of"),
    ],
)
def test_text_that_is_not_what_it_claims_is_refused(element: str, reason: str) -> None:
    with pytest.raises(SsmlError, match=reason):
        parse(f"<speak>{element}</speak>", max_chars=1000)
