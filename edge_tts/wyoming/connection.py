"""One Wyoming client: its events in, on the server's loop, and its requests opened as
responses; what goes back to it is the `Sender`'s (sender.py).

The loop never synthesizes: a request becomes a `Response` (speech/responses.py) that the pipeline's
workers advance, and its pieces come back to the sender through a queue. Reading and
writing run side by side (the client of a stream sends text while audio goes out): this
task reads, a task of the sender's writes one response at a time. Every error ends the
connection after an `error` event, so a client that only waits for `audio-stop` is not
left hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from wyoming.event import Event
from wyoming.info import Describe
from wyoming.ping import Ping, Pong
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from ..speech.responses import Response, TextInput
from ..text import ssml
from ..text.document import Document
from ..text.ssml import looks_like_ssml
from .context import Context
from .protocol import ClientError, ClientGone, read_header_line, read_rest
from .sender import Sender, count_error
from .sentences import SentenceBuffer

_LOGGER = logging.getLogger(__name__)

_LINGER_S = 1.0  # after an error: how long, and how much, of the client's input to drop
_LINGER_BYTES = 1024 * 1024
STOPPING_NOTICE_S = 2.0  # for the `stopping` error and the linger after it, at most


class Connection:
    def __init__(
        self, ctx: Context, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.ctx = ctx
        self.reader = reader
        self.writer = writer
        self.peer = peer_name(writer)
        self._sender = Sender(ctx, writer, self.peer)
        self._sentences: SentenceBuffer | None = None  # while a stream is open
        self._markup: list[str] | None = None  # while an SSML stream is open: its text
        self._chars = 0  # text received for the current stream

    async def serve(self) -> None:
        """Answer the client's events until it closes, misbehaves or idles; never raises
        but for cancellation (the server stopping)."""
        try:
            await self._events()
        except ClientError as err:
            await self.refuse(err.text, err.code)
        except ClientGone as err:
            count_error(self.ctx, self.peer, "%s went away %s", err)
        except TimeoutError:
            await self.refuse(f"no event for {self.ctx.idle_timeout:g} s", "timeout")
        except ConnectionError as err:
            count_error(self.ctx, self.peer, "%s: connection lost (%s)", err)
        except asyncio.CancelledError:  # the server stops
            await self._say_stopping()
            raise
        finally:
            await self._end_response()
            await self._sender.close()

    async def refuse(self, text: str, code: str) -> None:
        """Answer an `error` event and close: the client did wrong, or there is no room."""
        await self._end_response()
        count_error(self.ctx, self.peer, "%s: %s; closing", text)
        await self._sender.send_error(text, code)
        await self._drop_input()
        await self._sender.close()

    async def _say_stopping(self) -> None:
        """Tell the client why its connection ends (else it sees only the end), within
        STOPPING_NOTICE_S: the daemon's stop waits for this."""
        await self._end_response()
        _LOGGER.info("Wyoming %s: the server stops; closing", self.peer)
        told = False
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(STOPPING_NOTICE_S):
                told = await self._sender.send_error("the server is stopping", "stopping")
                if told:
                    await self._drop_input()
        self._sender.hang_up(flushed=told)

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

    # --- reading -------------------------------------------------------------------------

    async def _events(self) -> None:
        while True:
            event = await self._next_event()
            if event is None:
                break
            await self._handle(event)
        if self._sender.failed:
            return
        if self._sentences is not None:
            raise ClientGone("in the middle of a stream (no synthesize-stop)")
        # The client has sent all it will (it may still read): finish what it asked for.
        await self._sender.drain()

    async def _next_event(self) -> Event | None:
        """The next event; TimeoutError after `idle_timeout` without one, unless the
        client is waiting for audio that is being made (that is not idling). (A task and
        asyncio.wait per event cost 4x the parsing: ~7 ms for a 90-chunk stream, taken
        from the synthesis of its first sentence on two cores; asyncio.timeout is cheap.)"""
        while True:
            try:
                async with asyncio.timeout(self.ctx.idle_timeout):
                    line = await read_header_line(self.reader, self.ctx.max_data)
                break
            except TimeoutError:
                if not self._sender.busy:
                    raise
        return None if line is None else await self._rest_of_event(line)

    async def _rest_of_event(self, line: bytes) -> Event:
        """The data and payload the header announced, within `idle_timeout` whatever the
        client waits for: a client that stops mid-event would hold its slot for good."""
        try:
            async with asyncio.timeout(self.ctx.idle_timeout):
                return await read_rest(self.reader, line, self.ctx.max_data)
        except TimeoutError:
            text = f"an event's data did not arrive within {self.ctx.idle_timeout:g} s"
            raise ClientError(text, "timeout") from None

    async def _handle(self, event: Event) -> None:
        kind = event.type
        if Describe.is_type(kind):
            await self._sender.write(self.ctx.info)
        elif Ping.is_type(kind):
            await self._sender.write(Pong(text=event.data.get("text")).event())
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
        self._check_length(len(text))  # before audio-start: a refusal is the whole answer
        text_format = _text_format(event.data)
        if text_format is None and looks_like_ssml(text):
            text_format = "ssml"  # as on MQTT: HA's tts.speak sends a message as it is
        speech = self._parsed(text) if text_format == "ssml" else text
        voice = _voice(event.data)
        response = await self._open(voice, TextInput.WHOLE)
        _LOGGER.info(
            "Wyoming %s: synthesize, %d characters%s (%s)",
            self.peer,
            len(text),
            " of SSML" if text_format == "ssml" else "",
            response.name,
        )
        response.add_text(speech)
        response.close_input()

    async def _start_stream(self, event: Event) -> None:
        if self._sentences is not None:  # waiting for the first would wait forever
            raise ClientError("synthesize-start inside a stream", "unexpected")
        ssml = _text_format(event.data) == "ssml"
        voice = _voice(event.data)
        response = await self._open(voice, TextInput.STREAM)
        self._sentences = SentenceBuffer()
        # A document is parsed whole, at synthesize-stop: its markup may cut any sentence.
        self._markup = [] if ssml else None
        _LOGGER.info(
            "Wyoming %s: synthesize stream%s (%s)",
            self.peer,
            " of SSML" if ssml else "",
            response.name,
        )

    def _stream_text(self, text: str) -> None:
        response = self._sender.response
        if self._sentences is None or response is None:
            raise ClientError("synthesize-chunk without synthesize-start", "unexpected")
        self._chars += len(text)
        self._check_length(self._chars)
        if self._markup is not None:
            self._markup.append(text)
            return
        for sentence in self._sentences.add(text):  # each synthesized as soon as complete
            response.add_text(sentence)

    def _stop_stream(self) -> None:
        response = self._sender.response
        if self._sentences is None or response is None:
            raise ClientError("synthesize-stop without synthesize-start", "unexpected")
        if self._markup is not None:
            response.add_text(self._parsed("".join(self._markup)))
        else:
            rest = self._sentences.finish()
            if rest:
                response.add_text(rest)
        response.close_input()
        self._sentences = self._markup = None

    def _parsed(self, text: str) -> Document:
        try:
            return ssml.parse(text, max_chars=self.ctx.max_text_chars)
        except ssml.SsmlError as err:
            raise ClientError(str(err), "bad-ssml") from None

    async def _open(self, voice: SynthesizeVoice | None, text_input: TextInput) -> Response:
        response = await self._sender.open(voice, text_input)
        self._chars = 0
        return response

    def _check_length(self, chars: int) -> None:
        if chars > self.ctx.max_text_chars:
            raise ClientError(f"text longer than {self.ctx.max_text_chars} characters", "too-large")

    async def _end_response(self) -> None:
        self._sentences = self._markup = None
        await self._sender.end()


def peer_name(writer: asyncio.StreamWriter) -> str:
    """The client's address for logs: host:port, or the socket path's side for unix."""
    peer = writer.get_extra_info("peername")
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer or "unix-socket-client")


def _text(data: dict[str, Any]) -> str:
    text = data.get("text")
    if not isinstance(text, str):
        raise ClientError("the event needs a text (a string)", "bad-request")
    return text


def _text_format(data: dict[str, Any]) -> str | None:
    """The event's text_format (wyoming 1.10): "ssml", "text", or None when not given."""
    value = data.get("text_format")
    if value is not None and value not in ssml.TEXT_FORMATS:
        text = f"text_format must be one of {', '.join(ssml.TEXT_FORMATS)}"
        raise ClientError(text, "bad-request")
    return value if isinstance(value, str) else None


def _voice(data: dict[str, Any]) -> SynthesizeVoice | None:
    raw = data.get("voice") or {}
    if not isinstance(raw, dict) or not all(
        isinstance(raw.get(key), str | None) for key in ("name", "language", "speaker")
    ):
        text = "voice must be an object of strings (name, language, speaker)"
        raise ClientError(text, "bad-request")
    return SynthesizeVoice.from_dict(raw)
