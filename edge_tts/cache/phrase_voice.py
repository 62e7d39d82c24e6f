"""The voice that renders a voice's phrases ahead: the best build of it there is
(voice/builds.py says which), loaded at the lowest CPU priority; the builds a pass of
the pre-renderer (speech/prerender.py) loads and drops."""

from __future__ import annotations

import contextlib
import logging
import os
import threading

from ..config import SynthesisSettings
from ..voice import files
from ..voice.base import SpeechVoice
from ..voice.builds import packaged_original
from ..voice.model import Voice

_LOGGER = logging.getLogger(__name__)


def best_build_sha256(voice: SpeechVoice) -> str | None:
    """The digest of the better build of `voice`, or None when it is its own best."""
    if not isinstance(voice, Voice):
        return None
    original = packaged_original(voice.files.model)
    return original.sha256 if original is not None else None


def open_best_build(voice: SpeechVoice, threads: int, max_phonemes: int | None) -> SpeechVoice:
    """The voice that renders `voice`'s phrases ahead (not loaded yet): its FP32 original,
    or `voice` itself."""
    if not isinstance(voice, Voice):
        return voice
    original = packaged_original(voice.files.model)
    if original is None:
        return voice
    _LOGGER.info(
        "Phrases of %s (%s) are rendered with its FP32 original %s",
        voice.name,
        voice.files.model.name,
        original.path.name,
    )
    return Voice(files.from_model_path(original.path), original.sha256, threads, max_phonemes)


def load_at_low_priority(voice: SpeechVoice) -> None:
    """Load a voice at the lowest CPU priority, from a thread that exists for it (Linux:
    nice is per thread, so this thread's, and the child process that cuts the graph
    inherits it): reading, hashing and cutting the FP32 build take seconds that cannot be
    paused for a request, but at nice 19 they get the CPU only when nothing else wants it.
    The hardened unit refuses setpriority (SystemCallFilter=~@resources): there it loads
    at normal priority, which is why the daemon loads it before it takes requests
    (Prerenderer.prepare)."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux: normal priority
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    voice.load()


class PhraseBuilds:
    """The builds that render the phrases (each voice's best: FP32 for our INT8 default),
    loaded for a pass and dropped after it."""

    def __init__(self, synthesis: SynthesisSettings) -> None:
        self._synthesis = synthesis
        self._loaded: dict[int, SpeechVoice] = {}

    def get(self, voice: SpeechVoice) -> SpeechVoice | None:
        return self._loaded.get(id(voice))

    def load(self, voice: SpeechVoice, quietly: bool = False) -> None:
        """Load `voice`'s build, unless it is; `quietly`: at nice 19 (load_at_low_priority)."""
        if id(voice) in self._loaded:
            return
        build = open_best_build(voice, self._synthesis.threads, self._synthesis.max_phonemes)
        if quietly:
            load_at_low_priority(build)
        else:
            build.load()
        self._loaded[id(voice)] = build

    def clear(self) -> None:
        self._loaded.clear()
