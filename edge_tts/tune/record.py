"""The choice `edge-ttsd tune` recorded, and which build the daemon loads because of it.

`<state_dir>/tune.json` holds, per voice, the build chosen and the evidence (every
candidate's gate, RTF, TTFA and RSS per thread count), with the machine it was measured
on. The daemon takes the choice only while it still holds: same CPU and onnxruntime, the
configured file and the chosen build unchanged (their digests). Otherwise it loads the
configured file and says why; a pin in the config (`voices.<name>.build`) always wins.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import AUTO_BUILD, Settings, VoiceSettings
from ..state import read as state_file
from ..state.atomic import write_text_atomically
from .builds import Build, configured_build, expected_digest, pinned_build
from .machine import fingerprint, same_machine

_LOGGER = logging.getLogger(__name__)

RECORD_NAME = "tune.json"
FORMAT = 1
MAX_RECORD_BYTES = 2**20  # a few kB a voice: its candidates' figures per thread count


@dataclass(frozen=True)
class Chosen:
    build: Build
    chosen_by: str  # "config" or "tune"
    why: str


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


def choose(
    name: str, vs: VoiceSettings, record: dict[str, Any] | None, machine: dict[str, object]
) -> Chosen:
    """The build the daemon loads for voice `name`."""
    if vs.build != AUTO_BUILD:
        return Chosen(pinned_build(vs), "config", f"voices.{name}.build pins {vs.build}")
    if record is None or name not in record.get("voices", {}):
        return Chosen(configured_build(vs, digest=False), "config", "not tuned on this machine")
    configured = configured_build(vs)
    problem = stale(name, record, configured, machine)
    if problem is not None:
        return Chosen(configured, "config", f"the tuning record does not hold: {problem}")
    chosen = _chosen(record["voices"][name])
    if chosen.path.resolve() == configured.path.resolve():
        return Chosen(configured, "tune", "tune kept the configured build")
    return Chosen(chosen, "tune", "tune chose it on this machine")


def stale(
    name: str, record: dict[str, Any], configured: Build, machine: dict[str, object]
) -> str | None:
    """Why the record's choice for `name` no longer holds; None when it does."""
    entry = record.get("voices", {}).get(name)
    if not isinstance(entry, dict) or "chosen" not in entry:
        return f"voice {name!r} was not tuned"
    moved = same_machine(record.get("machine", {}), machine)
    if moved is not None:
        return moved
    if entry.get("configured_sha256") != configured.sha256:
        return "the configured model changed since"
    build = _chosen(entry)
    try:
        now = expected_digest(build)
    except OSError as err:
        return f"the chosen build {build.path} cannot be read ({err.strerror})"
    if now != build.sha256:
        return f"the chosen build {build.path} changed since"
    return None


def _chosen(entry: dict[str, Any]) -> Build:
    """The build a voice's record entry names."""
    chosen = entry["chosen"]
    return Build(str(chosen["scheme"]), Path(chosen["path"]), str(chosen["sha256"]), False)


def choices(settings: Settings, set_aside: bool = True) -> dict[str, Chosen]:
    """Every configured voice's build, as the daemon would load it now."""
    record = load(settings, set_aside)
    machine = fingerprint()
    return {name: choose(name, vs, record, machine) for name, vs in settings.voices.items()}
