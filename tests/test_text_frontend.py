"""prepare(): normalize, split into sentences and chunks, keep the first chunk short."""

import random
import re
import unicodedata

import pytest

from edge_tts.text import EmptyTextError, UnsupportedScriptError
from edge_tts.text import prepare as _prepare
from edge_tts.text.frontend import normalize
from edge_tts.text.languages import chunk_limit, expander_for, primary_language
from edge_tts.text.scripts import readable_scripts, script_of

pytestmark = pytest.mark.unit


def prepare(
    text: str, language: str = "en", max_chunk_chars: int = 200, first_chunk_chars: int = 60
) -> list[str]:
    """The front-end with the limits these cases were written for (the daemon passes its
    settings')."""
    return _prepare(
        text, language, max_chunk_chars=max_chunk_chars, first_chunk_chars=first_chunk_chars
    )


@pytest.mark.parametrize(
    ("text", "chunks"),
    [
        ("The front door has been unlocked.", ["The front door has been unlocked."]),
        (
            "Your battery is at 15 percent. Please charge the vehicle soon.",
            ["Your battery is at fifteen percent.", "Please charge the vehicle soon."],
        ),
        (
            "Warning! Tire pressure low on the front left tire: 28 PSI.",
            ["Warning!", "Tire pressure low on the front left tire: twenty-eight P S I."],
        ),
        # Abbreviations and decimals do not end sentences.
        (
            "Dr. Smith called at 9:30 AM. Turn onto Main St. in 2.5 km.",
            [
                "Doctor Smith called at nine thirty AM.",
                "Turn onto Main Street in two point five kilometers.",
            ],
        ),
        # The first chunk is cut at its clause boundary when longer than first_chunk_chars.
        (
            "Reminder: the dentist appointment is tomorrow at 9:30 AM.",
            ["Reminder:", "the dentist appointment is tomorrow at nine thirty AM."],
        ),
        (
            "Estimated arrival time is 6:45 PM, 23 minutes from now, traffic is light.",
            [
                "Estimated arrival time is six forty-five PM,",
                "twenty-three minutes from now, traffic is light.",
            ],
        ),
        # ... and falls back to a conjunction, then a word boundary.
        (
            "Today will be cloudy with a high of 18 degrees and a 40% chance of rain.",
            [
                "Today will be cloudy with a high of eighteen degrees",
                "and a forty percent chance of rain.",
            ],
        ),
        # Only the first chunk of the whole text is shortened.
        (
            "Hi. Today will be cloudy with a high of 18 degrees and a 40% chance of rain.",
            [
                "Hi.",
                "Today will be cloudy with a high of eighteen degrees and a forty percent chance "
                "of rain.",
            ],
        ),
        # Punctuation-only leftovers never become chunks.
        ("Hello... ?! ...", ["Hello?"]),
    ],
)
def test_prepare(text: str, chunks: list[str]) -> None:
    assert prepare(text) == chunks


def test_prepare_respects_custom_limits() -> None:
    text = (
        "The washing machine has finished its cycle, the dryer is running, and the dishwasher "
        "will start at 10:00 PM."
    )
    assert prepare(text, max_chunk_chars=40, first_chunk_chars=25) == [
        "The washing machine has",
        "finished its cycle,",
        "the dryer is running,",
        "and the dishwasher will start at ten PM.",
    ]


def test_prepare_other_language_is_not_expanded() -> None:
    assert prepare("Um 9:30 Uhr. Dr. Müller kommt.", language="de_DE") == [
        "Um 9:30 Uhr.",
        "Dr. Müller kommt.",
    ]


@pytest.mark.parametrize(
    "text",
    ["", "   ", "...", "?!", "\x00\x07", "，。", "\u200b\ufeff", "\n\t\r", "— – --", "🔔❤️", "$ %"],
)
def test_nothing_speakable_raises(text: str) -> None:
    with pytest.raises(EmptyTextError, match="nothing speakable"):
        prepare(text)


def test_empty_text_error_is_a_value_error() -> None:
    assert issubclass(EmptyTextError, ValueError)


@pytest.mark.parametrize(("max_chunk_chars", "first_chunk_chars"), [(0, 60), (200, 0), (-1, -1)])
def test_bad_limits_raise_value_error(max_chunk_chars: int, first_chunk_chars: int) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        prepare("Hello.", max_chunk_chars=max_chunk_chars, first_chunk_chars=first_chunk_chars)


