"""Mandarin normalization (numbers, dates, times, money, units -> characters) and splitting."""

import pytest

from edge_tts.text import chinese_numbers as num
from edge_tts.text import normalize, split_long, split_sentences
from edge_tts.text.languages import expander_for

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("digits", "words"),
    [
        ("0", "零"),
        ("7", "七"),
        ("10", "十"),
        ("12", "十二"),
        ("20", "二十"),
        ("105", "一百零五"),
        ("110", "一百一十"),
        ("1005", "一千零五"),
        ("1050", "一千零五十"),
        ("10086", "一万零八十六"),
        ("100000", "十万"),
        ("100010", "十万零一十"),
        ("120000", "十二万"),
        ("1000000", "一百万"),
        ("100000001", "一亿零一"),
        ("163600003531", "一千六百三十六亿零三千五百三十一"),  # cn2an drops this 零
        ("200", "两百"),
        ("2000", "两千"),
        ("22000", "两万二千"),
        ("220000", "二十二万"),
        ("200000000", "两亿"),
        ("2", "二"),
        ("007", "七"),
        ("1234567890123", "一二三四五六七八九零一二三"),  # past 千亿: digit by digit
    ],
)
def test_cardinal(digits: str, words: str) -> None:
    assert num.cardinal(digits) == words


@pytest.mark.parametrize(
    ("integer", "fraction", "words"),
    [
        ("12", "50", "十二元五角"),
        ("12", "5", "十二元五角"),
        ("12", "05", "十二元零五分"),
        ("12", "", "十二元"),
        ("12", "00", "十二元"),
        ("0", "50", "五角"),
        ("0", "05", "五分"),
        ("0", "00", "零元"),
        ("2", "22", "两元两角两分"),
        ("1234", "56", "一千二百三十四元五角六分"),
        ("1", "005", "一点零零五元"),
    ],
)
def test_money(integer: str, fraction: str, words: str) -> None:
    assert num.money(integer, fraction) == words


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        # Integers, 两 where it is said.
        ("10086", "一万零八十六"),
        ("2个", "两个"),
        ("2 个人", "两个人"),
        ("买2张票", "买两张票"),
        ("2公里", "两公里"),
        ("下午2点", "下午两点"),
        ("2万人", "两万人"),
        ("200", "两百"),
        ("2000元", "两千元"),
        ("22个", "二十二个"),
        ("12个", "十二个"),
        ("第2名", "第二名"),
        ("第3", "第三"),
        ("第200位", "第二百位"),
        ("2号线", "二号线"),
        ("2年级", "二年级"),
        ("2", "二"),
        ("共 5 个", "共五个"),
        ("1,234,567人", "一百二十三万四千五百六十七人"),
        # Decimals, negatives, fractions, ratios.
        ("3.14", "三点一四"),
        ("0.5", "零点五"),
        ("2.0", "二点零"),
        ("-3.5", "负三点五"),
        ("下降-2", "下降负二"),
        ("1/2", "二分之一"),
        ("3/4的人", "四分之三的人"),
        ("比分3:2", "比分三比二"),
        ("PM2.5", "PM二点五"),
        # Percentages.
        ("50%", "百分之五十"),
        ("3.5%", "百分之三点五"),
        ("-2%", "负百分之二"),
        ("５０％", "百分之五十"),
        ("5-10%", "百分之五到百分之十"),
        ("10%~20%", "百分之十到百分之二十"),
        # Money.
        ("¥12.50", "十二元五角"),
        ("￥12.05", "十二元零五分"),
        ("12.50元", "十二元五角"),
        ("人民币100元", "一百元"),
        ("¥0.5", "五角"),
        ("¥2", "两元"),
        ("2元", "两元"),
        ("$5.99", "五点九九美元"),
        ("€3", "三欧元"),
        # Dates.
        ("2026年11月30日", "二零二六年十一月三十日"),
        ("2026-11-30", "二零二六年十一月三十日"),
        ("2026/1/5", "二零二六年一月五日"),
        ("2026.01.05", "二零二六年一月五日"),
        ("2月", "二月"),
        ("2个月", "两个月"),
        ("11月1日-3日", "十一月一日到三日"),
        ("3号", "三号"),
        ("1998年", "一九九八年"),
        ("300年", "三百年"),
        # Times.
        ("13:05", "十三点零五分"),
        ("8:30", "八点三十分"),
        ("08:30", "八点三十分"),
        ("8:00", "八点整"),
        ("2:30", "两点三十分"),
        ("0:15", "零点十五分"),
        ("13:05:09", "十三点零五分零九秒"),
        ("9:00-17:30", "九点整到十七点三十分"),
        # Ranges.
        ("3-5天", "三到五天"),
        ("3~5天", "三到五天"),
        ("1-2个", "一到两个"),
        ("第3-5名", "第三到五名"),
        # Phone numbers and codes: digit by digit, 1 as 幺.
        ("13800138000", "幺三八零零幺三八零零零"),
        ("拨打110", "拨打幺幺零"),
        ("请拨打10086", "请拨打幺零零八六"),
        ("电话: 010-12345678", "电话: 零幺零幺二三四五六七八"),
        ("400-800-1234", "四零零八零零幺二三四"),
        ("138-0013-8000", "幺三八零零幺三八零零零"),
        ("验证码是385611", "验证码是三八五六幺幺"),
        ("验证码为 2048", "验证码为二零四八"),
        ("房间号302", "房间号三零二"),
        ("尾号8856", "尾号八八五六"),
        ("G1234次列车", "G幺二三四次列车"),
        ("A380", "A三八零"),
        ("iPhone15", "iPhone十五"),
        ("007", "零零七"),
        ("192.168.1.1", "幺九二点幺六八点幺点幺"),
        # Units.
        ("今天-5℃", "今天零下五摄氏度"),
        ("-5~3℃", "零下五到三摄氏度"),
        ("气温20°C", "气温二十摄氏度"),
        ("华氏98.6°F", "华氏九十八点六华氏度"),
        ("时速120km/h", "时速一百二十公里每小时"),
        ("5 km", "五公里"),
        ("2km", "两公里"),
        ("3kg", "三公斤"),
        ("500g", "五百克"),
        ("100kWh", "一百千瓦时"),
        ("50m", "五十米"),
        ("30cm", "三十厘米"),
        ("1.5L", "一点五升"),
        ("5000mAh", "五千毫安时"),
        ("100m²", "一百平方米"),
        ("24h", "二十四小时"),
        ("30min", "三十分钟"),
        ("3 m/s", "三米每秒"),
        ("5G网络", "五G网络"),
        # Punctuation comes from clean(); text without numbers is unchanged.
        ("今天，天气很好！明天：下雨。", "今天,天气很好!明天:下雨."),
        ("前方路口请左转", "前方路口请左转"),
        ("苹果&香蕉", "苹果和香蕉"),
        ("1920x1080", "一千九百二十乘一千零八十"),
    ],
)
def test_expand(text: str, expanded: str) -> None:
    assert normalize(text, "zh") == expanded


