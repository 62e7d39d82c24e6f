"""SSML: the subset we read (text/ssml.py), what it refuses and where, how the router turns
it into chunks, and what the real voices then say: phonemes, pinyin and silences."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from edge_tts.audio.dsp import SILENCE_LEVEL
from edge_tts.cache.planned import PlannedChunk
from edge_tts.config import SynthesisSettings, TextSettings, settings_from_mapping
from edge_tts.speech.routing import Router
from edge_tts.speech.synthesis import render
from edge_tts.text import EmptyTextError
from edge_tts.text.document import Audio, Break, Document, SayAs, Span, Style, spoken_digest
from edge_tts.text.mandarin import pinyin
from edge_tts.text.readings import Reading, readable
from edge_tts.text.ssml import SsmlError, looks_like_ssml, parse, parse_noted
from edge_tts.voice import files
from edge_tts.voice.base import SpeechOptions, SpeechVoice
from edge_tts.voice.model import Voice
from edge_tts.voice.phonemize import phonemize
from edge_tts.voice.registry import Voices
from edge_tts.voice.two_stage import TwoStageVoice

from .support.fakes import FakeVoice


def doc(body: str) -> Document:
    return parse(f"<speak>{body}</speak>", max_chars=10_000)


# --- the parser ---------------------------------------------------------------------------

SLOW = Style(rate=0.75)
ZH = Style(language="zh-CN")


@pytest.mark.unit
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("Door open.", (Span("Door open."),)),
        ("a &amp; b &lt;c&gt;", (Span("a & b <c>"),)),
        ('<break time="700ms"/>', (Break(0.7),)),
        ('<break time="1.5s"/>', (Break(1.5),)),
        ('<break time="3" />', (Break(3.0),)),  # no unit, as Google Assistant's samples: s
        ('<break strength="strong"/>', (Break(1.0),)),
        ("<break/>", (Break(0.75),)),
        ('<break time="0ms" strength="x-strong"/>', (Break(0.0),)),  # time wins
        (
            '<say-as interpret-as="characters">GPS</say-as>',
            (Span("GPS", say_as=SayAs("characters")),),
        ),
        (
            '<say-as interpret-as="date" format="dmy">1.12.2026</say-as>',
            (Span("1.12.2026", say_as=SayAs("date", "dmy")),),
        ),
        ('<sub alias="World Wide Web">WWW</sub>', (Span("World Wide Web"),)),
        ('<prosody rate="slow">Slow</prosody>', (Span("Slow", SLOW),)),
        ('<prosody rate="80%">a</prosody>', (Span("a", Style(rate=0.8)),)),
        ('<prosody rate="+50%">a</prosody>', (Span("a", Style(rate=1.5)),)),
        ('<prosody rate="2">a</prosody>', (Span("a", Style(rate=2.0)),)),
        ('<prosody volume="x-soft">a</prosody>', (Span("a", Style(volume=0.25)),)),
        ('<prosody volume="-20dB">a</prosody>', (Span("a", Style(volume=0.1)),)),
        (
            '<prosody rate="x-slow"><prosody rate="x-fast">a</prosody></prosody>',
            (Span("a", Style(rate=0.75)),),  # nested: multiplied
        ),
        ('<lang xml:lang="zh-CN">GPS</lang>', (Span("GPS", ZH),)),
        ('<voice name="mandarin">GPS</voice>', (Span("GPS", Style(voice="mandarin")),)),
        (
            '<voice name="a"><lang xml:lang="en">x</lang></voice>',
            (Span("x", Style(language="en")),),  # the innermost wins
        ),
        (
            '<phoneme alphabet="ipa" ph="kˈæstɹoʊ">Castro</phoneme>',
            (Span("Castro", reading=Reading("ipa", "kˈæstɹoʊ")),),
        ),
        (
            '<phoneme alphabet="x-pinyin" ph=" Chong2   qing4 ">重庆</phoneme>',
            (Span("重庆", reading=Reading("x-pinyin", "chong2 qing4")),),
        ),
        ("<p>Hello</p><p>World!</p>", (Span("Hello"), Span(". "), Span("World!"), Span(" "))),
        ("<s>你好</s>", (Span("你好"), Span(". "))),
        ('<s xml:lang="zh">x</s>', (Span("x", Style(language="zh")), Span(". ", Style("zh")))),
        ('a<mark name="here"/>b', (Span("a"), Span("b"))),  # marks are ignored
        ("a<!-- a comment -->b", (Span("ab"),)),
    ],
)
def test_markup_becomes_spans_and_breaks(body: str, expected: Document) -> None:
    assert doc(body) == expected


@pytest.mark.unit
def test_namespaces_version_and_the_documents_language_are_accepted() -> None:
    text = (
        '<?xml version="1.0"?><speak version="1.1" xmlns="http://www.w3.org/2001/10/synthesis"'
        ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xml:lang="en-US">Hi</speak>'
    )
    assert parse(text, max_chars=1000) == (Span("Hi"),)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<speak>a<b</speak>", r"not well-formed XML: not well-formed \(invalid token\) at line 1"),
        ("<speak>\n  <p>x</s>\n</speak>", r"mismatched tag at line 2, column 9"),
        ("<speak>x", r"no element found at line 1, column 9"),
        ("<speak>&bogus;</speak>", r"undefined entity at line 1, column 8"),
        ("<p>x</p>", r"line 1, column 1: the document must be one <speak> element, not <p>"),
        ("<speak/><speak/>", r"junk after document element"),
        ("<speak>x</speak>y", r"junk after document element at line 1, column 17"),
        ("<speak><speak>x</speak></speak>", r"line 1, column 8: <speak> inside <speak>"),
        (
            '<!DOCTYPE speak [<!ENTITY lol "lol">]><speak>&lol;</speak>',
            r"a DTD \(<!DOCTYPE>\) is refused",
        ),
        (
            '<!DOCTYPE speak SYSTEM "file:///etc/passwd"><speak>x</speak>',
            r"a DTD \(<!DOCTYPE>\) is refused",
        ),
        ('<speak><?php echo "x" ?></speak>', r"processing instructions are not supported"),
        ('<speak><break time="11s"/></speak>', r"break time '11s' is longer than 10 s"),
        ('<speak><break time="soon"/></speak>', r"break time 'soon' is not a duration"),
        ('<speak><break strength="huge"/></speak>', r"break strength 'huge' is not one of"),
        ("<speak><break>x</break></speak>", r"<break> must be empty"),
        ("<speak><say-as>1</say-as></speak>", r"<say-as> needs a interpret-as attribute"),
        (
            '<speak>\n<say-as interpret-as="date">2026-02-30</say-as></speak>',
            r"line 2, column 1: say-as date: '2026-02-30': no day 30 in that month",
        ),
        (
            '<speak><say-as interpret-as="date" format="qq">1</say-as></speak>',
            r"date format 'qq' is not one of",
        ),
        (
            '<speak><say-as interpret-as="digits">12a</say-as></speak>',
            r"say-as digits: '12a' is not a string of digits",
        ),
        (
            '<speak><say-as interpret-as="cardinal"><sub alias="x">y</sub></say-as></speak>',
            r"<say-as> may hold only text, not <sub>",
        ),
        ("<speak><sub>x</sub></speak>", r"<sub> needs a alias attribute"),
        ('<speak><prosody rate="warp">x</prosody></speak>', r"prosody rate 'warp' is not one of"),
        ('<speak><prosody rate="1000%">x</prosody></speak>', r"outside 0.2-5 times"),
        ('<speak><prosody volume="+30dB">x</prosody></speak>', r"outside 0-4 times"),
        ("<speak><lang>x</lang></speak>", r"<lang> needs a xml:lang attribute"),
        ('<speak><lang xml:lang="#!">x</lang></speak>', r"xml:lang '#!' is not a language tag"),
        ('<speak><phoneme ph="x">x</phoneme></speak>', r"<phoneme> needs a alphabet attribute"),
        (
            '<speak><phoneme alphabet="x-pinyin" ph="chong qing4">重庆</phoneme></speak>',
            r"x-pinyin syllable 'chong' is not pinyin with a tone digit",
        ),
    ],
)
def test_bad_markup_is_refused_saying_what_and_where(text: str, reason: str) -> None:
    with pytest.raises(SsmlError, match=reason):
        parse(text, max_chars=1000)


EMPHASIS = Style(rate=0.92, volume=1.12)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("text", "expected", "note"),
    [  # what we do not support is read as its content, as the W3C and the vendors do
        ("<speak><emphasis>x</emphasis></speak>", (Span("x", EMPHASIS),), None),
        (
            '<speak><emphasis level="loudest">x</emphasis></speak>',
            (Span("x", EMPHASIS),),
            "column 8: emphasis level 'loudest' is not known: read as moderate",
        ),
        (
            '<speak><emphasis level="reduced">x</emphasis></speak>',
            (Span("x", Style(rate=1.1, volume=0.8)),),
            None,
        ),
        ('<speak><audio src="a.wav"/></speak>', (Audio("a.wav"),), None),  # the router finds it
        (
            '<speak><audio src="https://x/chime.mp3">Ding.<desc>a chime</desc></audio></speak>',
            (Audio("https://x/chime.mp3", (Span("Ding."),)),),
            None,
        ),
        (
            '<speak><audio src="a.wav" soundLevel="+2dB">A <audio src="b">B</audio></audio>'
            "</speak>",
            (Audio("a.wav", (Span("A "), Span("B"))),),
            "attribute 'soundLevel' of <audio> is ignored",
        ),
        ("<speak><audio>Ding</audio></speak>", (Span("Ding"),), "<audio> without a src"),
        ('<speak><break foo="1"/></speak>', (Break(0.75),), "attribute 'foo' of <break> is ign"),
        (
            '<speak><say-as interpret-as="emoji">x</say-as></speak>',
            (Span("x"),),
            "say-as interpret-as 'emoji' is not supported: read as text",
        ),
        (
            '<speak><prosody pitch="high" rate="slow">x</prosody></speak>',
            (Span("x", SLOW),),
            "attribute 'pitch' of <prosody> is ignored",
        ),
        ('<speak><prosody pitch="0%" contour="(0%,+20Hz)">x</prosody></speak>', (Span("x"),), None),
        (
            '<speak><voice gender="female">x</voice></speak>',
            (Span("x", Style(gender="female")),),
            None,
        ),
        ('<speak><voice gender="robot">x</voice></speak>', (Span("x"),), "gender 'robot' is not"),
        ('<speak><voice age="30">x</voice></speak>', (Span("x"),), "'age' of <voice> is ignored"),
        (
            '<speak><voice languages="zh-CN en-US">x</voice></speak>',
            (Span("x", Style(language="zh-CN", languages=("en-US",))),),  # the router picks
            None,
        ),
        (
            '<speak><voice name="en-US-JennyNeural">x</voice></speak>',
            (Span("x", Style(voice="en-US-JennyNeural")),),  # the router picks (below)
            None,
        ),
        (
            '<speak><phoneme alphabet="x-sampa" ph="\'tS3:tS">x</phoneme></speak>',
            (Span("x", reading=Reading("ipa", "'tʃɜːtʃ")),),
            None,
        ),
        (
            '<speak><phoneme alphabet="x-sampa" ph="&quot;tS3:tS">x</phoneme></speak>',
            (Span("x", reading=Reading("ipa", "ˈtʃɜːtʃ")),),
            None,
        ),
        (
            '<speak><phoneme alphabet="ipa" ph="ˈt͡ʃɜːt͡ʃ">church</phoneme></speak>',
            (Span("church", reading=Reading("ipa", "ˈtʃɜːtʃ")),),  # the tie bar: no phoneme
            None,
        ),
        (
            '<speak><phoneme alphabet="x-amazon-pinyin" ph="bo2">x</phoneme></speak>',
            (Span("x"),),
            "phoneme alphabet 'x-amazon-pinyin' is not supported: text read",
        ),
        ('<speak><p foo="x">x</p></speak>', (Span("x"), Span(". ")), "'foo' of <p> is ignored"),
        (
            '<speak xmlns:mstts="http://www.w3.org/2001/mstts"><mstts:express-as style="cheerful">'
            "Hi!</mstts:express-as></speak>",
            (Span("Hi!"),),
            "<mstts:express-as> is not supported: its content is read",
        ),
        (
            '<speak>Hi<amazon:breath duration="long"/> <amazon:effect name="whispered">'
            "psst</amazon:effect></speak>",
            (Span("Hi"), Span(" "), Span("psst")),
            None,
        ),
        (
            '<speak><par><media xml:id="q" begin="0.5s"><speak>Who?</speak></media>'
            '<media begin="q.end+1s"><audio src="x.mp3"/></media></par></speak>',
            (Span("Who?"), Audio("x.mp3")),
            "<par> is not supported",
        ),
        (
            "<speak><metadata><dc:title xmlns:dc='http://purl.org/dc/'>T</dc:title></metadata>"
            "Hi</speak>",
            (Span("Hi"),),
            None,
        ),
        (
            '<ssml:speak xmlns:ssml="http://www.w3.org/2001/10/synthesis"><ssml:s>Hi</ssml:s>'
            "</ssml:speak>",
            (Span("Hi"), Span(". ")),
            None,
        ),
    ],
)
def test_what_we_do_not_support_is_read_as_its_content(
    text: str, expected: Document, note: str | None
) -> None:
    document, notes = parse_noted(text, max_chars=1000)
    assert document == expected
    if note is not None:
        assert any(note in n for n in notes), notes


@pytest.mark.unit
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("5&nbsp;km &mdash; fast", "5\xa0km — fast"),
        ("Tom & Jerry", "Tom & Jerry"),
        ("1 < 2 and I <3 you", "1 < 2 and I <3 you"),
        ("caf&eacute; &amp; &AMP; bar", "café & & bar"),
    ],
)
def test_llm_markup_is_recovered_when_xml_refuses_it(body: str, expected: str) -> None:
    document, notes = parse_noted(f"<speak>{body}</speak>", max_chars=1000)
    assert "".join(p.text for p in document if isinstance(p, Span)) == expected
    assert notes and "HTML entities" in notes[0]


@pytest.mark.unit
def test_what_cannot_be_recovered_keeps_the_first_error() -> None:
    with pytest.raises(SsmlError, match=r"undefined entity at line 1, column 8"):
        parse("<speak>&bogus; &nbsp;</speak>", max_chars=100)
    with pytest.raises(SsmlError, match=r"not well-formed \(invalid token\) at line 1, column 11"):
        parse("<speak>a & b</p></speak>", max_chars=100)  # recovered, still mismatched


@pytest.mark.unit
def test_text_that_is_not_utf8_is_refused_saying_where() -> None:
    with pytest.raises(SsmlError, match=r"SSML is not valid UTF-8 text \(character 10\)"):
        parse("<speak>caf\udce9</speak>", max_chars=100)  # what undecodable bytes become


@pytest.mark.unit
def test_nesting_and_size_are_bounded() -> None:
    deep = "<speak>" + "<s>" * 40 + "x" + "</s>" * 40 + "</speak>"
    with pytest.raises(SsmlError, match="nested more than 32 deep"):
        parse(deep, max_chars=1000)
    with pytest.raises(SsmlError, match="SSML is 1017 characters; the limit is 1000"):
        parse(f"<speak>{'x' * 1002}</speak>", max_chars=1000)


@pytest.mark.unit
def test_a_billion_laughs_is_refused_before_any_expansion() -> None:
    laughs = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    bomb = f'<!DOCTYPE speak [<!ENTITY l0 "lol">{laughs}]><speak>&l9;</speak>'
    with pytest.raises(SsmlError, match="DTD"):
        parse(bomb, max_chars=10_000)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("text", "ssml"),
    [
        ("<speak>Hi</speak>", True),
        ("  \n<speak version='1.0'>", True),
        ("<?xml version='1.0'?>\n<speak>", True),
        ("<speak/>", True),
        ('<!DOCTYPE speak [<!ENTITY a "a">]><speak>&a;</speak>', True),  # to be refused
        ("<!-- note --><speak>Hi</speak>", True),
        ("\ufeff<speak>Hi</speak>", True),  # a UTF-8 BOM, as Windows tools send it
        ("\ufeff  <?xml version='1.0' encoding='UTF-8'?>\n<speak>Hi</speak>", True),
        ('<ssml:speak xmlns:ssml="http://www.w3.org/2001/10/synthesis">', True),
        ("<x:speaker>Hi</x:speaker>", False),
        ("<!DOCTYPE html><p>Hi</p>", False),
        ("<speaker>Hi</speaker>", False),
        ("Use <speak> tags", False),
        ("1 < 2", False),
    ],
)
def test_what_looks_like_ssml(text: str, ssml: bool) -> None:
    assert looks_like_ssml(text) is ssml


@pytest.mark.unit
@pytest.mark.parametrize(
    "text",
    [
        "\ufeff<speak>Hi</speak>",
        "\ufeff<?xml version='1.0' encoding='UTF-8'?>\n<speak>Hi</speak>",
        "  \n<?xml version='1.0'?><speak>Hi</speak>",
        "\n  <speak>Hi</speak>\n",
        '<ssml:speak xmlns:ssml="http://www.w3.org/2001/10/synthesis">Hi</ssml:speak>',
    ],
)
def test_what_looks_like_ssml_parses(text: str) -> None:
    assert looks_like_ssml(text)
    assert parse(text, max_chars=1000) == (Span("Hi"),)


@pytest.mark.unit
def test_what_is_spoken_decides_the_digest_not_the_markup() -> None:
    plain = "Door open. Check the camera."
    assert spoken_digest(doc(plain)) == spoken_digest(plain)
    assert spoken_digest(doc("Door open.<!-- x --> Check the camera.")) == spoken_digest(plain)
    assert spoken_digest(doc('<prosody rate="slow">Door open.</prosody>')) != spoken_digest(
        "Door open."
    )
    first = doc('<break time="1s"/>Door <say-as interpret-as="digits">12</say-as>')
    again = doc('<break time="1s"/>Door <say-as interpret-as="digits">12</say-as>')
    assert spoken_digest(first) == spoken_digest(again)


# --- the router, with fake voices -----------------------------------------------------------


class FakeMandarin(FakeVoice):
    """Reads pinyin as the Mandarin voice does: its symbols, as ids of its tone."""

    def __init__(self) -> None:
        super().__init__()
        self.language, self.name, self.alphabet = "zh", "baker", "x-pinyin"

    def ids(self, text: str) -> list[list[int]]:
        return [[len(symbol) for symbol in pinyin.to_symbols(text)]]


EN, MANDARIN = FakeVoice(), FakeMandarin()
EN.name = "joe"
VOICES = Voices(
    settings_from_mapping(
        {"device_id": "pi", "voices": {"default": {}, "mandarin": {}}, "default_voice": "default"}
    ),
    {"default": EN, "mandarin": MANDARIN},
)
ROUTER = Router(SynthesisSettings(), VOICES)


def plan(body: str, router: Router = ROUTER, voice: FakeVoice = EN) -> list[PlannedChunk]:
    return router.plan(doc(body), voice, SpeechOptions(length_scale=1.0, volume=0.8), 1.0)


def said(chunks: list[PlannedChunk]) -> list[tuple[str, str, tuple[float, float]]]:
    return [(readable(c.text), c.voice.name, c.silence) for c in chunks]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("Door open. Check it.", [("Door open.", "joe", (0, 0)), ("Check it.", "joe", (0, 0))]),
        (
            'One.<break time="700ms"/> Two.',
            [("One.", "joe", (0, 0.7)), ("Two.", "joe", (0, 0))],
        ),
        ('<break time="500ms"/>Hi.', [("Hi.", "joe", (0.5, 0))]),
        ('Hi.<break time="1s"/><break time="200ms"/>', [("Hi.", "joe", (0, 1.2))]),
        (
            'Hello world<break time="700ms"/> again',
            [("Hello world", "joe", (0, 0.7)), ("again", "joe", (0, 0))],
        ),
        (
            'A.<break time="1s"/>!!!<break time="1s"/>B.',  # nothing to say between: summed
            [("A.", "joe", (0, 2.0)), ("B.", "joe", (0, 0))],
        ),
        (
            'Gate <say-as interpret-as="characters">B12</say-as>.',
            [("Gate B one two.", "joe", (0, 0))],
        ),
        (
            '请拨打<say-as interpret-as="telephone">110</say-as>。',
            [("请拨打幺幺零.", "baker", (0, 0))],
        ),
        ('<lang xml:lang="zh">GPS</lang>丢失', [("GPS丢失", "baker", (0, 0))]),
        ('<lang xml:lang="en">GPS</lang>丢失', [("GPS", "joe", (0, 0)), ("丢失", "baker", (0, 0))]),
        ('<voice name="mandarin">ABC</voice>', [("ABC", "baker", (0, 0))]),
        (
            '到<phoneme alphabet="x-pinyin" ph="chong2 qing4">重庆</phoneme>。',
            [("到 [x-pinyin: chong2 qing4].", "baker", (0, 0))],
        ),
        (
            'Turn onto <phoneme alphabet="ipa" ph="kˈæstɹoʊ">Castro</phoneme> Street.',
            [("Turn onto [ipa: kˈæstɹoʊ] Street.", "joe", (0, 0))],
        ),
        (  # a pinyin reading of a Latin word goes to the voice that reads pinyin
            'Say <phoneme alphabet="x-pinyin" ph="hua2 wei2">Huawei</phoneme>.',
            [("Say", "joe", (0, 0)), ("[x-pinyin: hua2 wei2].", "baker", (0, 0))],
        ),
        ("<p>Hello</p><p>World</p>", [("Hello.", "joe", (0, 0)), ("World.", "joe", (0, 0))]),
    ],
)
def test_spans_become_chunks_with_their_voice_and_silence(
    body: str, expected: list[tuple[str, str, tuple[float, float]]]
) -> None:
    assert said(plan(body)) == expected


@pytest.mark.unit
def test_a_document_that_says_a_plain_text_makes_its_chunks() -> None:
    text = "Attention please, the next train is late. 下一班列车晚点了，请耐心等待。"
    plain = ROUTER.plan(text, EN, SpeechOptions())
    marked = ROUTER.plan(doc(f"<p>{text}</p>"), EN, SpeechOptions())
    assert [(c.text, c.voice, c.options) for c in marked] == [
        (c.text, c.voice, c.options) for c in plain
    ]


@pytest.mark.unit
def test_prosody_sets_speed_and_gain_of_its_span_only() -> None:
    chunks = plan('Normal. <prosody rate="50%" volume="x-soft">Slow and soft.</prosody> Normal.')
    assert [(c.options.length_scale, c.options.volume) for c in chunks] == [
        (1.0, 0.8),
        (2.0, 0.2),
        (1.0, 0.8),
    ]
    loud = plan('<prosody volume="x-loud"><prosody volume="x-loud">Loud.</prosody></prosody>')
    assert loud[0].options.volume == 2.0  # the engine's most


@pytest.mark.unit
def test_a_voice_or_language_not_configured_falls_back_to_the_text() -> None:
    assert said(plan('<lang xml:lang="de">Hallo</lang>')) == [("Hallo", "joe", (0, 0))]
    assert said(plan('<lang xml:lang="fr-FR">Bonjour</lang> 你好')) == [
        ("Bonjour", "joe", (0, 0)),
        ("你好", "baker", (0, 0)),
    ]
    assert said(plan('<voice name="nobody">x</voice>')) == [("x", "joe", (0, 0))]
    assert said(plan('<voice name="Joanna">GPS信号</voice>')) == [
        ("GPS", "joe", (0, 0)),
        ("信号", "baker", (0, 0)),
    ]
    # an Azure voice's name says its language: that language's voice reads it
    azure = '<voice name="zh-CN-XiaoxiaoNeural">GPS</voice>'
    assert said(plan(azure)) == [("GPS", "baker", (0, 0))]
    assert said(plan('<voice name="en-US-JennyNeural">Hi</voice>')) == [("Hi", "joe", (0, 0))]
    english_only = Router(SynthesisSettings())  # `say`: one voice
    assert said(plan('<voice name="en-GB-RyanNeural">Hi</voice>', english_only)) == [
        ("Hi", "joe", (0, 0))
    ]


@pytest.mark.unit
def test_readings_no_voice_reads_are_read_as_their_text_saying_why() -> None:
    """Lenient: a reading no voice there can say is its element's text (it was refused)."""
    english_only = Router(SynthesisSettings())  # `say`: one voice
    for body, router, why in (
        (
            '<lang xml:lang="en"><phoneme alphabet="x-pinyin" ph="a1">Huawei</phoneme></lang>',
            ROUTER,
            "column 28: voice joe reads ipa phonemes, not x-pinyin",
        ),
        (
            '<phoneme alphabet="x-pinyin" ph="a1">Huawei</phoneme>',
            english_only,
            "column 8: no configured voice reads x-pinyin phonemes",
        ),
    ):
        notes: list[str] = []
        chunks = router.plan(doc(body), EN, SpeechOptions(), notes=notes)
        assert [(c.text, c.voice.name) for c in chunks] == [("Huawei", "joe")]
        assert notes == [f"SSML line 1, {why}; its text 'Huawei' is read instead"]


