"""`open_output`: the sink the settings name. Apart from output.py, so the contract
imports none of the sinks that implement it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .alsa import AlsaOutput
from .output import AudioOutput
from .wavdir import WavDirOutput

if TYPE_CHECKING:
    from ..config import AudioSettings


def open_output(settings: AudioSettings, sample_rate: int) -> AudioOutput:
    """The output `settings.sink` names, at `sample_rate`, not started yet."""
    if settings.sink == "alsa":
        return AlsaOutput(settings, sample_rate)
    if settings.sink == "wav-dir":
        return WavDirOutput(settings, sample_rate)
    raise ValueError(f"unknown audio sink {settings.sink!r} (expected 'alsa' or 'wav-dir')")
