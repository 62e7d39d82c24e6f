"""The phrase cache: synthesized chunks kept on disk, so a repeated sentence plays without
synthesis, and configured phrases rendered ahead, at the best quality, while idle.

key.py (what makes two chunks the same) → entry.py (one file: audio and checksum) →
store.py (the directory; recency.py its index, LRU) → serving.py (`PhraseCache.audio()`, the hook
where the pipeline gets a chunk's voice audio); phrase_voice.py opens the build that
renders phrases (voice/builds.py says which). The engine runs it: speech/prerender.py
(the idle work that renders phrases ahead) and speech/cache_service.py (the daemon's
cache: store, lookup, pre-renderer).
docs/synthesis.md: Phrase cache.
"""

from ..core.telemetry import Figures
from .serving import ChunkAudio, PhraseCache
from .store import CacheStore

FIGURES = Figures(
    counters=(
        "cache_hits",  # chunks served from the phrase cache
        "cache_misses",  # chunks looked up there and synthesized
    )
)

__all__ = [
    "FIGURES",
    "CacheStore",
    "ChunkAudio",
    "PhraseCache",
]
