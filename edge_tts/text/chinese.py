"""Mandarin expansion: dates, times, phone numbers, money, percentages, units and numbers ->
Chinese characters, the way a Mandarin speaker reads them.

Input is cleaned text (clean.py folded ，。！：、 to ASCII, full-width digits to 0-9, ℃ to °C).
The rules in _RULES run in order, the specific before the general; each turns its digits
into characters so later rules never see them again.

Reading choices:
- Years digit by digit (2026年 -> 二零二六年), months and days as cardinals (十一月三十日).
- Times: 13:05 -> 十三点零五分, 8:00 -> 八点整, 2:30 -> 两点三十分.
- 两 for 2 before a measure word (两个, 两公里, 两点) and before 百/千/万/亿 (两百, 两万);
  二 elsewhere (第二, 二月, 二号, 二十二).
- Phone numbers and codes digit by digit with 幺 for 1 (拨打110 -> 拨打幺幺零,
  13800138000 -> 幺三八零零幺三八零零零): an 11-digit number starting with 1, a number
  with a leading zero, a dashed phone number, digits after 电话/验证码/房间... or after
  letters (G1234). Years and decimals keep 一.
- Money in 元/角/分 (¥12.50 -> 十二元五角); $/€/£ as decimals (五点九九美元).
- Negative temperatures are 零下 (-5°C -> 零下五摄氏度), other negatives 负.
"""

import re
from collections.abc import Callable
from typing import Final

from edge_tts.text import chinese_numbers as num
from edge_tts.text.clean import UNIT_JOINER, joined_characters, tidy

Replacement = str | Callable[[re.Match[str]], str]
Rule = tuple[re.Pattern[str], Replacement]

_HAN: Final = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
# A number as written: digits with optional thousands commas, then an optional decimal part.
# The lookbehind keeps a match from starting inside a run of digits.
_INT: Final = r"(?:(?<![\d,])\d{1,3}(?:,\d{3})++(?!\d)|(?<!\d)\d++)"
_NUM: Final = rf"(?<![\d.])(?P<int>{_INT})(?:\.(?P<frac>\d++))?"


def _digits_of(text: str) -> str:
    return text.replace(",", "")


def _number(match: re.Match[str]) -> str:
    return num.decimal(_digits_of(match["int"]), match["frac"] or "")


# --- dates and times ----------------------------------------------------------------------


def _date(year: str, month: str, day: str) -> str:
    return f"{num.digits(year)}年{num.cardinal(month)}月{num.cardinal(day)}日"


_NUMERIC_DATE: Final = re.compile(
    r"(?<![\d.:/-])(?P<y>\d{4})(?P<sep>[-/.])(?P<m>1[0-2]|0?[1-9])(?P=sep)"
    r"(?P<d>3[01]|[12]\d|0?[1-9])(?![\d:/-]|\.\d)"
)
_YEAR: Final = re.compile(r"(?<!\d)(?P<y>1[5-9]\d\d|2[01]\d\d)(?=年)")
_MONTH: Final = re.compile(r"(?<![\d.])(?P<n>1[0-2]|0?[1-9])(?=月)")
_DAY: Final = re.compile(r"(?<![\d.])(?P<n>3[01]|[12]\d|0?[1-9])(?=[日号])")
_CLOCK: Final = re.compile(
    r"(?<![\d:.])(?P<h>[01]?\d|2[0-4]):(?P<m>[0-5]\d)(?::(?P<s>[0-5]\d))?(?![\d:])"
)
# 9:00-17:30, 11月1日-3日: the dash between two expanded times or dates.
_CLOCK_OR_DATE_RANGE: Final = re.compile(
    r"(?<=[分整秒日]) ?[~-] ?(?=[一二三四五六七八九十两零]|\d)"
)
# "3:2" (a score, a ratio): what is left of colons between numbers after the clock times.
_RATIO: Final = re.compile(r"(?<=\d):(?=\d)")


def _numeric_date(match: re.Match[str]) -> str:
    return _date(match["y"], match["m"], match["d"])


def _unit(read: Replacement) -> Callable[[re.Match[str]], str]:
    """A rule that reads one unit (a number, a date, an amount): its characters joined,
    so no chunk is cut inside it ("负一千 | 二百三十四")."""
    if isinstance(read, str):
        return lambda match: joined_characters(read) + UNIT_JOINER  # 负, 零下: the number's
    return lambda match: joined_characters(read(match))


def _date_part(read: Callable[[re.Match[str]], str], after: str) -> Callable[[re.Match[str]], str]:
    """2026年11月3日: each number joined to its 年/月/日, and to the part before it."""

    def joined(match: re.Match[str]) -> str:
        before = match.string[match.start() - 1 : match.start()]
        lead = UNIT_JOINER if after and before == after else ""
        return lead + joined_characters(read(match)) + UNIT_JOINER

    return joined


