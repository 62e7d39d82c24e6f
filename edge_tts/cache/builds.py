"""Which build of a voice renders its phrases ahead: the best one there is.

The daemon speaks the default voice as our INT8 build because it is faster; the FP32
original it was quantized from sounds better (docs/quantization.md) and, while the
device is idle, its speed does not matter. So phrases are rendered with the FP32 model
when the voice is an INT8 build of the packaged voice (its manifest names the packaged
model's digest as its source); any other voice renders its phrases itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading

from ..voice import files
from ..voice.base import SpeechVoice
from ..voice.model import Voice

_LOGGER = logging.getLogger(__name__)


def _packaged() -> tuple[files.VoiceFiles, str]:
    packaged = files.packaged_fp32()
    return packaged, files.PACKAGED_DIGESTS[packaged.model.name]


def best_build_sha256(voice: SpeechVoice) -> str | None:
    """The digest of the better build of `voice`, or None when it is its own best."""
    if not isinstance(voice, Voice):
        return None
    packaged, digest = _packaged()
    if voice.files.model == packaged.model:
        return None
    return digest if files.source_sha256(voice.files.model) == digest else None


def open_best_build(voice: SpeechVoice, threads: int, max_phonemes: int | None) -> SpeechVoice:
    """The voice that renders `voice`'s phrases ahead (not loaded yet): its FP32 original,
    or `voice` itself."""
    if best_build_sha256(voice) is None:
        return voice
    packaged, digest = _packaged()
    _LOGGER.info(
        "Phrases of %s (%s) are rendered with its FP32 original %s",
        voice.name,
        voice.files.model.name if isinstance(voice, Voice) else voice.name,
        packaged.model.name,
    )
    return Voice(packaged, digest, threads, max_phonemes)


def load_quietly(voice: SpeechVoice) -> None:
    """Load a voice in a thread of the lowest CPU priority (Linux: nice is per thread, and
    the child process that cuts the graph inherits it): reading, hashing and cutting the
    FP32 build take seconds that cannot be paused for a request, but at nice 19 they get
    the CPU only when nothing else wants it. The hardened unit refuses setpriority
    (SystemCallFilter=~@resources): there it loads at normal priority, which is why the
    daemon loads it before it takes requests (Prerenderer.prepare)."""
    failure: list[BaseException] = []

    def load() -> None:
        with contextlib.suppress(OSError, AttributeError):  # not Linux: normal priority
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        try:
            voice.load()
        except BaseException as err:  # raised again in the pre-render thread
            failure.append(err)

    loader = threading.Thread(target=load, name="prerender-load", daemon=True)
    loader.start()
    loader.join()
    if failure:
        raise failure[0]