@pytest.mark.parametrize(
    ("language", "primary", "english"),
    [
        ("en", "en", True),
        ("en_US", "en", True),
        ("en-us", "en", True),
        ("EN-GB", "en", True),
        ("de_DE", "de", False),
        ("fr", "fr", False),
        ("", "", False),
    ],
)
def test_language_registry(language: str, primary: str, english: bool) -> None:
    assert primary_language(language) == primary
    assert (expander_for(language) is not None) is english


# --- property-style checks over messy input ---------------------------------------------

_FRAGMENTS = [
    "Dr.",
    "St.",
    "Main St.",
    "e.g.",
    "9:30 PM",
    "23:15",
    "$5.99",
    "€3",
    "40%",
    "2026-11-29",
    "Nov 29th",
    "1,234,567",
    "-5",
    "3.14",
    "21 °C",
    "1st",
    "km/h",
    "28 PSI",
    "R&D",
    "#5",
    "...",
    "?!",
    "—",
    "–",
    "\u2026",
    "\u00a0",
    "\u3000",
    "\u200b",
    "\ufeff",
    "\x00",
    "\x07",
    "\n",
    "\t",
    "，",
    "。",
    "「",
    "」",
    "\u201c",
    "\u201d",
    "🔔",
    "❤️",
    "\u0301",
    "\ud800",
    "\ue000",
    "\u202e",
    "中文",
    "Ελληνικά",
    "العربية",
    "ß",
    "İ",
    "ﬁ",
    "Ⅻ",
    "½",
    "²",
    "٣",
    "𝟘",
    " ",
    " ",
    " ",
    "a",
    "Hello",
    "world",
    ",",
    ";",
    ":",
    "(",
    ")",
    '"',
    "'",
    "/",
    "-",
    "+",
    "@",
    "&",
    "A",
    "x",
    "0",
]


def _messy(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(_FRAGMENTS) for _ in range(length))


def _messy_texts() -> list[str]:
    rng = random.Random(20241129)
    texts = [_messy(rng, rng.randint(1, 40)) for _ in range(400)]
    texts.append(_messy(rng, 6000)[:20_000])
    texts.append(("Motion detected at 11:42 PM, check the camera. " * 500)[:20_000])
    texts.append("".join(chr(rng.randint(0, 0x2FFFF)) for _ in range(20_000)))
    return texts


_INVISIBLE = {"Cc", "Cf", "Cs", "Co", "Cn"}


def _check_chunks(chunks: list[str], max_chunk_chars: int, first_chunk_chars: int) -> None:
    assert chunks
    for chunk in chunks:
        assert chunk.strip() == chunk and chunk
        assert any(ch.isalnum() for ch in chunk)
        assert not {unicodedata.category(ch) for ch in chunk} & _INVISIBLE
        assert len(chunk) <= max_chunk_chars or " " not in chunk
    assert len(chunks[0]) <= first_chunk_chars or " " not in chunks[0]


@pytest.mark.parametrize("text", _messy_texts())
@pytest.mark.parametrize("language", ["en", "zh"])
def test_messy_input_gives_clean_chunks_or_a_clear_error(text: str, language: str) -> None:
    try:
        chunks = prepare(text, language, max_chunk_chars=80, first_chunk_chars=30)
    except EmptyTextError:
        return
    except UnsupportedScriptError:
        readable = readable_scripts(language)
        assert any(script_of(ch) not in (None, *readable) for ch in text)
        return
    _check_chunks(chunks, 80, 30)


# Shapes that make a careless regex quadratic: long runs of one character class, repeated
# separators, unfinished abbreviations. Each is 100 KB and must finish without stalling.
PATHOLOGICAL = {
    "digits": "1" * 100_000,
    "comma groups": "1" + ",000" * 25_000,
    "decimal chain": "1." * 50_000,
    "colons": "1:" * 50_000,
    "apostrophes": "a'" * 50_000,
    "one long word": "x" * 100_000,
    "capitalised words before St": "Main " * 20_000 + "St.",
    "terminators": "!?" * 50_000,
    "dots": "." * 100_000,
    "mixed": "Dr. St. 5 km 9:30 AM $5.99 e.g. R&D 2026-11-29 " * 2_100,
}


