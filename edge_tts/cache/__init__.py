"""The phrase cache: synthesized chunks kept on disk, so a repeated sentence plays without
synthesis, and configured phrases rendered ahead, at the best quality, while idle.

key.py (what makes two chunks the same) → entry.py (one file: audio and checksum) →
store.py (the directory, its index, LRU) → serving.py (`PhraseCache.audio()`, the hook
where the pipeline gets a chunk's voice audio) and prerender.py (the idle thread);
phrase_voice.py opens the build that renders phrases (voice/builds.py says which).
docs/synthesis.md: Phrase cache.
"""

from .prerender import Prerenderer
from .serving import ChunkAudio, PhraseCache
from .store import CacheStore
from .wiring import CacheService, load_phrases

__all__ = [
    "CacheService",
    "CacheStore",
    "ChunkAudio",
    "PhraseCache",
    "Prerenderer",
    "load_phrases",
]
