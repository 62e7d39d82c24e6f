"""One engine response for one HTTP request, as the event loop sees it: its pieces of
audio, written to the client as the decoder makes them (chunked), or gathered whole.

The status line and headers go out with the first piece of audio, not before: until
then a failure (text with nothing speakable) is still a proper JSON error. A piece is
counted as taken (`Response.written`) only once the client's socket took it, so a client
that reads nothing stops its synthesis after MAX_BACKLOG_S of audio (speech/responses.py)
and is dropped after `http.write_timeout`.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections.abc import AsyncIterator

import numpy as np
from aiohttp import web

from ..audio.dsp import Resampler, to_pcm16
from ..speech.audio_stream import AudioStream, StreamFailed
from ..speech.responses import Response, TextInput
from ..text.document import Document
from ..voice.base import Tuning
from .errors import ApiError, log_error
from .shared import Door

_LOGGER = logging.getLogger("edge_tts.http")

UNKNOWN_SIZE = 0xFFFFFFFF  # a streamed WAV's RIFF and data sizes: read to the end
WAV_HEADER_BYTES = 44


class Answer:
    """The audio of one text in one voice, from the engine's workers."""

    def __init__(self, door: Door, stream: AudioStream[Response], field: str) -> None:
        self.door = door
        self.stream = stream
        self.field = field  # the body's text field, which a text the engine refuses names
        self.response = stream.response
        self.rate = stream.response.rate
        self.started = time.monotonic()

    @property
    def audio_s(self) -> float:
        return self.stream.timing.audio_seconds

    @classmethod
    def open(
        cls,
        door: Door,
        text: str | Document,
        field: str,
        *,
        voice: str | None = None,
        language: str | None = None,
        speaker: str | None = None,
        speed: float | None = None,
        tuning: Tuning | None = None,
    ) -> Answer:
        """The engine starts on `text` (the body's `field`) at once; 400 for a voice or
        speaker there is not."""
        try:
            stream = AudioStream(
                lambda emit: door.responses.open(
                    emit,
                    door="http",
                    text_input=TextInput.WHOLE,
                    voice=voice,
                    language=language,
                    speaker=speaker,
                    speed=speed,
                    tuning=tuning,
                )
            )
        except ValueError as err:  # BadRequest: an unknown voice, language or speaker
            raise ApiError(400, "invalid_voice", str(err), param="voice") from None
        stream.response.add_text(text)
        stream.response.close_input()
        return cls(door, stream, field)

    async def pieces(self) -> AsyncIterator[np.ndarray]:
        """Each piece as it is made; ApiError for a response that fails."""
        try:
            async for pcm in self.stream.pieces():
                yield pcm
        except StreamFailed as err:
            status = 400 if err.code == "bad-text" else 500
            raise ApiError(status, err.code.replace("-", "_"), err.text, param=self.field) from None
        timing = self.stream.timing
        self.door.telemetry.answered("http", timing.time_to_first_audio_ms, timing.real_time_factor)

    def taken(self, pcm: np.ndarray) -> None:
        """The client (or the pool) has this piece: the engine may make more."""
        self.stream.taken(pcm)

    def cancel(self) -> None:
        """The client is gone or the answer failed: the engine drops what is left."""
        self.stream.cancel()


def wav_header(rate: int, frames: int | None = None) -> bytes:
    """A 16-bit mono PCM WAV header; `frames` None for a stream of unknown length."""
    data = UNKNOWN_SIZE if frames is None else frames * 2
    riff = UNKNOWN_SIZE if frames is None else 36 + data
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    return (
        b"RIFF"
        + struct.pack("<I", riff)
        + b"WAVEfmt "
        + struct.pack("<I", 16)
        + fmt
        + (b"data" + struct.pack("<I", data))
    )


def wav_bytes(pcm: np.ndarray, rate: int) -> bytes:
    return wav_header(rate, len(pcm)) + pcm.astype("<i2").tobytes()


