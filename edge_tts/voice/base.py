"""What the rest of the daemon needs from a voice, whatever its format.

Two formats implement it: a Piper voice (model.py: espeak-ng phonemes, one VITS graph
cut into encoder and decoder) and a two-stage voice (two_stage.py: pinyin symbols, an
acoustic model making a mel spectrogram, a vocoder making audio from it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class SynthesisParams:
    """Per-request knobs; None means the voice's own default. A voice ignores the ones
    its model has no use for (a two-stage voice has no noise scales)."""

    speaker: int | str | None = None
    length_scale: float | None = None  # > 1 speaks slower
    noise_scale: float | None = None
    noise_w: float | None = None


@dataclass(frozen=True)
class SpeechOptions:
    """How a voice speaks one request: the model's parameters and the output's gain."""

    speaker: int | str | None = None
    length_scale: float | None = None  # > 1 speaks slower
    volume: float = 1.0
    noise_scale: float | None = None
    noise_w: float | None = None

    def params(self) -> SynthesisParams:
        return SynthesisParams(
            speaker=self.speaker,
            length_scale=self.length_scale,
            noise_scale=self.noise_scale,
            noise_w=self.noise_w,
        )


@dataclass(frozen=True)
class Tuning:
    """The model's own scales, as a Piper client gives them (None: the voice's): absolute
    values, where a request's `speed` is relative to the configured pace."""

    length_scale: float | None = None
    noise_scale: float | None = None
    noise_w: float | None = None


@dataclass(frozen=True)
class BuildInfo:
    """Which build of a voice runs, and how: shown in telemetry and events."""

    scheme: str  # "fp32", a quantization scheme's name, or "imported"
    threads: int  # onnxruntime intra-op threads
    chosen_by: str = "config"  # "config" (the file or build it names) or "tune"

    def as_dict(self) -> dict[str, object]:
        return {"scheme": self.scheme, "threads": self.threads, "chosen_by": self.chosen_by}


class SpeechVoice(Protocol):
    """Thread-safe: `stream` may be called from several workers at once."""

    @property
    def name(self) -> str: ...

    @property
    def language(self) -> str:
        """The text front-end's language for it: "en-us", "zh" (its primary subtag counts)."""
        ...

    @property
    def sample_rate(self) -> int: ...

    @property
    def length_scale(self) -> float:
        """Its own speaking pace (1.0 for most); a request's speed divides it."""
        ...

    @property
    def sentence_silence_s(self) -> float:
        """Silence after each sentence, for models that end a sentence without one."""
        ...

    @property
    def alphabet(self) -> str:
        """What phonemes a reading (SSML's <phoneme>, a lexicon entry) is given in for it:
        "ipa" (espeak-ng's, as the model reads them) or "x-pinyin"; "" for none."""
        ...

    @property
    def speakers(self) -> list[str]:
        """Its speakers' names in id order; empty for a voice with one speaker."""
        ...

    @property
    def loaded(self) -> bool: ...

    build: BuildInfo  # set by whoever chose the build (the registry), else the voice's own

    @property
    def sha256(self) -> str | None:
        """The digest that pins it (set once loaded)."""
        ...

    def load(self) -> None:
        """Verify its files and create its sessions; later calls return at once."""

    def warm_up(self, concurrent: int = 1) -> None:
        """Reach the memory high-water mark of `concurrent` longest inputs now."""

    def speaker_id(self, speaker: int | str | None) -> int | None:
        """The model's id for a speaker name or number; ValueError for an unknown one."""
        ...

    def ids(self, text: str) -> list[list[int]]:
        """One normalized text chunk → input id sequences, each within the voice's bound."""
        ...

    def stream(
        self, ids: list[int], params: SynthesisParams | None = None, first_frames: int | None = None
    ) -> Iterator[np.ndarray]:
        """Ids → float32 audio pieces at `sample_rate`, in order; with `first_frames` the
        first piece is small and comes early."""
        ...
