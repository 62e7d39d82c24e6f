"""Malformed SSML, generated from valid documents by changes that always break them: every
proper prefix, every closing tag renamed, a bad value in each place one can go, and the
XML that is refused outright (DTDs, entities, processing instructions, nesting, bad
characters). Each one must be refused, never spoken.

And what is not malformed but not supported either (`lenient_cases`): a foreign element
or attribute in each place one can go, and the vendors' markup. Those are read as their
content, as the W3C and the vendors do."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

VALID = (
    "<speak>Gate <say-as interpret-as='characters'>B12</say-as> closes."
    "<break time='700ms'/><p>Please <prosody rate='slow' volume='loud'>hurry</prosody>.</p>"
    "</speak>",
    "<speak version='1.0' xml:lang='en-US'><s>Turn onto <phoneme alphabet='ipa' "
    "ph='kˈæstɹoʊ'>Castro</phoneme> Street.</s><s><lang xml:lang='zh-CN'>前方路口</lang>"
    "</s><sub alias='World Wide Web'>WWW</sub><mark name='m'/></speak>",
    "<speak><voice name='default'>Call <say-as interpret-as='telephone'>555-0100</say-as>"
    "</voice><break strength='weak'/>Today is <say-as interpret-as='date' format='mdy'>"
    "12/01/2026</say-as>.</speak>",
)
_TAG: Final = re.compile(r"</(?P<name>[\w-]+)>")
_START_TAG: Final = re.compile(r"<(?P<name>[\w-]+)(?P<attrs>[^<>]*?)(?P<end>/?)>")
BAD_VALUES = (
    ("break", "time", "soon"),
    ("break", "time", "11s"),
    ("break", "strength", "loudest"),
    ("prosody", "rate", "warp"),
    ("prosody", "volume", "+40dB"),
    ("phoneme", "ph", "chong qing"),  # x-pinyin needs tone digits (only where x-pinyin)
    ("lang", "xml:lang", "#!"),
)
REFUSED = (
    '<!DOCTYPE speak [<!ENTITY a "aaaa">]><speak>&a;</speak>',
    '<!DOCTYPE speak SYSTEM "http://example.com/x.dtd"><speak>x</speak>',
    '<!DOCTYPE speak [<!ENTITY x SYSTEM "file:///etc/passwd">]><speak>&x;</speak>',
    '<speak><?xml-stylesheet href="x"?>x</speak>',
    "<speak>&#0;</speak>",
    "<speak>\x01</speak>",
    "<speak>" + "<s>" * 40 + "x" + "</s>" * 40 + "</speak>",
    "<speak><speak>x</speak></speak>",
    "<speak>x</speak><speak>y</speak>",
    "<speak>x</speak>tail",
    "<p>not speak</p>",
    "<speak><break time='1s' time='2s'/></speak>",
    "<speak><say-as interpret-as='cardinal'>12<sub alias='x'>y</sub></say-as></speak>",
    "<speak><say-as interpret-as='date'>2026-02-30</say-as></speak>",
    "<speak><say-as interpret-as='ordinal'>third</say-as></speak>",
    "<speak><break>text in a break</break></speak>",
    "<speak><phoneme alphabet='x-pinyin' ph='zhong'>中</phoneme></speak>",
)
# Not supported but not wrong: each is read as its content (what it says after the dash).
LENIENT = (
    ("<speak>a&nbsp;b</speak>", "a\xa0b"),
    ("<speak><audio src='https://example.com/a.wav'>fallback</audio></speak>", "fallback"),
    ("<speak><prosody pitch='+2st'>x</prosody></speak>", "x"),
    ("<speak><emphasis level='strong'>x</emphasis></speak>", "x"),
    ("<speak><say-as interpret-as='emoji'>1</say-as></speak>", "1"),
    ("<speak><phoneme alphabet='x-sampa' ph='a'>1</phoneme></speak>", "1"),
    (
        "<speak xmlns:mstts='http://x'><mstts:express-as style='cheerful'>x</mstts:express-as>"
        "</speak>",
        "x",
    ),
)


def lenient_cases() -> Iterator[tuple[str, str, str]]:
    """(what was done, the document, the text it must say): a foreign attribute on each
    element and a foreign element in each that may hold elements, in the valid documents;
    and LENIENT."""
    for n, valid in enumerate(VALID):
        for match in _START_TAG.finditer(valid):
            at = match.end("attrs")
            unknown = valid[:at] + " unknown='1'" + valid[at:]
            yield f"doc {n} <{match['name']} unknown=''>", unknown, ""
            inside = match.end() if not match["end"] else None
            if inside is not None and match["name"] not in ("say-as", "sub", "phoneme"):
                bogus = valid[:inside] + "<bogus/>" + valid[inside:]
                yield f"doc {n} <bogus> in <{match['name']}>", bogus, ""
    for n, (document, text) in enumerate(LENIENT):
        yield f"lenient {n}", document, text


def cases() -> Iterator[tuple[str, str]]:
    """(what was done, the malformed document), in a fixed order, each document once."""
    seen: set[str] = set()
    for what, document in _all_cases():
        if document not in seen:
            seen.add(document)
            yield what, document


def _all_cases() -> Iterator[tuple[str, str]]:
    for n, valid in enumerate(VALID):
        end = valid.rindex("</speak>")
        for cut in range(len("<speak>"), end + len("</speak>") - 1, 3):
            yield f"doc {n} cut at {cut}", valid[:cut]
        for match in _TAG.finditer(valid):
            renamed = valid[: match.start("name")] + "nope" + valid[match.end("name") :]
            yield f"doc {n} </{match['name']}> renamed", renamed
    for element, attribute, value in BAD_VALUES:
        extra = " alphabet='x-pinyin'" if attribute == "ph" else ""
        extra += " ph='a'" if attribute == "alphabet" else ""
        extra += (
            " interpret-as='cardinal'"
            if element == "say-as" and attribute != "interpret-as"
            else ""
        )
        document = f"<speak><{element} {attribute}='{value}'{extra}>1</{element}></speak>"
        if element == "break":
            document = f"<speak><{element} {attribute}='{value}'/></speak>"
        yield f"<{element} {attribute}='{value}'>", document
    for n, document in enumerate(REFUSED):
        yield f"refused {n}", document