@pytest.mark.parametrize("text", PATHOLOGICAL.values(), ids=PATHOLOGICAL.keys())
def test_large_pathological_input(text: str) -> None:
    try:
        chunks = prepare(text)
    except EmptyTextError:
        return
    _check_chunks(chunks, 200, 60)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("12:" * 666 + "00", "en"),
        ("1-" * 999 + "1", "en"),
        ("你好世界。" * 172, "zh"),  # Han for a voice that reads it (an English one refuses)
        ("謝" * 860, "zh"),
        ("x" * 3000, "en"),
    ],
)
def test_no_chunk_exceeds_the_limit_whatever_the_script(text: str, language: str) -> None:
    # These came back as single chunks of 860-4,666 characters, and one synthesis of
    # such a chunk took the daemon to several GB.
    chunks = prepare(text, language, max_chunk_chars=200, first_chunk_chars=40)
    assert len(chunks[0]) <= 40
    assert all(0 < len(chunk) <= 200 for chunk in chunks)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("前方路口请左转。", "Mandarin (zh)"),
        ("GPS信号丢失", "Mandarin (zh)"),
        ("こんにちは、東京駅です。", "Japanese (ja)"),  # kanji with kana: Japanese
        ("안녕하세요", "Korean (ko)"),
        ("Привет", "Russian (ru)"),
        ("Ｔｕｒｎ left, 左转", "Mandarin (zh)"),
    ],
)
def test_text_an_english_voice_cannot_read_is_refused_naming_its_language(
    text: str, named: str
) -> None:
    with pytest.raises(UnsupportedScriptError, match=rf"^no voice for {re.escape(named)} text"):
        prepare(text, "en-us")


@pytest.mark.parametrize(
    "text",
    ["The café serves crème brûlée.", "π is about 3.14.", "Ｈｅｌｌｏ ｗｏｒｌｄ", "Stop 🔔 now."],
)
def test_latin_with_accents_greek_letters_full_width_and_emoji_are_read(text: str) -> None:
    assert prepare(text, "en-us")


def test_a_voice_reads_its_own_script() -> None:
    assert prepare("前方路口请左转。", "zh")
    assert prepare("Привет", "ru")


# --- Mandarin ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "chunks"),
    [
        # 。！？ end sentences without the space English needs.
        ("前方路口请左转。请注意安全！", ["前方路口请左转.", "请注意安全!"]),
        ("真的吗？是的。", ["真的吗?", "是的."]),
        # Full-width digits and punctuation; numbers, units and times become characters.
        ("温度：２５℃！湿度：６０％。", ["温度:二十五摄氏度!", "湿度:百分之六十."]),
        # (Its clause is 11 characters: the limit cuts it before the comma.)
        ("预计13:05到达，全程12.5公里。", ["预计十三点零五分到达,", "全程十二点五公里."]),
        # The first chunk is cut at a clause mark (，) when longer than first_chunk_chars.
        (
            "您已偏离路线，正在重新规划，请在前方路口掉头，然后沿当前道路行驶3公里。",
            ["您已偏离路线,", "正在重新规划,请在前方路口掉头,然后沿当前道路行驶三公里."],
        ),
    ],
)
def test_prepare_mandarin(text: str, chunks: list[str]) -> None:
    # 25 English characters' worth: 10 Chinese characters (a Han character counts 2.5)
    assert [c.replace(" ", "") for c in prepare(text, "zh", first_chunk_chars=25)] == chunks


def test_prepare_mandarin_respects_the_limits() -> None:
    text = "您已偏离路线，正在重新规划，请在前方路口掉头，然后沿当前道路行驶3公里。请注意安全。"
    assert prepare(text, "zh", max_chunk_chars=40, first_chunk_chars=25) == [  # 16 and 10
        "您已偏离路线,",
        "正在重新规划,",
        "请在前方路口掉头,",
        "然后沿当前道路行驶三公里.",
        "请注意安全.",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "前方路口请左转然后直行三百米到达目的地" * 10,  # no punctuation: cut at the limit
        "请注意，" * 100,
        "预计13:05到达，全程12.5公里，费用¥45.50，" * 20,
    ],
)
def test_no_mandarin_chunk_exceeds_the_limit(text: str) -> None:
    chunks = prepare(text, "zh", max_chunk_chars=75, first_chunk_chars=30)  # 30 and 12
    assert len(chunks[0]) <= 12
    assert all(0 < len(chunk) <= 30 for chunk in chunks)
    assert not any(char.isdigit() for chunk in chunks for char in chunk)


