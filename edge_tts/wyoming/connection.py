"""One Wyoming client: its events in, its response's audio out, on the server's loop.

The loop never synthesizes: a request becomes a `Response` (work.py) that the pipeline's
workers advance, and its pieces come back here through a queue. Reading and writing run
side by side (the client of a stream sends text while audio goes out): this task reads,
a second one (`_send`) writes one response at a time. Every error ends the connection
after an `error` event, so a client that only waits for `audio-stop` is not left hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event, async_write_event
from wyoming.info import Describe
from wyoming.ping import Ping, Pong
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)

from ..telemetry import Telemetry
from .protocol import ClientError, ClientGone, read_header_line, read_rest
from .sentences import SentenceBuffer
from .work import Failed, Out, Response, WyomingWork

_LOGGER = logging.getLogger(__name__)

SAMPLES_PER_CHUNK = 1024  # per audio-chunk event, as wyoming-piper sends them
_CLOSE_TIMEOUT_S = 5.0
_LINGER_S = 1.0  # after an error: how long, and how much, of the client's input to drop
_LINGER_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Context:
    """What every connection of one server shares."""

    work: WyomingWork
    telemetry: Telemetry
    info: Event  # the answer to describe
    max_text_chars: int
    max_data: int  # protocol.data_limit
    idle_timeout: float
    lead_in_ms: int


class Connection:
    def __init__(
        self, ctx: Context, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.ctx = ctx
        self.reader = reader
        self.writer = writer
        self.peer = peer_name(writer)
        self._response: Response | None = None
        self._sender: asyncio.Task[None] | None = None
        self._sentences: SentenceBuffer | None = None  # while a stream is open
        self._chars = 0  # text received for the current response
        self._ended = False  # we closed the connection (after a failed response)

    async def serve(self) -> None:
        """Answer the client's events until it closes, misbehaves or idles; never raises
        but for cancellation (the server stopping)."""
        try:
            await self._events()
        except ClientError as err:
            await self.refuse(err.text, err.code)
        except ClientGone as err:
            self._count_error("%s went away %s", err)
        except TimeoutError:
            await self.refuse(f"no event for {self.ctx.idle_timeout:g} s", "timeout")
        except ConnectionError as err:
            self._count_error("%s: connection lost (%s)", err)
        finally:
            await self._end_response()
            await self.close()

    async def refuse(self, text: str, code: str) -> None:
        """Answer an `error` event and close: the client did wrong, or there is no room."""
        await self._end_response()
        self._count_error("%s: %s; closing", text)
        await self.send_error(text, code)
        await self._drop_input()
        await self.close()

    async def send_error(self, text: str, code: str) -> None:
        with contextlib.suppress(ConnectionError, TimeoutError):
            await self._write(Error(text=text, code=code).event())

    async def _drop_input(self) -> None:
        """Read and drop what the client still sends, for a moment: a socket closed with
        unread data resets the connection, and the client would lose the error event."""
        loop = asyncio.get_running_loop()
        deadline, dropped = loop.time() + _LINGER_S, 0
        with contextlib.suppress(ConnectionError, TimeoutError, OSError):
            if self.writer.can_write_eof():
                self.writer.write_eof()  # the client reads the error, then the end
            while dropped < _LINGER_BYTES:
                async with asyncio.timeout_at(deadline):
                    data = await self.reader.read(64 * 1024)
                if not data:
                    break
                dropped += len(data)

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError, TimeoutError):
            async with asyncio.timeout(_CLOSE_TIMEOUT_S):
                await self.writer.wait_closed()

    # --- reading -------------------------------------------------------------------------

    async def _events(self) -> None:
        while True:
            event = await self._next_event()
            if event is None:
                break
            await self._handle(event)
        if self._ended:
            return
        if self._sentences is not None:
            raise ClientGone("in the middle of a stream (no synthesize-stop)")
        # The client has sent all it will (it may still read): finish what it asked for.
        if self._sender is not None:
            await asyncio.shield(self._sender)

    async def _next_event(self) -> Event | None:
        """The next event; TimeoutError after `idle_timeout` without one, unless the
        client is waiting for audio that is being made (that is not idling). Only the wait
        for a header is timed: the header's data follows it at once. (A task and
        asyncio.wait per event cost 4x the parsing: ~7 ms for a 90-chunk stream, taken
        from the synthesis of its first sentence on two cores.)"""
        while True:
            try:
                async with asyncio.timeout(self.ctx.idle_timeout):
                    line = await read_header_line(self.reader, self.ctx.max_data)
                break
            except TimeoutError:
                if not self._busy():
                    raise
        return None if line is None else await read_rest(self.reader, line, self.ctx.max_data)

    def _busy(self) -> bool:
        response, sender = self._response, self._sender
        if response is None or sender is None or sender.done():
            return False
        return not response.waiting_for_text

    async def _handle(self, event: Event) -> None:
        kind = event.type
        if Describe.is_type(kind):
            await self._write(self.ctx.info)
        elif Ping.is_type(kind):
            await self._write(Pong(text=event.data.get("text")).event())
        elif Synthesize.is_type(kind):
            if self._sentences is None:  # in a stream it repeats the chunks' text: ignored
                await self._synthesize(event)
        elif SynthesizeStart.is_type(kind):
            await self._start_stream(event)
        elif SynthesizeChunk.is_type(kind):
            self._stream_text(_text(event.data))
        elif SynthesizeStop.is_type(kind):
            self._stop_stream()
        else:
            _LOGGER.debug("Wyoming %s: ignoring a %s event", self.peer, kind)

    async def _synthesize(self, event: Event) -> None:
        text = _text(event.data)
        self._count_chars(text)
        voice = _voice(event.data)
        response = await self._open(voice, streaming=False)
        _LOGGER.info(
            "Wyoming %s: synthesize, %d characters (%s)", self.peer, len(text), response.name
        )
        response.add_text(text)
        response.close_input()

    async def _start_stream(self, event: Event) -> None:
        if self._sentences is not None:  # waiting for the first would wait forever
            raise ClientError("synthesize-start inside a stream", "unexpected")
        voice = _voice(event.data)
        response = await self._open(voice, streaming=True)
        self._sentences = SentenceBuffer()
        _LOGGER.info("Wyoming %s: synthesize stream (%s)", self.peer, response.name)

    def _stream_text(self, text: str) -> None:
        if self._sentences is None or self._response is None:
            raise ClientError("synthesize-chunk without synthesize-start", "unexpected")
        self._count_chars(text)
        for sentence in self._sentences.add(text):  # each synthesized as soon as complete
            self._response.add_text(sentence)

    def _stop_stream(self) -> None:
        if self._sentences is None or self._response is None:
            raise ClientError("synthesize-stop without synthesize-start", "unexpected")
        rest = self._sentences.finish()
        if rest:
            self._response.add_text(rest)
        self._response.close_input()
        self._sentences = None

    async def _open(self, voice: SynthesizeVoice | None, streaming: bool) -> Response:
        """A new response (after the one before it is out: one at a time per client)."""
        if self._sender is not None:
            await asyncio.shield(self._sender)
        await self._end_response()
        self._chars = 0
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Out] = asyncio.Queue()  # bounded by the response's backlog

        def emit(item: Out) -> None:  # from a synthesis worker
            with contextlib.suppress(RuntimeError):  # the loop is closed: the server stopped
                loop.call_soon_threadsafe(queue.put_nowait, item)

        try:
            response = self.ctx.work.open(
                emit,
                streaming=streaming,
                voice=voice.name if voice else None,
                language=voice.language if voice else None,
                speaker=voice.speaker if voice else None,
            )
        except ValueError as err:  # BadRequest: an unknown voice, language or speaker
            raise ClientError(str(err), "bad-request") from None
        self.ctx.telemetry.count("wyoming_requests")
        self._response = response
        self._sender = asyncio.create_task(self._send(response, queue), name=response.name)
        return response

    def _count_chars(self, text: str) -> None:
        self._chars += len(text)
        if self._chars > self.ctx.max_text_chars:
            raise ClientError(f"text longer than {self.ctx.max_text_chars} characters", "too-large")

    async def _end_response(self) -> None:
        response, sender = self._response, self._sender
        self._response = self._sender = None
        self._sentences = None
        if response is not None:
            response.cancel()
        if sender is not None and not sender.done():
            sender.cancel()
            await asyncio.wait({sender}, timeout=_CLOSE_TIMEOUT_S)  # it ends at once

    # --- writing -------------------------------------------------------------------------

    async def _send(self, response: Response, queue: asyncio.Queue[Out]) -> None:
        """The response's audio as it comes: audio-start (with the lead-in) before the
        first piece, audio-stop after the last, synthesize-stopped after a stream."""
        rate, first_at, audio_s = response.choice.rate, 0.0, 0.0
        try:
            while True:
                item = await queue.get()
                if isinstance(item, np.ndarray):
                    if not first_at:
                        first_at = time.monotonic()
                        await self._write(AudioStart(rate=rate, width=2, channels=1).event())
                        await self._write_pcm(np.zeros(self._lead_in(rate), np.int16), rate)
                    await self._write_pcm(item, rate)
                    audio_s += len(item) / rate
                    response.written(len(item) / rate)
                elif isinstance(item, Failed):
                    raise ClientError(item.text, item.code)
                else:
                    await self._finish(response, first_at, audio_s)
                    return
        except ClientError as err:
            self._end(response)
            self._count_error("%s: %s; closing", err.text)
            await self.send_error(err.text, err.code)
            self.writer.close()  # the reading side sees the end and stops
        except (ConnectionError, TimeoutError) as err:
            self._end(response)
            self._count_error("%s went away during %s (%s)", response.name, err or "timeout")
            self.writer.close()

    def _end(self, response: Response) -> None:
        response.cancel()
        self._ended = True

    async def _finish(self, response: Response, first_at: float, audio_s: float) -> None:
        if first_at:
            await self._write(AudioStop().event())
        if response.streaming:
            await self._write(SynthesizeStopped().event())
        opened, now = response.opened_at, time.monotonic()
        first = f"first audio after {(first_at - opened) * 1000:.0f} ms" if first_at else "no audio"
        _LOGGER.info(
            "Wyoming %s: %s done: %s, %.1f s of audio in %.1f s",
            *(self.peer, response.name, first, audio_s, now - opened),
        )

    async def _write_pcm(self, pcm: np.ndarray, rate: int) -> None:
        for part in _parts(pcm):
            chunk = AudioChunk(rate=rate, width=2, channels=1, audio=part.astype("<i2").tobytes())
            await self._write(chunk.event())

    async def _write(self, event: Event) -> None:
        """One event; TimeoutError when the client takes nothing for `idle_timeout`.
        (asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancel that
        comes as the write completes, and the sender then never ends.)"""
        async with asyncio.timeout(self.ctx.idle_timeout):
            await async_write_event(event, self.writer)

    def _lead_in(self, rate: int) -> int:
        return round(self.ctx.lead_in_ms * rate / 1000)

    def _count_error(self, message: str, *args: Any) -> None:
        self.ctx.telemetry.count("wyoming_errors")
        _LOGGER.warning("Wyoming " + message, self.peer, *args)


def peer_name(writer: asyncio.StreamWriter) -> str:
    """The client's address for logs: host:port, or the socket path's side for unix."""
    peer = writer.get_extra_info("peername")
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer or "unix-socket-client")


def _parts(pcm: np.ndarray) -> Iterator[np.ndarray]:
    for start in range(0, len(pcm), SAMPLES_PER_CHUNK):
        yield pcm[start : start + SAMPLES_PER_CHUNK]


def _text(data: dict[str, Any]) -> str:
    text = data.get("text")
    if not isinstance(text, str):
        raise ClientError("the event needs a text (a string)", "bad-request")
    return text


def _voice(data: dict[str, Any]) -> SynthesizeVoice | None:
    raw = data.get("voice") or {}
    if not isinstance(raw, dict) or not all(
        isinstance(raw.get(key), str | None) for key in ("name", "language", "speaker")
    ):
        text = "voice must be an object of strings (name, language, speaker)"
        raise ClientError(text, "bad-request")
    return SynthesizeVoice.from_dict(raw)
