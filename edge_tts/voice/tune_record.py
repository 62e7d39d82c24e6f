"""The choice `edge-ttsd tune` recorded: `<state_dir>/tune.json`.

It holds, per voice, the build chosen and the evidence (every candidate's gate, RTF, TTFA
and RSS per thread count), with the machine it was measured on. Whether the daemon takes
the choice (only while it still holds) is voice/builds.py's to say.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from ..config import Settings
from ..state import read as state_file
from ..state.atomic import write_text_atomically

_LOGGER = logging.getLogger(__name__)

RECORD_NAME = "tune.json"
FORMAT = 1
MAX_RECORD_BYTES = 2**20  # a few kB a voice: its candidates' figures per thread count


def record_path(settings: Settings) -> Path:
    return settings.resolved_state_dir() / RECORD_NAME


def save(settings: Settings, record: dict[str, Any]) -> Path:
    path = record_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return path


def load(settings: Settings, set_aside: bool = True) -> dict[str, Any] | None:
    """The record, or None when there is none or it cannot be used: set aside with a
    warning, or with `set_aside` False (check-config, which reports it) left as it is."""
    path = record_path(settings)
    if not set_aside:
        try:
            return state_file.read_json(path, MAX_RECORD_BYTES, _record)
        except state_file.Unusable:
            return None
    return state_file.load_json(path, MAX_RECORD_BYTES, _record, "loading the configured builds")


def problem(path: Path) -> str | None:
    """Why the record at `path` cannot be used; None when it can (or there is none)."""
    return state_file.problem(path, MAX_RECORD_BYTES, _record)


def _record(value: object) -> dict[str, Any]:
    """The record, its shape checked as far as the daemon reads it; Unusable if not."""
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise state_file.Unusable(f"not a format {FORMAT} tuning record")
    voices, machine = value.get("voices"), value.get("machine")
    if not isinstance(voices, dict) or not isinstance(machine, dict):
        raise state_file.Unusable('"voices" and "machine" must be mappings')
    for name, entry in voices.items():
        if not _valid_entry(entry):
            raise state_file.Unusable(f"voice {name!r}: no valid chosen build")
    return value


def _valid_entry(entry: object) -> bool:
    if not isinstance(entry, dict):
        return False
    chosen = entry.get("chosen")
    return (
        isinstance(chosen, dict)
        and all(isinstance(chosen.get(key), str) for key in ("scheme", "path", "sha256"))
        and isinstance(entry.get("configured_sha256"), str | None)
    )