@pytest.mark.parametrize("language", ["zh", "zh_CN", "zh-TW", "ZH"])
def test_mandarin_is_registered(language: str) -> None:
    assert expander_for(language) is not None


def test_no_digit_survives() -> None:
    text = "1 22 333 4444 55555 1.5 -7 8% 9:30 12:00:01 2026-11-30 ¥3 $4 5km 6/7 8~9 0"
    assert not any(char.isdigit() for char in normalize(text, "zh"))


# --- splitting: 。！？； end a sentence and ，、：clauses without a space after them ---------


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("你好.世界", ["你好.", "世界"]),
        ("前方路口请左转.请注意安全!", ["前方路口请左转.", "请注意安全!"]),
        ("真的吗?是的.", ["真的吗?", "是的."]),
        ("注意;前方施工", ["注意;", "前方施工"]),
        ("你好. 世界", ["你好.", "世界"]),
        ('他说:"走!"然后离开.', ['他说:"走!"', "然后离开."]),
        ("请用GPS.我们走", ["请用GPS.", "我们走"]),
        ("等等...好的", ["等等...", "好的"]),
        # Raw full-width marks split the same way.
        ("你好。世界！再见？", ["你好。", "世界！", "再见？"]),
        # Between Latin letters and digits nothing changes.
        ("版本3.5发布", ["版本3.5发布"]),
        ("a;b 你好", ["a;b 你好"]),
    ],
)
def test_split_sentences_cjk(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


@pytest.mark.parametrize(
    ("sentence", "max_chars", "chunks"),
    [
        (
            "前方路口,请左转,然后直行三百米,到达目的地.",
            10,
            ["前方路口,请左转,", "然后直行三百米,", "到达目的地."],
        ),
        ("注意:前方有测速摄像头", 8, ["注意:", "前方有测速摄像头"]),
        ("苹果,香蕉,橙子", 6, ["苹果,", "香蕉,橙子"]),  # evened out, as English
        ("你好，世界你好世界", 4, ["你好，", "世界你好", "世界"]),
        # No clause mark: cut at the limit.
        ("前方路口请左转然后直行", 4, ["前方路口", "请左转然", "后直行"]),
        # English clause marks still need their space.
        ("1,234 and 5:30", 6, ["1,234", "and", "5:30"]),
    ],
)
def test_split_long_cjk(sentence: str, max_chars: int, chunks: list[str]) -> None:
    assert split_long(sentence, max_chars) == chunks
