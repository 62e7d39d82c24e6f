"""The compact phrase table (text/mandarin/pinyin_phrases.py): what pypinyin gives, and the same
symbols as pypinyin's whole dictionary on real text."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from edge_tts.text.mandarin import pinyin_phrases

TESTS = Path(__file__).parent
EVALUATION = TESTS.parent / "edge_tts" / "voice" / "data" / "evaluation_zh.txt"
ANNOUNCEMENTS = [
    "各位乘客，列车即将到达北京南站，请带好随身物品，从左侧车门下车。",
    "前方施工，请减速慢行，注意安全。",
    "您的快递已经放在一楼大厅的柜子里了，取件码是三五七九。",
    "今天晚上有雷阵雨，气温十八到二十三度，出门记得带伞。",
    "车库门还没有关好，要不要我帮你关上？",
    "银行营业时间为早上九点到下午五点，周末不休息。",
    "请不要在车厢内吸烟，谢谢合作。",
    "孩子们好好学习，一会儿我们一起去公园玩儿。",
    "空调已经调到二十六度，窗户也关上了。",
    "会议改到明天下午三点，在三楼的大会议室。",
]

_SYMBOLS = (
    "import json, sys\n"
    "{first}\n"
    "from edge_tts.text.mandarin import pinyin\n"
    "texts = json.load(sys.stdin)\n"
    "print(json.dumps([pinyin.to_symbols(t) for t in texts]))\n"
)


def _texts() -> list[str]:
    texts = [*ANNOUNCEMENTS, *EVALUATION.read_text(encoding="utf-8").splitlines()]
    for module in ("test_pinyin.py", "test_text_chinese.py", "test_two_stage.py"):
        source = (TESTS / module).read_text(encoding="utf-8")
        texts += re.findall(r"[\u4e00-\u9fff][\u4e00-\u9fff，。、！？]+", source)
    return [text for text in texts if text.strip()]


def _symbols(texts: list[str], whole_dictionary: bool) -> list[list[str]]:
    # pypinyin imported before the front-end keeps its whole phrase dictionary: the
    # front-end's PYPINYIN_NO_PHRASES comes too late, and its table only repeats readings.
    first = "import pypinyin" if whole_dictionary else ""
    done = subprocess.run(
        [sys.executable, "-c", _SYMBOLS.format(first=first)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        env=_without_pypinyin_switches(),
    )
    symbols: list[list[str]] = json.loads(done.stdout)
    return symbols


def _without_pypinyin_switches() -> dict[str, str]:
    """This process's environment without PYPINYIN_*: with PYPINYIN_NO_PHRASES inherited,
    "the whole dictionary" would be empty and the comparison would prove nothing."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PYPINYIN_")}


@pytest.mark.daemon
def test_the_compact_table_says_what_the_whole_dictionary_says() -> None:
    texts = _texts()
    assert len(texts) > 100
    whole, compact = _symbols(texts, True), _symbols(texts, False)
    differ = [(t, w, c) for t, w, c in zip(texts, whole, compact, strict=True) if w != c]
    assert not differ, differ[:3]


@pytest.mark.daemon
def test_the_shipped_table_is_what_the_pinned_pypinyin_gives() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "edge_tts.text.mandarin.pinyin_phrases", "--check"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYPINYIN_NO_PHRASES": "1"},  # the generator must not mind
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.unit
def test_the_front_end_leaves_no_pypinyin_switch_behind() -> None:
    from edge_tts.text.mandarin import pinyin

    pinyin.load()
    assert not [name for name in os.environ if name.startswith("PYPINYIN_")]


@pytest.mark.daemon
def test_the_front_end_loads_the_compact_table_only() -> None:
    code = (
        "from edge_tts.text.mandarin import pinyin; pinyin.load()\n"
        "from pypinyin.constants import PHRASES_DICT\n"
        "print(len(PHRASES_DICT), PHRASES_DICT['银行'])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    count, readings = done.stdout.split(" ", 1)
    assert int(count) == len(pinyin_phrases.read()) < 20_000
    assert "háng" in readings


@pytest.mark.unit
def test_compact_keeps_changed_readings_and_sandhi_words() -> None:
    defaults = {ord("银"): "yín", ord("行"): "xíng,háng", ord("老"): "lǎo", ord("虎"): "hǔ"}
    defaults |= {ord("一"): "yī", ord("天"): "tiān", ord("人"): "rén"}
    phrases = {
        "银行": [["yín"], ["háng"]],  # a polyphone read in context: kept
        "行人": [["xíng"], ["rén"]],  # as the characters read: dropped
        "老虎": [["lǎo"], ["hǔ"]],  # two third tones: kept (sandhi looks at words)
        "一天": [["yī"], ["tiān"]],  # 一: kept
    }
    tone3 = ["yin2 hang2", "xing2 ren2", "lao3 hu3", "yi1 tian1"]
    assert pinyin_phrases.compact(phrases, defaults, tone3) == {
        "银行": "yín háng",
        "老虎": "lǎo hǔ",
        "一天": "yī tiān",
    }
