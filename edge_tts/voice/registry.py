"""The daemon's voices by name, as configured (`voices.*`); each loads on first use."""

from __future__ import annotations

from collections.abc import Mapping

from ..config import Settings, VoiceSettings
from ..messages.request import BadRequest
from . import files
from .model import Voice


class Voices:
    """The configured voices, loaded lazily (the daemon preloads the default one unless
    `synthesis.preload` is off). Raises files.VoiceNotFoundError for a missing voice."""

    def __init__(self, settings: Settings):
        self._settings = settings
        self._voices = {name: self._make(vs) for name, vs in settings.voices.items()}

    def _make(self, vs: VoiceSettings) -> Voice:
        voice_files = files.from_model_path(vs.path) if vs.path else files.default_voice()
        synthesis = self._settings.synthesis
        return Voice(
            voice_files,
            pinned_sha256=vs.sha256,
            threads=synthesis.threads,
            max_phonemes=synthesis.max_phonemes,
        )

    @property
    def default(self) -> Voice:
        return self._voices[self._settings.default_voice]

    def get(self, name: str | None) -> Voice:
        """The voice a request names (None: the default); BadRequest for an unknown one."""
        if name is None:
            return self.default
        try:
            return self._voices[name]
        except KeyError:
            known = ", ".join(sorted(self._voices))
            raise BadRequest(f"unknown voice {name!r} (configured: {known})") from None

    def settings_for(self, voice: Voice) -> VoiceSettings:
        name = next(n for n, v in self._voices.items() if v is voice)
        return self._settings.voices[name]

    def all(self) -> Mapping[str, Voice]:
        return self._voices
