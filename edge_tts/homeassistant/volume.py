"""The output volume set over MQTT (Home Assistant's Volume slider), kept across restarts.

Stored in `<state_dir>/volume.json` with the `audio.volume` it replaced: once the config's
value changes, the config wins again (an administrator who edits the file means it).
Saved on a thread of its own, never on paho's; written atomically (a crash leaves the old
or the new file), and a file that cannot be used is set aside with a warning (state_file).
"""

from __future__ import annotations

import json
import logging
import math
import threading
from pathlib import Path

from ..state import read as state_file
from ..state.atomic import write_text_atomically

_LOGGER = logging.getLogger(__name__)

VOLUME_MIN, VOLUME_MAX = 0.0, 2.0  # as `audio.volume` and a request's `volume`
_STOP_TIMEOUT_S = 5.0
FILE_NAME = "volume.json"  # in the state directory
_MAX_FILE_BYTES = 4096  # {"volume": ..., "configured": ...} is under 100


def parse_volume(payload: bytes) -> float:
    """A gain from a `volume/set` payload ("0.35"); ValueError with the reason."""
    try:
        volume = float(payload.decode("utf-8").strip())
    except (UnicodeDecodeError, ValueError):
        raise ValueError(f"not a number: {payload[:40]!r}") from None
    if not math.isfinite(volume) or not VOLUME_MIN <= volume <= VOLUME_MAX:
        raise ValueError(f"must be within {VOLUME_MIN:g}-{VOLUME_MAX:g}, got {volume:g}")
    return volume + 0.0  # "-0" is 0: published as "0", not "-0"


def problem(path: Path) -> str | None:
    """Why the saved volume at `path` cannot be used; None when it can (or there is none)."""
    return state_file.problem(path, _MAX_FILE_BYTES, _saved)


def _saved(value: object) -> tuple[float, float]:
    """(volume, configured) from the file's JSON; state_file.Unusable if not that."""
    if not isinstance(value, dict):
        raise state_file.Unusable("not a mapping")
    saved, configured = _number(value, "volume"), _number(value, "configured")
    if not VOLUME_MIN <= saved <= VOLUME_MAX:  # NaN fails this too
        raise state_file.Unusable(f"volume {saved!r} out of range")
    return saved, configured


def _number(mapping: dict[str, object], key: str) -> float:
    value = mapping.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise state_file.Unusable(f"{key!r} is not a number")
    try:
        return float(value) + 0.0
    except OverflowError:  # an integer of hundreds of digits
        raise state_file.Unusable(f"{key!r} is out of range") from None


class VolumeStore:
    def __init__(self, path: Path, configured: float) -> None:
        self.path = path
        self.configured = configured + 0.0  # audio.volume ("-0.0" is 0)
        self._cond = threading.Condition()
        self._pending: float | None = None
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="volume-save", daemon=True)

    def load(self) -> float:
        """The volume to start with: the saved one, unless the config changed since."""
        found = state_file.load_json(
            self.path, _MAX_FILE_BYTES, _saved, "using audio.volume from the config"
        )
        if found is None:
            return self.configured
        saved, configured = found
        if configured != self.configured:
            _LOGGER.info(
                "audio.volume changed in the config (%g -> %g) since the volume was set over "
                "MQTT: using the config's",
                configured,
                self.configured,
            )
            return self.configured
        return saved

    # --- saving, off the caller's thread ---------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def save_soon(self, volume: float) -> None:
        """Never blocks: the saver thread writes the latest value."""
        with self._cond:
            self._pending = volume
            self._cond.notify()

    def stop(self) -> None:
        """Write what is pending, then end the thread."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(_STOP_TIMEOUT_S)

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._stopping:
                    self._cond.wait()
                volume, self._pending = self._pending, None
            if volume is not None:
                self.save(volume)
            elif self._stopping:
                return

    def save(self, volume: float) -> bool:
        data = json.dumps({"volume": volume, "configured": self.configured})
        try:
            write_text_atomically(self.path, data, durable=True)
        except OSError as err:
            _LOGGER.error("Cannot save the volume to %s: %s", self.path, err.strerror or err)
            return False
        return True
