"""X-SAMPA (the ASCII spelling of IPA that Polly and some Azure documents use in
`<phoneme alphabet="x-sampa">`) as IPA, for the voices that read IPA.

    to_ipa('"tS3:tS')  # 'ˈtʃɜːtʃ'

The common symbols of the X-SAMPA chart: consonants, vowels, stress, length, nasality
and the usual diacritics. A character not in the table is kept as it is: it is IPA
already (a, b, d, e, f, ...), or the voice refuses it when the request is planned.
"""

from __future__ import annotations

import re
from typing import Final

_SYMBOLS: Final = {
    # two or more characters first (the pattern below tries the longest)
    "tS": "tʃ",
    "dZ": "dʒ",
    "r\\": "ɹ",
    "h\\": "ɦ",
    "s\\": "ɕ",
    "z\\": "ʑ",
    "@\\": "ɘ",
    "3\\": "ɞ",
    "I\\": "ᵻ",
    "U\\": "ᵿ",
    ":\\": "ˑ",
    "_h": "ʰ",
    "_j": "ʲ",
    "_w": "ʷ",
    "_0": "̥",
    "_~": "̃",
    "_=": "̩",
    "_>": "ʼ",
    # one character
    "S": "ʃ",
    "Z": "ʒ",
    "T": "θ",
    "D": "ð",
    "N": "ŋ",
    "J": "ɲ",
    "R": "ʁ",
    "G": "ɣ",
    "C": "ç",
    "X": "χ",
    "K": "ɬ",
    "L": "ʎ",
    "W": "ʍ",
    "H": "ɥ",
    "P": "ʋ",
    "B": "β",
    "F": "ɱ",
    "4": "ɾ",
    "5": "ɫ",
    "?": "ʔ",
    "g": "ɡ",  # espeak-ng writes the IPA letter, not the Latin g
    "A": "ɑ",
    "{": "æ",
    "6": "ɐ",
    "Q": "ɒ",
    "E": "ɛ",
    "@": "ə",
    "3": "ɜ",
    "I": "ɪ",
    "O": "ɔ",
    "2": "ø",
    "9": "œ",
    "&": "ɶ",
    "U": "ʊ",
    "}": "ʉ",
    "V": "ʌ",
    "Y": "ʏ",
    "1": "ɨ",
    "M": "ɯ",
    "7": "ɤ",
    "8": "ɵ",
    '"': "ˈ",
    "%": "ˌ",
    ":": "ː",
    "~": "̃",
    "=": "̩",
}
_SYMBOL: Final = re.compile("|".join(re.escape(s) for s in sorted(_SYMBOLS, key=len, reverse=True)))


def to_ipa(text: str) -> str:
    return _SYMBOL.sub(lambda m: _SYMBOLS[m[0]], text)
