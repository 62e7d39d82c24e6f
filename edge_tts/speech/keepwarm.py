"""Keeping the voices warm through a quiet spell, so the first announcement after it is
as quick as the ones before.

While a device is idle the kernel takes back what nobody touches: the pages of
onnxruntime's code and of the voices' libraries, and on a 1 GB Pi whatever memory
pressure reaches. The first request after an hour then pays for reading them back
(docs/benchmarks.md: time to first audio after a quiet spell). Every `keep_warm_s` of
idleness one short phrase is synthesized in each loaded voice and thrown away: a task of
the schedule's last class (`KEEP_WARM`), so it runs only when nothing else is queued,
playing or running, and a request that comes waits for at most that phrase.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..voice.base import SpeechOptions, SpeechVoice
from ..voice.chunk_audio import voice_audio
from ..voice.registry import Voices
from .jobs import StepTask

_LOGGER = logging.getLogger(__name__)

# One short sentence per language: a whole pass through the text front-end, the encoder
# and the decoder, for a few tens of milliseconds of CPU.
PHRASES = {"zh": "好的.", "en": "Ready."}  # as the text front-end hands them on


class KeepWarm:
    def __init__(self, voices: Voices, every_s: float, idle_since: Callable[[], float]) -> None:
        self._voices = voices
        self._every = every_s
        self._idle_since = idle_since  # the schedule's: when its last task ended
        self._lock = threading.Lock()
        self._busy = False
        self.runs = 0

    def due(self) -> bool:
        return self._every > 0 and time.monotonic() - self._idle_since() >= self._every

    # --- for the schedule (under its lock) ---------------------------------------------

    def take(self) -> StepTask | None:
        with self._lock:
            if self._busy or not self.due():
                return None
            self._busy = True
        return StepTask("keep-warm", self._step)

    # --- in a synthesis worker ----------------------------------------------------------

    def _step(self) -> None:
        started = time.monotonic()
        try:
            for voice in self._voices.all().values():
                if voice.loaded:
                    _speak(voice)
            self.runs += 1
            _LOGGER.debug("Voices kept warm in %.0f ms", (time.monotonic() - started) * 1000)
        finally:
            with self._lock:
                self._busy = False


def _speak(voice: SpeechVoice) -> None:
    language = voice.language.split("-")[0]
    phrase = PHRASES.get(language, PHRASES["en"])
    for _ in voice_audio(voice, phrase, SpeechOptions(), first=True):
        pass