@pytest.mark.unit
def test_nothing_to_say_is_an_error_unless_a_break_plays_silence() -> None:
    """A text of only breaks is their silence, as a text of only sounds is those
    (test_ssml_audio.py); with nothing to say and nothing to play it is empty."""
    assert said(plan('<break time="1s"/>')) == [("", "joe", (1.0, 0.0))]
    for body in ('<s>  </s><mark name="x"/>', '<break strength="none"/>'):
        with pytest.raises(EmptyTextError):
            plan(body)


@pytest.mark.unit
def test_private_use_characters_in_text_never_become_readings() -> None:
    forged = "\ue000kæt\ue002 \U000f0000"
    chunks = ROUTER.plan(forged + " dog", EN, SpeechOptions())
    assert [c.text for c in chunks] == ["kæt dog"]


# --- the real voices ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real(mandarin_voice: Path) -> Iterator[tuple[Router, SpeechVoice, TwoStageVoice]]:
    english = Voice(files.packaged_fp32())
    mandarin = TwoStageVoice(mandarin_voice)
    settings = settings_from_mapping(
        {"device_id": "pi", "voices": {"default": {}, "mandarin": {}}, "default_voice": "default"}
    )
    voices = Voices(settings, {"default": english, "mandarin": mandarin})
    yield Router(SynthesisSettings(), voices), english, mandarin


