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

from ..atomic import write_text_atomically
from ..config import AUTO_BUILD, Settings, VoiceSettings
from .builds import Build, configured_build, expected_digest, pinned_build
from .machine import fingerprint, same_machine

_LOGGER = logging.getLogger(__name__)

RECORD_NAME = "tune.json"
FORMAT = 1


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


def load(settings: Settings) -> dict[str, Any] | None:
    """The record, or None when there is none or it cannot be read (said in the log)."""
    path = record_path(settings)
    try:
        record = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        _LOGGER.warning("Ignoring the tuning record %s: %s", path, err)
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        _LOGGER.warning("Ignoring the tuning record %s: not format %d", path, FORMAT)
        return None
    return record


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


def choices(settings: Settings) -> dict[str, Chosen]:
    """Every configured voice's build, as the daemon would load it now."""
    record = load(settings)
    machine = fingerprint()
    return {name: choose(name, vs, record, machine) for name, vs in settings.voices.items()}