@pytest.mark.parametrize("text", ["", "，。！", "？？", "……", "\u3000", "、；：", "《》「」"])
def test_mandarin_with_nothing_speakable_raises(text: str) -> None:
    with pytest.raises(EmptyTextError, match="nothing speakable"):
        prepare(text, "zh")


def test_shortening_the_first_chunk_adds_no_space_to_chinese() -> None:
    text = "您已偏离路线，正在重新规划，请在前方路口掉头。"
    assert prepare(text, "zh", first_chunk_chars=25) == [  # 10 Chinese characters
        "您已偏离路线,",
        "正在重新规划,请在前方路口掉头.",
    ]


@pytest.mark.parametrize("first_chunk_chars", [30, 40])
@pytest.mark.parametrize(
    ("text", "unit"),
    [
        (
            "Temperature change of -1,234.56 degrees recorded at the northern station today",
            "minus one thousand two hundred thirty-four point five six",
        ),
        (
            "Your total today comes to $1,234.56 after the discount",
            "one thousand two hundred thirty-four dollars and fifty-six cents",
        ),
        (
            "The meeting moved to December 21st, 2026 at 10:45 pm",
            "December twenty-first, twenty twenty-six",
        ),
        ("Call the front desk at 555-0100 extension 4321", "five five five, zero one zero zero"),
        (
            "Expect between 1,250-1,480 visitors at the northern entrance today",
            "one thousand two hundred fifty to one thousand four hundred eighty",
        ),
    ],
)
def test_no_chunk_is_cut_inside_a_number(text: str, unit: str, first_chunk_chars: int) -> None:
    """The first chunk is cut short for latency; never inside what one number, amount,
    date or phone number reads as (it was "... minus one" | "thousand two hundred ...")."""
    chunks = _prepare(text, max_chunk_chars=200, first_chunk_chars=first_chunk_chars)
    assert len(chunks) > 1
    assert any(unit in chunk for chunk in chunks), chunks
    assert "\u2060" not in " ".join(chunks)


def test_a_number_longer_than_a_chunk_is_cut_between_its_words() -> None:
    chunks = _prepare("Balance -1,234,567,891 now", max_chunk_chars=40, first_chunk_chars=40)
    assert all(len(chunk) <= 40 for chunk in chunks)
    assert " ".join(chunks) == (
        "Balance minus one billion two hundred thirty-four million five hundred sixty-seven"
        " thousand eight hundred ninety-one now"
    )  # every word whole: "thirty-four" was cut after its hyphen with the joiner first


@pytest.mark.parametrize("chunk_chars", [20, 25, 30])
@pytest.mark.parametrize(
    ("text", "unit"),
    [
        ("前方路口请左转然后直行1234米到达目的地请注意安全", "一千二百三十四"),
        ("今天的气温是-12.5度请注意保暖出门多穿衣服", "负十二点五"),
        ("您本月的话费一共是¥128.50请及时缴纳以免停机", "一百二十八元五角"),
        ("会议改在明年3月15日下午举行请大家准时参加", "三月十五日"),
        ("如有问题请拨打客服热线95588我们将竭诚为您服务", "九五五八八"),
    ],
)
def test_no_chinese_chunk_is_cut_inside_a_number(text: str, unit: str, chunk_chars: int) -> None:
    """Chinese has no spaces to keep a number's characters together: they are joined
    while the text is split, so a chunk (8 to 12 characters here) never ends inside one
    that fits in a chunk (it was "直行一千二百三" | "十四米")."""
    chunks = [c.replace(" ", "") for c in _prepare_zh(text, chunk_chars)]
    assert len(chunks) > 1
    assert any(unit in chunk for chunk in chunks), chunks
    assert "".join(chunks) == normalize(text, "zh").replace(" ", "")  # nothing added or lost
    assert all(len(chunk) <= chunk_limit(chunk_chars, "zh") for chunk in chunks)


def test_a_chinese_number_longer_than_a_chunk_is_cut_inside_it_only_then() -> None:
    chunks = _prepare_zh("余额为1234567891元", 20)  # 8 characters a chunk
    assert all(len(chunk) <= 8 for chunk in chunks) and "\u2060" not in "".join(chunks)
    assert "".join(chunks) == "余额为十二亿三千四百五十六万七千八百九十一元"


def _prepare_zh(text: str, chunk_chars: int) -> list[str]:
    return _prepare(text, "zh", max_chunk_chars=chunk_chars, first_chunk_chars=chunk_chars)
