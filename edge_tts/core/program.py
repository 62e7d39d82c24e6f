"""The program's name (the distribution's) and its installed version, as every door
reports them (Wyoming's info, the HTTP door's /voices)."""

from __future__ import annotations

from importlib import metadata

PROGRAM = "edge-tts-daemon"


def program_version() -> str | None:
    try:
        return metadata.version(PROGRAM)
    except metadata.PackageNotFoundError:  # run from a source tree without installing
        return None