def spoken(chunk: PlannedChunk) -> str:
    """What the voice is given: espeak-ng's phonemes, or the Baker symbols."""
    if isinstance(chunk.voice, Voice):
        return " | ".join("".join(s) for s in phonemize(chunk.text, chunk.voice.config))
    return " ".join(pinyin.to_symbols(chunk.text))


@pytest.mark.model
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            'Turn onto <phoneme alphabet="ipa" ph="kˈæstɹoʊ">Castro</phoneme> Street.',
            ["tˈɜːn ˈɑːntʊ kˈæstɹoʊ stɹˈiːt."],
        ),
        ('<sub alias="World Wide Web">WWW</sub>', ["wˈɜːld wˈaɪd wˈɛb"]),
        (
            'Gate <say-as interpret-as="characters">B12</say-as>.',
            ["ɡˈeɪt bˈiː wˈʌn tˈuː."],
        ),
        ('<say-as interpret-as="ordinal">2</say-as> door', ["sˈɛkənd dˈɔːɹ"]),
        (
            '<lang xml:lang="zh-CN">GPS</lang>',
            ["sil j i4 #0 p i1 #0 ^ ai4 #0 s ii1 sil eos"],
        ),
        (
            '张<phoneme alphabet="x-pinyin" ph="yin2 xing2">银行</phoneme>到了。',
            ["sil zh ang1 #0 ^ in2 #0 x ing2 #0 d ao4 #0 l e5 sil eos"],
        ),
        (  # the same without the reading: the dictionary's bank
            "张银行到了。",
            ["sil zh ang1 #0 ^ in2 #0 h ang2 #0 d ao4 #0 l e5 sil eos"],
        ),
        (
            '请拨打<say-as interpret-as="telephone">110</say-as>。',
            ["sil q ing3 #0 b o1 #0 d a3 #0 ^ iao1 #0 ^ iao1 #0 l ing2 sil eos"],
        ),
        ('第<say-as interpret-as="cardinal">2</say-as>', ["sil d i4 #0 ^ er4 sil eos"]),
    ],
)
def test_what_the_real_voices_are_given(
    real: tuple[Router, SpeechVoice, TwoStageVoice], body: str, expected: list[str]
) -> None:
    router, english, _ = real
    chunks = router.plan(doc(body), english, SpeechOptions())
    assert [spoken(c) for c in chunks] == expected