def audio_headers(fmt: str, rate: int) -> dict[str, str]:
    """What the body is: WAV, or raw 16-bit little-endian mono PCM at `rate`."""
    kind = "audio/wav" if fmt == "wav" else "audio/pcm"
    return {
        "Content-Type": kind,
        "X-Sample-Rate": str(rate),
        "X-Sample-Width": "2",
        "X-Channels": "1",
        "Cache-Control": "no-store",
    }


class Converter:
    """The answer's pieces at the rate a client was promised (OpenAI's pcm: 24 kHz),
    converted with the filter state carried across pieces (audio/dsp.py's Resampler)."""

    def __init__(self, rate: int, target: int) -> None:
        self.rate = target
        self._resample = None if rate == target else Resampler(rate, target)

    def __call__(self, pcm: np.ndarray) -> np.ndarray:
        if self._resample is None:
            return pcm
        return to_pcm16(self._resample(pcm.astype(np.float32) / 32768.0))

    def flush(self) -> np.ndarray:
        if self._resample is None:
            return np.zeros(0, np.int16)
        return to_pcm16(self._resample.flush())


async def stream(
    request: web.Request, answer: Answer, fmt: str, rate: int | None = None
) -> web.StreamResponse:
    """`answer`'s audio to the client as it is made, at `rate` (default: the voice's):
    WAV (with a header of unknown size) or raw PCM, chunked. A failure before the first
    piece raises ApiError (a JSON error); after it, the connection is cut, so the client
    sees an incomplete body, not a short file that looks whole."""
    convert = Converter(answer.rate, rate or answer.rate)
    try:
        pieces = answer.pieces()
        first = await anext(pieces, None)
        resp = web.StreamResponse(headers=audio_headers(fmt, convert.rate))
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        try:
            if fmt == "wav":
                await _write(resp, wav_header(convert.rate), answer)
            if first is not None:
                await _write_pcm(resp, first, answer, convert)
                async for pcm in pieces:
                    await _write_pcm(resp, pcm, answer, convert)
                await _write(resp, convert.flush().astype("<i2").tobytes(), answer)
            await resp.write_eof()
        except (ApiError, ConnectionError) as err:
            _cut(request, answer, err)
            return resp
        _log_done(request, answer)
        return resp
    finally:
        answer.cancel()


async def _write_pcm(
    resp: web.StreamResponse, pcm: np.ndarray, answer: Answer, convert: Converter
) -> None:
    await _write(resp, convert(pcm).astype("<i2").tobytes(), answer)
    answer.taken(pcm)


async def _write(resp: web.StreamResponse, data: bytes, answer: Answer) -> None:
    """One write, within `write_timeout`: a client that takes nothing is dropped."""
    timeout = answer.door.settings.write_timeout
    try:
        async with asyncio.timeout(timeout):
            await resp.write(data)
    except TimeoutError:
        raise Dropped(f"took none of its audio for {timeout:g} s") from None


class Dropped(ConnectionError):
    """The client does not read: its connection is cut."""


def _log_done(request: web.Request, answer: Answer) -> None:
    ttfa = answer.stream.timing.time_to_first_audio_ms
    first = "no audio" if ttfa is None else f"first audio after {ttfa:.0f} ms"
    _LOGGER.info(
        "HTTP %s: %s %s: %s, %.1f s of audio in %.1f s",
        *(request.remote, request.path, answer.response.name, first, answer.audio_s),
        time.monotonic() - answer.started,
    )


def _cut(request: web.Request, answer: Answer, err: Exception) -> None:
    """A stream that cannot go on after its first bytes: the connection is cut (there is
    no status left to send), counted and logged."""
    if request.transport is not None:
        request.transport.abort()
    answer.door.telemetry.count("http_errors")
    reason = err.message if isinstance(err, ApiError) else str(err) or type(err).__name__
    log_error(
        request.remote,
        f"{request.method} {request.path}",
        200,
        f"cut after {answer.audio_s:.1f} s of audio: {reason}",
    )
