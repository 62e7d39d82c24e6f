"""espeak-ng's phonemes for a text, clause by clause, as Piper's voices were trained on.

We use the espeak-ng fork and data inside `piper-tts`, but not its `get_phonemes`: that
bridge (piper-tts 1.8) appends `Py_BuildValue(...)` to its result list without dropping
its own reference, so every clause's tuple and phoneme string are never freed. Measured
with tracemalloc over 2,000 one-sentence requests: +2 objects per request, forever; a
daemon speaks millions of clauses. We call the same C function of the same library
(its shared object exports it) through ctypes, and build the Python objects ourselves.
"""

from __future__ import annotations

import ctypes
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable

from piper import espeakbridge
from piper.phonemize_espeak import ESPEAK_DATA_DIR

# From espeak-ng's speak_lib.h and its clause flags (as Piper's bridge reads them).
_CHARS_AUTO = 0
_PHONEMES_IPA = 0x02
_CLAUSE_FLAGS = 0x000FFFFF
_SENTENCE = 0x00080000
_CLAUSE = 0x00040000
_TERMINATORS = {
    40 | 0x0000 | _SENTENCE: ".",
    40 | 0x2000 | _SENTENCE: "?",
    45 | 0x3000 | _SENTENCE: "!",
    20 | 0x1000 | _CLAUSE: ",",
    30 | 0x0000 | _CLAUSE: ":",
    30 | 0x1000 | _CLAUSE: ";",
}
_NOT_SENTENCE_END = (",", ":", ";")
_LANGUAGE_SWITCH = re.compile(r"\([^)]+\)")  # "(fr)" around words of another language

# espeak-ng keeps global state (the current voice, its buffers): one caller at a time.
_LOCK = threading.Lock()
_function: Callable[..., bytes | None] | None = None
_voice: str | None = None  # the voice espeak-ng has now (None: none yet, or unsure)


def _text_to_phonemes() -> Callable[..., bytes | None]:
    global _function
    if _function is None:
        espeakbridge.initialize(str(ESPEAK_DATA_DIR))
        function = ctypes.CDLL(espeakbridge.__file__).espeak_TextToPhonemesWithTerminator
        function.argtypes = [
            ctypes.POINTER(ctypes.c_void_p),
            ctypes.c_int,
            ctypes.c_int,
            ctypes.POINTER(ctypes.c_int),
        ]
        function.restype = ctypes.c_char_p
        _function = function
    return _function


def _use_voice(voice: str) -> None:
    """Set espeak-ng's voice only when it changes. Every espeak_SetVoiceByName mallocs a
    copy of the voice (DoVoiceChange, ~1.4 KB) that only its audio thread frees, when it
    synthesizes, which text-to-phonemes never does: set per call, that copy leaked per
    request. Measured: set_voice alone grew RSS 14.4 MB over 10,000 calls, phonemizing
    without it +0.0 (and 4x faster); the daemon's soak went from +1.5 MB per 1,000
    requests to +1.1 MB over 9,000. Now it leaks per change of language only. Nothing
    else in the process may set the voice (Piper's own phonemizer would). _LOCK held."""
    global _voice
    if voice != _voice:
        _voice = None  # a failed switch leaves espeak-ng's voice unknown: set it next time
        espeakbridge.set_voice(voice)
        _voice = voice


def clauses(voice: str, text: str) -> list[tuple[str, str, bool]]:
    """(IPA phonemes, terminating punctuation, ends a sentence) for each clause."""
    with _LOCK:
        function = _text_to_phonemes()
        _use_voice(voice)
        buffer = ctypes.create_string_buffer(text.encode("utf-8"))
        position = ctypes.c_void_p(ctypes.addressof(buffer))
        flags = ctypes.c_int()
        found = []
        while position.value is not None:  # espeak-ng moves it on, to NULL at the end
            phonemes = function(
                ctypes.byref(position), _CHARS_AUTO, _PHONEMES_IPA, ctypes.byref(flags)
            )
            kind = flags.value & _CLAUSE_FLAGS
            found.append(
                (
                    (phonemes or b"").decode("utf-8"),
                    _TERMINATORS.get(kind, ""),
                    kind & _SENTENCE == _SENTENCE,
                )
            )
        return found


def sentences(
    voice: str, text: str, vowel_clusters: Iterable[tuple[str, ...]] | None = None
) -> list[list[str]]:
    """Phonemes grouped by sentence, each phoneme a code point (accents separate), the
    clause punctuation kept as a phoneme: what Piper feeds its voices."""
    clusters = set(vowel_clusters or ())
    grouped: list[list[str]] = []
    current: list[str] = []
    for phonemes, terminator, ends_sentence in clauses(voice, text):
        piece = _LANGUAGE_SWITCH.sub("", phonemes) + terminator
        if terminator in _NOT_SENTENCE_END:
            piece += " "
        current.extend(unicodedata.normalize("NFD", piece))
        if ends_sentence:
            grouped.append(merge_clusters(current, clusters))
            current = []
    if current:
        grouped.append(merge_clusters(current, clusters))
    return grouped


def merge_clusters(phonemes: list[str], clusters: set[tuple[str, ...]]) -> list[str]:
    """Join runs that the voice knows as one phoneme (its `vowel_clusters`), longest first."""
    if not clusters:
        return phonemes
    longest = max(len(cluster) for cluster in clusters)
    merged: list[str] = []
    i = 0
    while i < len(phonemes):
        size = next(
            (
                n
                for n in range(min(longest, len(phonemes) - i), 1, -1)
                if tuple(phonemes[i : i + n]) in clusters
            ),
            1,
        )
        merged.append("".join(phonemes[i : i + size]))
        i += size
    return merged