@pytest.mark.model
def test_a_reading_the_voice_cannot_say_reads_the_elements_text_saying_why(
    real: tuple[Router, SpeechVoice, TwoStageVoice],
) -> None:
    """Lenient, as the W3C and the vendors are: it was refused at planning."""
    router, english, _ = real
    notes: list[str] = []
    body = (
        '<phoneme alphabet="ipa" ph="a☃">cat</phoneme> and '
        '<phoneme alphabet="x-pinyin" ph="zz1">dog</phoneme>.'
    )
    chunks = router.plan(doc(body), english, SpeechOptions(), notes=notes)
    assert [spoken(c) for c in chunks] == [
        spoken(router.plan("cat and dog.", english, SpeechOptions())[0])
    ]
    assert notes[0].startswith("SSML line 1, column 8: ipa 'a☃': phoneme(s) ☃ in 'a☃' are not")
    assert notes[0].endswith("its text 'cat' is read instead")
    assert "'zz1' is not a pinyin syllable the Mandarin voice has" in notes[1]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("ph", "read", "note"),
    [
        ("ˈʧɝʧ", "[ipa: ˈtʃɜːtʃ]", "ipa 'ˈʧɝʧ' read as 'ˈtʃɜːtʃ' (the voice's symbols)"),
        ("gʊd", "[ipa: ɡʊd]", "ipa 'gʊd' read as 'ɡʊd'"),  # ASCII g, the IPA ɡ
        ("ˈt͡ʃɜːt͡ʃ", "[ipa: ˈtʃɜːtʃ]", None),  # a tie bar: no phoneme of its own
        ("kæ:t", "[ipa: kæːt]", None),  # an ASCII colon: the length mark, not a pause
        ("k☃t", "cat", "ipa 'k☃t': phoneme(s) ☃ in 'k☃t' are not in the voice's"),
    ],
)
def test_vendor_ipa_is_read_with_the_voices_symbols_or_as_its_text(
    ph: str, read: str, note: str | None
) -> None:
    notes: list[str] = []
    body = f'Say <phoneme alphabet="ipa" ph="{ph}">cat</phoneme>.'
    chunks = ROUTER.plan(doc(body), EN, SpeechOptions(), notes=notes)
    assert [readable(c.text) for c in chunks] == [f"Say {read}."]
    if note is None:
        assert notes == []
    else:
        assert len(notes) == 1 and note in notes[0], notes
        assert notes[0].startswith("SSML line 1, column 12: ")