def _clock(match: re.Match[str]) -> str:
    hour = "两" if match["h"].lstrip("0") == "2" else num.cardinal(match["h"])
    minute, second = match["m"], match["s"]
    if minute == "00" and second is None:
        return f"{hour}点整"
    words = f"{hour}点{_two_digits(minute)}分"
    return f"{words}{_two_digits(second)}秒" if second else words


def _two_digits(text: str) -> str:
    """Minutes and seconds: "05" -> 零五, "30" -> 三十, "00" -> 零."""
    if text.startswith("0") and text != "00":
        return "零" + num.DIGITS[int(text[1])]
    return num.cardinal(text, liang=False)


# --- phone numbers and codes --------------------------------------------------------------

_CODE_WORDS: Final = (
    "电话|手机|热线|拨打|致电|呼叫|分机|号码|验证码|密码|编号|尾号|车次|航班|房间|工号"
    "|卡号|单号|订单|邮编|车牌|QQ"
)
_AFTER_CODE_WORD: Final = re.compile(
    rf"(?P<lead>(?:{_CODE_WORDS})号?(?:是|为)?:? ?)(?P<code>\d(?:[ -]?+\d)*+)(?![\d.])"
)
_DASHED_PHONE: Final = re.compile(
    r"(?<![\d-])(?P<code>(?:0\d{2,3}|400|800)-\d{3,8}(?:-\d{3,4})?|1\d{2}-\d{4}-\d{4})(?![\d-])"
)
_MOBILE: Final = re.compile(r"(?<![\d.])1[3-9]\d{9}(?![\d.])")
_LEADING_ZERO: Final = re.compile(r"(?<![\d.,])0\d++(?![\d.])")
_LETTER_CODE: Final = re.compile(r"(?<=[A-Za-z])\d{3,}+(?![\d.])")
_TOO_LONG: Final = re.compile(rf"(?<!\d)\d{{{num.MAX_CARDINAL_DIGITS + 1},}}+")
_DOTTED: Final = re.compile(r"(?<![\d.])\d++(?:\.\d++){2,}+(?![\d.])")


def _code(match: re.Match[str]) -> str:
    groups = match.groupdict()
    code = num.digits(groups.get("code") or match.group(), yao=True)
    return (groups.get("lead") or "") + joined_characters(code)


def _dotted(match: re.Match[str]) -> str:
    """Addresses and versions: 192.168.1.1 -> 幺九二点幺六八点幺点幺."""
    return "点".join(num.digits(part, yao=True) for part in match.group().split("."))


# --- money, percentages, units ------------------------------------------------------------

_YUAN_BEFORE: Final = re.compile(rf"(?:[¥￥]|人民币) ?{_NUM}(?: ?元)?")
_YUAN_AFTER: Final = re.compile(rf"{_NUM}元")
_FOREIGN_CURRENCY: Final = {"$": "美元", "€": "欧元", "£": "英镑"}
_FOREIGN: Final = re.compile(rf"(?P<sign>[$€£]) ?{_NUM}")
_TEMPERATURE_MINUS: Final = re.compile(
    r"(?<![\dA-Za-z.])-(?=\d++(?:\.\d++)? ?(?:[~-] ?-?\d++(?:\.\d++)? ?)?°[CF])"
)
_NUMBER_RANGE_PERCENT: Final = re.compile(rf"{_NUM} ?[~-] ?(?=\d[\d,.]*+%)")
_RANGE: Final = re.compile(r"(?<=[\d%]) ?[~-] ?(?=\d)")
_PERCENT: Final = re.compile(rf"(?P<minus>(?<![\dA-Za-z.])-)?{_NUM} ?%")
_NEGATIVE: Final = re.compile(r"(?<![\dA-Za-z.])-(?=\d)")
_FRACTION: Final = re.compile(r"(?<![\d/])(?P<a>\d{1,4})/(?P<b>\d{1,4})(?![\d/])")

# Units read after a number, longest first so "km/h" wins over "km" and "mg" over "m".
_UNITS: Final = {
    "km/h": "公里每小时",
    "m/s": "米每秒",
    "mph": "英里每小时",
    "kWh": "千瓦时",
    "mAh": "毫安时",
    "km²": "平方公里",
    "m²": "平方米",
    "m³": "立方米",
    "°C": "摄氏度",
    "°F": "华氏度",
    "°": "度",
    "km": "公里",
    "cm": "厘米",
    "mm": "毫米",
    "m": "米",
    "kg": "公斤",
    "mg": "毫克",
    "g": "克",
    "ml": "毫升",
    "mL": "毫升",
    "L": "升",
    "kW": "千瓦",
    "W": "瓦",
    "V": "伏",
    "GHz": "吉赫",
    "MHz": "兆赫",
    "kHz": "千赫",
    "Hz": "赫兹",
    "dB": "分贝",
    "min": "分钟",
    "ms": "毫秒",
    "h": "小时",
    "s": "秒",
}
_UNIT: Final = re.compile(
    r"(?<=\d) ?(?P<unit>"
    + "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
    + r")(?![A-Za-z/²³])"
)


