"""The phrase table the Mandarin front-end gives pypinyin: the part of pypinyin's own
phrase dictionary that changes what is said (13.7k of its 47k phrases).

pypinyin's whole dictionary costs ~56 MB of RSS; with this table instead (pypinyin's
PYPINYIN_NO_PHRASES, then `load_phrases_dict`) ~27 MB (docs/benchmarks.md, "Mandarin
voice"). A phrase is kept when

- its reading differs from its characters' default readings: a polyphone read in
  context (银行 háng, 重新 chóng, 音乐 yuè), a neutral tone (觉得 de);
- or it holds 一, 不 or 儿, or two third tones in a row: tone sandhi and 儿化 look at word
  boundaries (tone_sandhi.py), so those words must still be found as words.

Every other phrase reads as its characters do, and dropping it changes no symbol of the
texts in tests/test_pinyin_phrases.py. On random concatenations of dictionary phrases
0.09 % of the symbols differ: there a dropped phrase used to win the segmentation at a
junction (烈女|红学 against 烈|女红|学), both readings defensible.

data/zh_phrases.tsv is generated from the pinned pypinyin by
`python -m edge_tts.text.mandarin.pinyin_phrases` (in a process of its own: it needs the whole
dictionary); `--check` says whether the shipped table is still what pypinyin gives. The
data is pypinyin's (MIT, from mozillazg/phrase-pinyin-data).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final

TABLE: Final = Path(__file__).parent / "data" / "zh_phrases.tsv"
_SANDHI_CHARS: Final = "一不儿"


def read(path: Path = TABLE) -> dict[str, list[list[str]]]:
    """The table in load_phrases_dict's form: {"银行": [["yín"], ["háng"]]}."""
    table: dict[str, list[list[str]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        phrase, _, readings = line.partition("\t")
        # One string object per syllable across the table: it repeats a few hundred.
        table[phrase] = [[sys.intern(reading)] for reading in readings.split()]
    return table


def compact(
    phrases: Mapping[str, list[list[str]]], defaults: Mapping[int, str], tone3: Iterable[str]
) -> dict[str, str]:
    """The phrases worth keeping, each with its readings joined by spaces. `defaults` is
    pypinyin's character table (code point -> "reading,reading"), `tone3` the phrases'
    readings in TONE3 style (neutral 5), one string per phrase, in `phrases`' order."""
    kept = {}
    for (phrase, readings), numbered in zip(phrases.items(), tone3, strict=True):
        spoken = [reading[0] for reading in readings]
        usual = [defaults.get(ord(char), "").split(",")[0] for char in phrase]
        tones = [syllable[-1:] for syllable in numbered.split()]
        third_pair = any(a == b == "3" for a, b in itertools.pairwise(tones))
        if spoken != usual or third_pair or any(c in _SANDHI_CHARS for c in phrase):
            kept[phrase] = " ".join(spoken)
    return kept


def generate() -> str:
    """The table's text from the installed pypinyin's whole dictionary."""
    if "pypinyin" in sys.modules:
        raise RuntimeError("needs a fresh process with pypinyin's whole phrase dictionary")
    os.environ.pop("PYPINYIN_NO_PHRASES", None)  # inherited, it would empty the dictionary
    os.environ["PYPINYIN_NO_DICT_COPY"] = "1"
    from pypinyin.constants import PHRASES_DICT, PINYIN_DICT
    from pypinyin.style._tone_convert import to_tone3

    tone3 = (
        " ".join(to_tone3(r[0], neutral_tone_with_five=True) for r in readings)
        for readings in PHRASES_DICT.values()
    )
    kept = compact(PHRASES_DICT, PINYIN_DICT, tone3)
    return "".join(f"{phrase}\t{kept[phrase]}\n" for phrase in sorted(kept))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        same = TABLE.read_text(encoding="utf-8") == text
        print(f"{TABLE}: {'up to date' if same else 'differs from what pypinyin gives'}")
        return 0 if same else 1
    TABLE.write_text(text, encoding="utf-8")
    print(f"{TABLE}: {text.count(chr(10))} phrases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
