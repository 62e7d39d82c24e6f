"""The sounds SSML's `<audio src="chime.wav">` plays: WAV files in one local directory
(text.sounds_dir), found by their plain name, never fetched from anywhere.

    Sounds(Path("/etc/edge-tts/sounds"), max_seconds=30).find("chime")  # chime.wav

A `src` that is a URL, a path (`../x`, `/etc/x`) or a name not in the directory is a
`SoundError` saying why; SSML then reads the element's fallback content (the router).
A file is read only after its header shows it short enough (`max_seconds`: the request's
text.max_silence_s, which its length counts in), so no file can make a request big.
"""

from __future__ import annotations

import re
import threading
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np

# A file's own name: letters, digits, "_", "-", "." inside; nothing that leaves the
# directory or hides in it ("..", "/x", ".x").
_PLAIN_NAME: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
_URL: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")  # http:, https:, file:, s3:, soundbank:
_SCALE: Final = {1: 128.0, 2: 32768.0, 4: 2147483648.0}  # sample width: full scale
_MAX_CHANNELS: Final = 8
_KEPT: Final = 32  # decoded sounds kept (a few chimes, reused by every announcement)


class SoundError(ValueError):
    """Why a `src` plays no sound: the message says it for the note."""


@dataclass(frozen=True)
class Sound:
    name: str  # the file's name in the directory
    samples: np.ndarray  # float32 mono, -1..1
    rate: int

    @property
    def seconds(self) -> float:
        return self.samples.size / self.rate


@dataclass(frozen=True)
class PlacedSound:
    """A sound beside a chunk's speech: before it (`after` False) or after it, `at`
    seconds into the silence of the breaks on that side (SSML's order kept)."""

    sound: Sound
    after: bool
    at: float = 0.0


class Sounds:
    """The sounds directory: files decoded once and kept while unchanged."""

    def __init__(self, directory: Path | None, max_seconds: float) -> None:
        self._directory = directory
        self._max_seconds = max_seconds
        self._lock = threading.Lock()
        self._kept: dict[tuple[str, int, int], Sound] = {}  # (name, mtime_ns, size)

    def find(self, src: str) -> Sound:
        """The sound `src` names; SoundError says why there is none."""
        name = src.strip()
        if _URL.match(name):
            raise SoundError(f"{src!r} is a URL: nothing is ever fetched")
        if not _PLAIN_NAME.fullmatch(name) or ".." in name:
            raise SoundError(f"{src!r} is not a plain file name in the sounds directory")
        if self._directory is None:
            raise SoundError("no sounds directory is configured (text.sounds_dir)")
        path = self._path(name)
        try:
            stat = path.stat()
        except OSError as err:
            raise SoundError(f"{name!r} cannot be read: {err.strerror or err}") from None
        key = (path.name, stat.st_mtime_ns, stat.st_size)
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None:
            return kept
        sound = _read(path, self._max_seconds)
        with self._lock:
            if len(self._kept) >= _KEPT:
                self._kept.clear()
            self._kept[key] = sound
        return sound

    def _path(self, name: str) -> Path:
        assert self._directory is not None
        candidates = [name] if name.lower().endswith(".wav") else [name, f"{name}.wav"]
        for candidate in candidates:
            path = self._directory / candidate
            if path.is_file() and path.resolve().parent == self._directory.resolve():
                return path
        # Not where: the reason reaches network clients, the directory is the device's own.
        raise SoundError(f"{name!r} is not in the sounds directory")


def _read(path: Path, max_seconds: float) -> Sound:
    """A PCM WAV file as float32 mono (channels averaged)."""
    try:
        with wave.open(str(path), "rb") as file:
            rate, width = file.getframerate(), file.getsampwidth()
            channels, frames = file.getnchannels(), file.getnframes()
            if width not in _SCALE or not 1 <= channels <= _MAX_CHANNELS or rate <= 0:
                raise SoundError(f"{path.name}: {width * 8}-bit, {channels} channels: not read")
            if frames > max_seconds * rate:
                seconds = frames / rate
                raise SoundError(f"{path.name} is {seconds:.1f} s; the limit is {max_seconds:g} s")
            data = file.readframes(frames)
    except (wave.Error, EOFError, OSError) as err:
        raise SoundError(f"{path.name} is not a PCM WAV file: {err}") from None
    kind: np.dtype[np.integer] = np.dtype({1: "u1", 2: "<i2", 4: "<i4"}[width])
    samples = np.frombuffer(data[: len(data) // (width * channels) * width * channels], kind)
    floats = samples.astype(np.float32)
    if width == 1:
        floats -= 128.0  # 8-bit WAV is unsigned
    mono = floats.reshape(-1, channels).mean(axis=1) / np.float32(_SCALE[width])
    return Sound(path.name, mono.astype(np.float32), rate)
