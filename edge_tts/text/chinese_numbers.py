"""Numbers as a Mandarin speaker reads them: cardinals with 万/亿, decimals, digit strings,
money in 元/角/分.

Every function takes the digits as written (a string, so "007" keeps its zeros) and returns
Chinese characters only. cardinal(liang=False) was checked against cn2an 0.5.24's an2cn for
every integer below 200,000 and 20,000 random ones below 10^12: the same text, except where
a whole 万 group inside 亿 is zero (163600003531), where cn2an drops the 零 that belongs
there. cn2an itself is not a dependency: it reads 2个 as 二个, 13:05 as 十三:五, 12.50元 as
十二点五零元 and phone numbers as cardinals, so everything around the integer reading is
ours anyway, and it costs 0.4 s and 4.6 MiB at import (and a traditional-to-simplified pass
on every call) for the forty lines below.
"""

from typing import Final

DIGITS: Final = "零一二三四五六七八九"
# 幺 (yāo) for 1 in phone numbers and codes, where 一 (yī) is easily heard as 七 (qī).
_DIGITS_YAO: Final = "零幺二三四五六七八九"
_PLACES: Final = ((1000, "千"), (100, "百"), (10, "十"), (1, ""))
_GROUPS: Final = ("", "万", "亿")
# Cardinals are read up to 999,999,999,999 (九千九百九十九亿...); longer runs digit by digit.
MAX_CARDINAL_DIGITS: Final = 12
# 两, not 二, for a leading 2 before these: 两百, 两千, 两万, 两亿 (二百 is heard too; 两 is
# what the street and the radio say).
_LIANG_BEFORE: Final = "百千万亿"


def digits(text: str, *, yao: bool = False) -> str:
    """ "2026" -> 二零二六; with yao, "110" -> 幺幺零."""
    table = _DIGITS_YAO if yao else DIGITS
    return "".join(table[int(d)] for d in text if d.isdigit())


def _group(value: int) -> str:
    """1..9999 in full: 1005 -> 一千零五, 10 -> 一十 (the caller drops a leading 一)."""
    parts: list[str] = []
    gap = False
    for place, unit in _PLACES:
        digit = value // place % 10
        if digit == 0:
            gap = gap or bool(parts)
            continue
        if gap:
            parts.append("零")
            gap = False
        parts.append(DIGITS[digit] + unit)
    return "".join(parts)


def _cardinal(value: int) -> str:
    if value == 0:
        return "零"
    groups = []
    while value:
        value, group = divmod(value, 10_000)
        groups.append(group)
    parts: list[str] = []
    gap = False
    for group, unit in reversed(list(zip(groups, _GROUPS, strict=False))):
        if group == 0:
            gap = gap or bool(parts)
            continue
        if parts and (gap or group < 1000):
            parts.append("零")
        parts.append(_group(group) + unit)
        gap = False
    return "".join(parts)


def cardinal(text: str, *, liang: bool = True) -> str:
    """An integer written in digits: "10086" -> 一万零八十六, "12" -> 十二, "200" -> 两百.

    A leading 一十 is read 十; with liang, a leading 2 before 百/千/万/亿 is read 两. Runs too
    long for a cardinal are read digit by digit.
    """
    text = text.lstrip("0") or "0"
    if len(text) > MAX_CARDINAL_DIGITS:
        return digits(text)
    words = _cardinal(int(text))
    if words.startswith("一十"):
        words = words[1:]
    if liang and words[:1] == "二" and words[1:2] and words[1] in _LIANG_BEFORE:
        words = "两" + words[1:]
    return words


def decimal(integer: str, fraction: str) -> str:
    """ "3", "14" -> 三点一四; "0", "5" -> 零点五; fraction "" -> the integer alone."""
    whole = cardinal(integer)
    return f"{whole}点{digits(fraction)}" if fraction else whole


def money(integer: str, fraction: str) -> str:
    """Renminbi: "12", "50" -> 十二元五角; "12", "05" -> 十二元零五分; "0", "5" -> 五角.

    More than two decimals are read as a decimal amount: 十二点三四五元.
    """
    if len(fraction) > 2:
        return decimal(integer, fraction) + "元"
    jiao, fen = (int(d) for d in fraction.ljust(2, "0"))
    yuan = int(integer or "0")
    parts = [_small_or_cardinal(integer or "0") + "元"] if yuan or not (jiao or fen) else []
    if jiao:
        parts.append(_small(jiao) + "角")
    if fen:
        parts.append(("零" if parts and not jiao else "") + _small(fen) + "分")
    return "".join(parts)


def _small(digit: int) -> str:
    return "两" if digit == 2 else DIGITS[digit]


def _small_or_cardinal(integer: str) -> str:
    """两元, not 二元; 十二元, 两百元 as cardinal() reads them."""
    words = cardinal(integer)
    return "两" if words == "二" else words
