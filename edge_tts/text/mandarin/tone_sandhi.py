"""Tone sandhi: the tones Mandarin syllables take in context, which pypinyin's
ToneSandhiMixin applies only inside a word (pinyin.py's docstring lists the cases).

Input and output are the syllables of one run of Han characters, with pypinyin's word
segmentation; apply_sandhi() changes their tones in place and marks 儿化.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Final


@dataclass
class Syllable:
    char: str
    pinyin: str  # toneless: "zhong"
    tone: str  # "1".."5"
    word: int  # which word of its run (pypinyin's segmentation)
    first: bool  # first character of its word
    erhua: bool = False


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


def _char(syllables: list[Syllable], index: int) -> str:
    """The character at index, "" outside the run."""
    return syllables[index].char if 0 <= index < len(syllables) else ""


def _among(char: str, chars: str) -> bool:
    return bool(char) and char in chars  # "" is `in` every string


def _yi_tone(syllables: list[Syllable], i: int) -> str:
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


def _ends_word(syllables: list[Syllable], i: int) -> bool:
    """The last character of a word of two or more (统一, 唯一, 万一)."""
    last = i + 1 == len(syllables) or syllables[i + 1].word != syllables[i].word
    return last and not syllables[i].first


def _bu_tone(syllables: list[Syllable], i: int) -> str:
    before, after = _char(syllables, i - 1), _char(syllables, i + 1)
    if not after or after == "一":
        return "4"
    if before == after:
        return "5"  # 是不是, 好不好
    return "2" if syllables[i + 1].tone == "4" else "4"


def _is_erhua(syllables: list[Syllable], i: int) -> bool:
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


def _third_tone_groups(run: list[Syllable]) -> list[list[Syllable]]:
    """Consecutive third tones cut into groups of two or three syllables, at word
    boundaries where possible: 我想买|五把|雨伞."""
    groups: list[list[Syllable]] = []
    current: list[Syllable] = []
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


def _third_tones(syllables: list[Syllable]) -> None:
    """A third tone before another third tone in its group is said as a second tone."""
    spoken = [s for s in syllables if not s.erhua]
    for is_third, run in itertools.groupby(spoken, key=lambda s: s.tone == "3"):
        if is_third:
            for group in _third_tone_groups(list(run)):
                for syllable in group[:-1]:
                    syllable.tone = "2"


def apply_sandhi(syllables: list[Syllable]) -> None:
    for i, syllable in enumerate(syllables):
        if syllable.char == "不" and syllable.tone != "5":
            syllable.tone = _bu_tone(syllables, i)
    for i, syllable in enumerate(syllables):
        if syllable.char == "一" and not _ends_word(syllables, i):
            syllable.tone = _yi_tone(syllables, i)
        syllable.erhua = _is_erhua(syllables, i)
    _third_tones(syllables)