def _yuan(match: re.Match[str]) -> str:
    return num.money(_digits_of(match["int"]), match["frac"] or "")


def _foreign(match: re.Match[str]) -> str:
    amount = _number(match)
    return ("两" if amount == "二" else amount) + _FOREIGN_CURRENCY[match["sign"]]


def _percent(match: re.Match[str]) -> str:
    return ("负" if match["minus"] else "") + "百分之" + _number(match)


def _percent_range(match: re.Match[str]) -> str:
    return f"{match.group().rstrip('~- ')}%到"


def _fraction(match: re.Match[str]) -> str:
    return f"{num.cardinal(match['b'])}分之{num.cardinal(match['a'])}"


# --- plain numbers ------------------------------------------------------------------------

# After a bare 2 these are counted, so it is read 两: 两个, 两公里, 两点 (o'clock), 两万.
_MEASURE_WORDS: Final = (
    "个只本位件条张次天年岁人名辆台种家间口块头匹架把支根双对份项场座首篇句排批套杯瓶"
    "碗盘箱包袋斤吨倍部片节颗粒艘封趟遍下声枚幅笔户栋站周元角分米克升秒度点百千万亿",
    ("小时", "分钟", "公里", "公斤", "公分", "千米", "千克", "厘米", "毫米", "星期", "礼拜"),
)
_NOT_COUNTED: Final = ("年级", "分之")


def _is_counted(text: str, end: int) -> bool:
    after = text[end : end + 6].replace(UNIT_JOINER, "").lstrip(" ")
    if after.startswith(_NOT_COUNTED):
        return False
    return bool(after) and (after[0] in _MEASURE_WORDS[0] or after.startswith(_MEASURE_WORDS[1]))


def _plain_number(match: re.Match[str]) -> str:
    integer, fraction = _digits_of(match["int"]), match["frac"] or ""
    if fraction:
        return num.decimal(integer, fraction)
    text = match.string
    ordinal = text[match.start() - 1 : match.start()] == "第"
    if integer == "2" and not ordinal and _is_counted(text, match.end()):
        return "两"
    return num.cardinal(integer, liang=not ordinal)


_SYMBOLS: Final[tuple[Rule, ...]] = (
    (re.compile(r" ?(?:<=|≤) ?"), "小于等于"),  # espeak-ng and the Baker voice say nothing
    (re.compile(r" ?(?:>=|≥) ?"), "大于等于"),  # for < and >: "温度<5度" lost its meaning
    (re.compile(r" ?(?:!=|<>|≠) ?"), "不等于"),
    (re.compile(r" ?(?:->|=>|→) ?"), "到"),
    (re.compile(r" ?< ?"), "小于"),
    (re.compile(r" ?> ?"), "大于"),
    (re.compile(r" ?& ?"), "和"),
    (re.compile(r"(?<=\d) ?[xX×*] ?(?=\d)"), "乘"),
)
# Spaces between Chinese characters carry nothing (they come from "共 5 个" and the like).
_SPACE_IN_HAN: Final = re.compile(rf"(?<=[{_HAN}]) (?=[{_HAN}])")

_RULES: Final[tuple[Rule, ...]] = (
    (_NUMERIC_DATE, _unit(_numeric_date)),
    (_YEAR, _date_part(lambda m: num.digits(m["y"]), "")),
    (_MONTH, _date_part(lambda m: num.cardinal(m["n"]), "年")),
    (_DAY, _date_part(lambda m: num.cardinal(m["n"]), "月")),
    (_CLOCK, _unit(_clock)),
    (_CLOCK_OR_DATE_RANGE, "到"),
    (_DOTTED, _unit(_dotted)),
    *_SYMBOLS,
    (_AFTER_CODE_WORD, _code),
    (_DASHED_PHONE, _code),
    (_MOBILE, _code),
    (_LETTER_CODE, _code),
    (_TOO_LONG, _code),
    (_LEADING_ZERO, _code),
    (_RATIO, "比"),
    (_YUAN_BEFORE, _unit(_yuan)),
    (_YUAN_AFTER, _unit(_yuan)),
    (_FOREIGN, _unit(_foreign)),
    (_TEMPERATURE_MINUS, _unit("零下")),
    (_NUMBER_RANGE_PERCENT, _percent_range),
    (_RANGE, "到"),
    (_PERCENT, _unit(_percent)),
    (_FRACTION, _unit(_fraction)),
    (_UNIT, lambda m: UNIT_JOINER + joined_characters(_UNITS[m["unit"]])),  # the number's
    (_NEGATIVE, _unit("负")),
    (re.compile(_NUM), _unit(_plain_number)),
    (_SPACE_IN_HAN, ""),
)


def expand(text: str) -> str:
    """Expand cleaned Mandarin text: every digit becomes Chinese characters."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return tidy(text)
