"""The `say` command's engine: synthesize in one thread, play or write in another.

A bounded queue between them means sentence N+1 is synthesized while sentence N plays,
and memory stays flat however long the text is.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from .synthesis import AudioChunk, SpeechOptions, Synthesizer

_LOGGER = logging.getLogger(__name__)

_DONE = object()


class NoSoundCardError(RuntimeError):
    """No ALSA output device to play on."""


class Sink(Protocol):
    def open(self, sample_rate: int) -> None: ...
    def write(self, pcm: np.ndarray) -> None: ...
    def close(self) -> None: ...


class WavSink:
    def __init__(self, path: Path):
        self.path = path
        self._wav: wave.Wave_write | None = None

    def open(self, sample_rate: int) -> None:
        self._wav = wave.open(str(self.path), "wb")  # noqa: SIM115 - closed in close()
        self._wav.setnchannels(1)
        self._wav.setsampwidth(2)
        self._wav.setframerate(sample_rate)

    def write(self, pcm: np.ndarray) -> None:
        assert self._wav is not None, "open() first"
        self._wav.writeframes(pcm.astype("<i2").tobytes())

    def close(self) -> None:
        if self._wav is not None:
            self._wav.close()
            self._wav = None


class DeviceSink:
    """Blocking writes to a PortAudio (ALSA) stream; close() waits for the tail to play."""

    def __init__(self, device: str | int | None = None):
        self.device = device
        self._stream: object | None = None
        check_output_device(device)

    def open(self, sample_rate: int) -> None:
        import sounddevice as sd

        stream = sd.RawOutputStream(
            samplerate=sample_rate, channels=1, dtype="int16", device=self.device
        )
        stream.start()
        self._stream = stream

    def write(self, pcm: np.ndarray) -> None:
        assert self._stream is not None, "open() first"
        self._stream.write(pcm.tobytes())  # type: ignore[attr-defined]

    def close(self) -> None:
        if self._stream is not None:
            self._stream.stop()  # type: ignore[attr-defined]
            self._stream.close()  # type: ignore[attr-defined]
            self._stream = None


def check_output_device(device: str | int | None) -> None:
    hint = "no sound card? write a WAV file instead with --out FILE.wav"
    try:
        import sounddevice as sd
    except OSError as err:  # libportaudio2 missing
        raise NoSoundCardError(f"PortAudio is not available ({err}); {hint}") from err
    try:
        sd.query_devices(device, kind="output")
    except (sd.PortAudioError, ValueError) as err:
        name = "default" if device is None else repr(device)
        raise NoSoundCardError(f"no audio output device ({name}: {err}); {hint}") from err


@dataclass(frozen=True)
class SayReport:
    chunks: int
    audio_seconds: float
    synth_seconds: float
    first_audio_seconds: float

    def summary(self) -> str:
        rtf = self.synth_seconds / self.audio_seconds if self.audio_seconds else 0.0
        return (
            f"{self.chunks} chunk(s), {self.audio_seconds:.2f} s of audio, "
            f"first audio after {self.first_audio_seconds * 1000:.0f} ms, RTF {rtf:.3f}"
        )


def say(synth: Synthesizer, text: str, options: SpeechOptions, sink: Sink) -> SayReport:
    started = time.monotonic()
    chunks: queue.Queue[object] = queue.Queue(maxsize=2)
    cancel = threading.Event()
    producer = threading.Thread(
        target=_produce,
        args=(synth, text, options, chunks, cancel),
        name="synthesis",
        daemon=True,
    )
    producer.start()
    count, audio_s, synth_s, first = 0, 0.0, 0.0, 0.0
    try:
        while (item := chunks.get()) is not _DONE:
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, AudioChunk)
            if count == 0:
                # Opened on the first chunk: a refused model leaves no empty WAV behind.
                first = time.monotonic() - started
                sink.open(item.sample_rate)
            sink.write(item.pcm)
            count, audio_s, synth_s = (
                count + 1,
                audio_s + item.seconds,
                synth_s + item.synth_seconds,
            )
    finally:
        cancel.set()  # a failed sink must not leave the producer synthesizing the rest
        sink.close()
        producer.join(timeout=5)
    return SayReport(count, audio_s, synth_s, first)


def _produce(
    synth: Synthesizer,
    text: str,
    options: SpeechOptions,
    out: queue.Queue[object],
    cancel: threading.Event,
) -> None:
    try:
        for chunk in synth.chunks(text, options):
            if not _put(out, chunk, cancel):
                return
        _put(out, _DONE, cancel)
    except Exception as err:  # handed to the consumer, which raises it on the main thread
        _put(out, err, cancel)


def _put(out: queue.Queue[object], item: object, cancel: threading.Event) -> bool:
    while not cancel.is_set():
        try:
            out.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False