def audio(router: Router, voice: SpeechVoice, body: str) -> np.ndarray:
    """The audio the chunks of `body` make, rendered as a request's are, as floats."""
    options = SpeechOptions(noise_scale=0.0, noise_w=0.0)  # the same audio every time
    chunks = router.plan(doc(body), voice, options)
    pieces = [
        pcm
        for index, chunk in enumerate(chunks)
        for pcm in render(
            chunk.voice,
            chunk.text,
            chunk.options,
            index == 0,
            22050,
            silence=chunk.silence,
            breaks=chunk.breaks,
        )
    ]
    return np.concatenate(pieces).astype(np.float32) / 32768


def quiet_runs(samples: np.ndarray) -> list[float]:
    """The lengths in seconds of the runs of silence (at most SILENCE_LEVEL), in order,
    from the start to the end of the audio."""
    quiet = np.abs(samples) <= SILENCE_LEVEL
    edges = np.flatnonzero(np.diff(np.concatenate(([0], quiet.astype(np.int8), [0]))))
    return [(end - start) / 22050 for start, end in zip(edges[::2], edges[1::2], strict=True)]


@pytest.mark.model
@pytest.mark.parametrize(
    ("body", "where", "seconds"),
    [
        ('One.<break time="700ms"/> Two.', "inside", 0.7),
        ('One.<break time="1500ms"/> Two.', "inside", 1.5),
        ('<break time="500ms"/>Hello there.', "start", 0.5),
        ('Hello world<break time="700ms"/> again', "inside", 0.7),  # inside a sentence
        ('Turn left<break time="300ms"/>then right.', "inside", 0.3),
        ('Bye.<break strength="strong"/>', "end", 1.0),
        ("你好。<break time='700ms'/>再见。", "inside", 0.7),
        ("Hi. <break time='700ms'/>你好。", "inside", 0.7),  # between two voices
    ],
)
def test_a_break_is_the_pause_at_its_place_within_50_ms(
    real: tuple[Router, SpeechVoice, TwoStageVoice], body: str, where: str, seconds: float
) -> None:
    """SSML's break is the pause at that point: it replaces the voice's own silence there
    (a 1.5 s break was 1.79 s between the words), inside a sentence too."""
    router, english, _ = real
    runs = quiet_runs(audio(router, english, body))
    gap = {"start": runs[0], "end": runs[-1], "inside": max(runs[1:-1], default=0.0)}[where]
    assert abs(gap - seconds) <= 0.05, runs


@pytest.mark.unit
def test_the_breaks_of_a_request_are_bounded_in_total() -> None:
    assert len(plan('x<break time="10s"/>' * 3 + "y")) == 4  # 30 s: the default limit
    with pytest.raises(ValueError, match=r"breaks add up to 40 s of silence; the limit is 30 s"):
        plan('x<break time="10s"/>' * 4 + "y")
    roomy = Router(SynthesisSettings(), VOICES, text=TextSettings(max_silence_s=60))
    assert len(plan('x<break time="10s"/>' * 4 + "y", roomy)) == 5


@pytest.mark.unit
def test_a_break_marks_both_chunks_beside_it() -> None:
    chunks = plan('One.<break time="0ms"/>Two. Three.')
    assert [(c.text, c.silence, c.breaks) for c in chunks] == [
        ("One.", (0, 0), (False, True)),  # strength none still replaces the pause
        ("Two.", (0, 0), (True, False)),
        ("Three.", (0, 0), (False, False)),
    ]
