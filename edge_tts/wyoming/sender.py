"""What goes back to one Wyoming client: every event written to it, and the audio of its
responses, one response at a time.

The connection (connection.py) reads the client's events and opens a response here for
each request. The pipeline's workers make its audio (speech/responses.py) and hand the pieces back
through a queue to a task of the response's own, which writes them as they come. That
task runs beside the reading, because the client of a stream sends text while audio goes
out. A response that fails, or a client that takes nothing, ends the connection: an
`error` event, then the socket closed, so the reading side sees the end.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event, async_write_event
from wyoming.tts import SynthesizeStopped, SynthesizeVoice

from ..speech.audio_stream import AudioStream, StreamFailed
from ..speech.responses import Response, TextInput
from .protocol import ClientError

if TYPE_CHECKING:  # only the type: connection.py builds on this module
    from .context import Context

_LOGGER = logging.getLogger(__name__)

SAMPLES_PER_CHUNK = 1024  # per audio-chunk event, as wyoming-piper sends them
_CLOSE_TIMEOUT_S = 5.0


class Sender:
    """The writing side of one connection, and the response whose audio it sends."""

    def __init__(self, ctx: Context, writer: asyncio.StreamWriter, peer: str) -> None:
        self.ctx = ctx
        self.writer = writer
        self.peer = peer
        self.response: Response | None = None
        self.failed = False  # a response failed and the connection was closed after it
        self._task: asyncio.Task[None] | None = None

    @property
    def busy(self) -> bool:
        """Audio is being made for a client that waits for it (that is not idling)."""
        response, task = self.response, self._task
        if response is None or task is None or task.done():
            return False
        return not response.waiting_for_text

    async def open(self, voice: SynthesizeVoice | None, text_input: TextInput) -> Response:
        """A new response (after the one before it is out: one at a time per client)."""
        await self.drain()
        await self.end()
        try:
            stream = AudioStream(
                lambda emit: self.ctx.responses.open(
                    emit,
                    door="wyoming",
                    text_input=text_input,
                    voice=voice.name if voice else None,
                    language=voice.language if voice else None,
                    speaker=voice.speaker if voice else None,
                )
            )
        except ValueError as err:  # an unknown voice, language or speaker
            raise ClientError(str(err), "bad-request") from None
        self.ctx.telemetry.count("wyoming_requests")
        response = self.response = stream.response
        self._task = asyncio.create_task(self._send(stream), name=response.name)
        return response

    async def drain(self) -> None:
        """Wait for the current response's audio to be out (or for it to fail)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def end(self) -> None:
        """Drop the current response: its work and whatever of its audio is not out."""
        response, task = self.response, self._task
        self.response = self._task = None
        if response is not None:
            response.cancel()
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=_CLOSE_TIMEOUT_S)  # it ends at once

    async def write(self, event: Event) -> None:
        """One event; TimeoutError when the client takes nothing for `idle_timeout`.
        (asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancel that
        comes as the write completes, and the sender never ends.)"""
        async with asyncio.timeout(self.ctx.idle_timeout):
            await async_write_event(event, self.writer)

    async def send_error(self, text: str, code: str) -> bool:
        """An `error` event; False when it could not be written: the client is gone, or
        took nothing for `idle_timeout`."""
        try:
            await self.write(Error(text=text, code=code).event())
        except (ConnectionError, TimeoutError):
            return False
        return True

    async def close(self) -> None:
        """Close once what is buffered is out, or at once after _CLOSE_TIMEOUT_S: the
        transport of a client that reads nothing would wait for it, and hold its socket,
        for good."""
        self.writer.close()
        try:
            async with asyncio.timeout(_CLOSE_TIMEOUT_S):
                await self.writer.wait_closed()
        except (ConnectionError, TimeoutError):
            self.writer.transport.abort()

    def hang_up(self, flushed: bool) -> None:
        """End the connection so the reading side sees the end at once: a close waits
        for the buffered output, which a client that reads nothing never takes."""
        if flushed:
            self.writer.close()
        else:
            self.writer.transport.abort()

    # --- one response's audio (its own task) -------------------------------------------

    async def _send(self, stream: AudioStream[Response]) -> None:
        """The response's audio as it comes: audio-start (with the lead-in) before the
        first piece, audio-stop after the last, synthesize-stopped after a stream."""
        response = stream.response
        rate, started = response.rate, False
        try:
            try:
                async for pcm in stream.pieces():
                    if not started:
                        started = True
                        await self.write(AudioStart(rate=rate, width=2, channels=1).event())
                        await self._write_pcm(np.zeros(self._lead_in(rate), np.int16), rate)
                    await self._write_pcm(pcm, rate)
                    stream.taken(pcm)
            except StreamFailed as failed:
                raise ClientError(failed.text, failed.code) from None
            await self._finish(response)
        except ClientError as err:
            self._fail(response)
            count_error(self.ctx, self.peer, "%s: %s; closing", err.text)
            self.hang_up(await self.send_error(err.text, err.code))  # the reading side stops
        except (ConnectionError, TimeoutError) as err:
            self._fail(response)
            count_error(
                self.ctx, self.peer, "%s went away during %s (%s)", response.name, err or "timeout"
            )
            self.hang_up(flushed=False)

    def _fail(self, response: Response) -> None:
        response.cancel()
        self.failed = True

    async def _finish(self, response: Response) -> None:
        timing = response.timing
        ttfa_ms = timing.time_to_first_audio_ms
        # Before the end goes out: a client that has the end finds the answer counted.
        self.ctx.telemetry.answered("wyoming", ttfa_ms, timing.real_time_factor)
        if timing.first_audio_at is not None:
            await self.write(AudioStop().event())
        if response.text_input is TextInput.STREAM:
            await self.write(SynthesizeStopped().event())
        first = "no audio" if ttfa_ms is None else f"first audio after {ttfa_ms:.0f} ms"
        received, finished = timing.received_at, timing.finished_at
        took = finished - received if received is not None and finished is not None else 0.0
        _LOGGER.info(
            "Wyoming %s: %s done: %s, %.1f s of audio in %.1f s",
            *(self.peer, response.name, first, timing.audio_seconds, took),
        )

    async def _write_pcm(self, pcm: np.ndarray, rate: int) -> None:
        for part in _parts(pcm):
            chunk = AudioChunk(rate=rate, width=2, channels=1, audio=part.astype("<i2").tobytes())
            await self.write(chunk.event())

    def _lead_in(self, rate: int) -> int:
        return round(self.ctx.lead_in_ms * rate / 1000)


def count_error(ctx: Context, peer: str, message: str, *args: Any) -> None:
    """An error on one client's connection: counted, and logged with the client's
    address (the message's first %s)."""
    ctx.telemetry.count("wyoming_errors")
    _LOGGER.warning("Wyoming " + message, peer, *args)


def _parts(pcm: np.ndarray) -> Iterator[np.ndarray]:
    for start in range(0, len(pcm), SAMPLES_PER_CHUNK):
        yield pcm[start : start + SAMPLES_PER_CHUNK]
