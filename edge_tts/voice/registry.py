"""The daemon's voices by name, as configured (`voices.*`); each loads on first use."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from ..config import Settings, VoiceSettings
from ..text.languages import primary_language
from . import builds, files, voice_dir
from .base import SpeechOptions, SpeechVoice, Tuning
from .model import Voice
from .two_stage import TwoStageVoice

_LOGGER = logging.getLogger(__name__)

# What a request's `language` may name besides a code: "mandarin" is what users write.
_LANGUAGE_NAMES: Mapping[str, str] = {"mandarin": "zh", "chinese": "zh", "english": "en"}


class UnknownVoiceError(ValueError):
    """A request names a voice, or a language, that no configured voice is."""


class Voices:
    """The configured voices, loaded lazily (the daemon preloads the default one unless
    `synthesis.preload` is off). Raises files.VoiceNotFoundError for a missing voice."""

    def __init__(self, settings: Settings, made: Mapping[str, SpeechVoice] | None = None):
        """`made`: voices already built, by name (tests give fakes here)."""
        self._settings = settings
        self._voices = dict(made) if made is not None else self._open_all()

    def _open_all(self) -> dict[str, SpeechVoice]:
        """Each voice as the build this machine should run (voice/builds.py says which)."""
        synthesis = self._settings.synthesis
        voices: dict[str, SpeechVoice] = {}
        for name, chosen in builds.choices(self._settings).items():
            build = chosen.build
            voice = open_voice(
                str(build.path), chosen.pinned_sha256, synthesis.threads, synthesis.max_phonemes
            )
            voice.build = replace(voice.build, chosen_by=chosen.chosen_by)
            _LOGGER.info("Voice %s: %s build (%s), %s", name, build.scheme, build.path, chosen.why)
            voices[name] = voice
        return voices

    @property
    def default(self) -> SpeechVoice:
        return self._voices[self._settings.default_voice]

    def get(self, name: str | None) -> SpeechVoice:
        """The voice a request names (None: the default); UnknownVoiceError for another."""
        if name is None:
            return self.default
        try:
            return self._voices[name]
        except KeyError:
            known = ", ".join(sorted(self._voices))
            raise UnknownVoiceError(f"unknown voice {name!r} (configured: {known})") from None

    def for_language(self, language: str) -> SpeechVoice | None:
        """The voice for a language: `languages.<code>` when set, else the default voice
        when it speaks it, else the first configured voice that does."""
        code = primary_language(_LANGUAGE_NAMES.get(language.strip().lower(), language))
        pinned = self._settings.languages.get(code)
        if pinned is not None:
            return self._voices[pinned]
        candidates = [self.default, *self._voices.values()]
        return next((v for v in candidates if primary_language(v.language) == code), None)

    def by_gender(self, language: str, gender: str) -> SpeechVoice | None:
        """A voice of `language` whose configured gender is `gender`: one of its very
        region first (en-GB), then the language's own voice, the default, the others in
        order; None: none is."""
        code = primary_language(language)
        usual = self.for_language(language)
        candidates = [*([usual] if usual else []), self.default, *self._voices.values()]
        fitting = [
            v
            for v in candidates
            if primary_language(v.language) == code and self.settings_for(v).gender == gender
        ]
        exact = [v for v in fitting if _region(v.language) == _region(language)]
        return next(iter(exact or fitting), None)

    def choose(self, name: str | None, language: str | None) -> SpeechVoice:
        """The voice named, or the one for `language`, or the default; UnknownVoiceError
        for an unknown name or a language no voice speaks."""
        if name is not None or language is None:
            return self.get(name)
        voice = self.for_language(language)
        if voice is None:
            codes = sorted({primary_language(v.language) for v in self._voices.values()})
            raise UnknownVoiceError(
                f"no voice for language {language!r} (configured: {', '.join(codes)})"
            )
        return voice

    def options_for(
        self,
        voice: SpeechVoice,
        *,
        speaker: str | None = None,
        speed: float | None = None,
        volume: float | None = None,
        tuning: Tuning | None = None,
    ) -> SpeechOptions:
        """How `voice` speaks: `speaker` (else its configured one), its configured pace at
        `speed`, at `volume` (default 1); `tuning` sets the model's own scales (a pace
        given there replaces the configured one and `speed`)."""
        vs = self.settings_for(voice)
        tuning = tuning or Tuning()
        base = vs.length_scale or voice.length_scale
        return SpeechOptions(
            speaker=speaker if speaker is not None else vs.speaker,
            length_scale=tuning.length_scale or base / (speed or 1.0),
            volume=volume if volume is not None else 1.0,
            noise_scale=tuning.noise_scale,
            noise_w=tuning.noise_w,
        )

    def name_of(self, voice: SpeechVoice) -> str | None:
        """Its name in the settings (`voices`), or None for a voice that is not one."""
        return next((n for n, v in self._voices.items() if v is voice), None)

    def settings_for(self, voice: SpeechVoice) -> VoiceSettings:
        name = next(n for n, v in self._voices.items() if v is voice)
        return self._settings.voices[name]

    def all(self) -> Mapping[str, SpeechVoice]:
        return self._voices


def _region(language: str) -> str:
    """ "en_GB" / "en-gb" -> "en-gb"."""
    return language.strip().replace("_", "-").lower()


def open_voice(
    spec: str | None, pinned_sha256: str | None, threads: int, max_phonemes: int | None
) -> SpeechVoice:
    """A voice given as nothing (the default), a Piper voice name or .onnx path, or a
    two-stage voice's directory; not loaded yet."""
    if spec is not None and voice_dir.is_voice_dir(Path(spec).expanduser()):
        return TwoStageVoice(Path(spec).expanduser(), pinned_sha256, threads, max_phonemes)
    return Voice(files.resolve(spec), pinned_sha256, threads, max_phonemes)
