"""Responses: speech made for a client that plays it elsewhere (a Wyoming or HTTP client),
as work for the pipeline's synthesis workers, ranked below local playback.

A `Response` is one answer to a client: the text it was given (at once, or sentence by
sentence as a stream arrives), planned by the same router and rendered by the same code
as a local request (chunk_render.py), one text chunk per step. `Responses` is the
schedule's producer of the `REMOTE` task class (schedule.py): it hands a worker the next
step of the responses that can take one, in turn, whichever door opened them. Each piece
of audio goes to the door (`emit`, audio_stream.py) as soon as the decoder makes it. A
response whose client has not taken its audio yet (MAX_BACKLOG_S) gets no further steps
until it has: memory stays bounded whatever the client does.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..cache.planned import PlannedChunk
from ..cache.serving import PhraseCache
from ..config import SynthesisSettings, TextSettings
from ..text import EmptyTextError
from ..text.document import Document
from ..text.lexicon import Lexicon
from ..voice.base import SpeechOptions, SpeechVoice, Tuning
from ..voice.registry import Voices
from .audio_stream import Emit, Failed, Finished
from .chunk_render import ChunkRenderer, ChunkStats
from .jobs import StepTask
from .routing import Router
from .timing import Timing

_LOGGER = logging.getLogger(__name__)

MAX_BACKLOG_S = 20.0  # audio made but not yet written to the client (~0.9 MB at 22 kHz)


@dataclass(frozen=True)
class VoiceChoice:
    """Which voice speaks a response, how, and at which rate its audio goes out."""

    name: str  # for logs: which response it is
    voice: SpeechVoice
    options: SpeechOptions

    @property
    def rate(self) -> int:
        """One rate per response: its voice's; text routed to another voice (Mandarin
        inside English) is resampled to it."""
        return self.voice.sample_rate


class TextInput(enum.Enum):
    """How a response's text comes."""

    WHOLE = "whole"  # one text, then the end (Wyoming's synthesize, HTTP)
    STREAM = "stream"  # sentence by sentence as the client sends them (synthesize-chunk)


class _Phase(enum.Enum):
    OPEN = "open"  # more text may come
    CLOSED = "closed"  # no more text comes: Finished follows the last piece
    OVER = "over"  # finished, failed or cancelled: nothing more is emitted


class _Start(enum.Enum):
    """How far its start is: the first text is planned with a short first chunk, and
    the first chunk rendered opens the audio (its leading silence trimmed)."""

    FRESH = "fresh"  # no text planned yet
    PLANNED = "planned"  # the first text planned; no chunk rendered yet
    SPEAKING = "speaking"  # a chunk rendered: the rest goes on from it


class Response:
    """One response's text, chunks and state. Its state changes under the work's lock;
    the synthesis runs outside it, in one worker at a time (`busy`)."""

    def __init__(
        self, work: Responses, choice: VoiceChoice, emit: Emit, text_input: TextInput, door: str
    ) -> None:
        self.name = choice.name
        self.door = door
        self.choice = choice
        self.text_input = text_input
        self.rate = choice.rate
        self._work = work
        self._lock = work.lock
        self._emit = emit
        self._texts: deque[str | Document] = deque()  # to plan (a text, or SSML parsed)
        self._chunks: deque[PlannedChunk] = deque()  # planned, to synthesize
        self._start = _Start.FRESH
        self._phase = _Phase.OPEN
        self._busy = False  # a worker runs its step
        self._backlog_s = 0.0
        self.stats = ChunkStats()  # its chunks' rendering, summed (one worker at a time)
        # Received when its first text comes; first audio and finished as its door takes
        # them (audio_stream.py): time to first audio and RTF as every door's.
        self.timing = Timing()

    @property
    def synth_seconds(self) -> float:
        """Spent making its audio (its workers' time)."""
        return self.stats.synth_seconds

    # --- from the connection (event loop thread) -----------------------------------

    def add_text(self, text: str | Document) -> None:
        with self._lock:
            if self._phase is _Phase.OVER:
                return
            self._texts.append(text)
            self.timing.received()
        self._work.wake()

    def close_input(self) -> None:
        """No more text comes; Finished follows the last piece."""
        with self._lock:
            if self._phase is _Phase.OPEN:
                self._phase = _Phase.CLOSED
            done = self._done_locked()
        if done:
            self._finish()
        else:
            self._work.wake()

    def written(self, seconds: float) -> None:
        """The client's connection took `seconds` of audio."""
        with self._lock:
            blocked = self._backlog_s >= MAX_BACKLOG_S
            self._backlog_s -= seconds
            unblocked = blocked and self._backlog_s < MAX_BACKLOG_S
        if unblocked:
            self._work.wake()

    def cancel(self) -> None:
        """The client is gone or the server stops: drop what is left; a running step stops
        after its current piece."""
        with self._lock:
            self._phase = _Phase.OVER
            self._texts.clear()
            self._chunks.clear()
        self._work.remove(self)

    @property
    def waiting_for_text(self) -> bool:
        """A stream with nothing to do until its client sends more."""
        with self._lock:
            idle = not (self._texts or self._chunks or self._busy)
            return idle and self._phase is _Phase.OPEN

    # --- for the schedule (under the work's lock) -------------------------------------

    def ready(self) -> bool:
        has_work = bool(self._texts or self._chunks)
        over = self._phase is _Phase.OVER
        return has_work and not (self._busy or over) and self._backlog_s < MAX_BACKLOG_S

    def take(self) -> StepTask:
        self._busy = True
        return StepTask(self.name, self.step)

    # --- in a synthesis worker ------------------------------------------------------------

    def step(self) -> None:
        """Plan the next text if no chunk is waiting, then synthesize one chunk."""
        try:
            chunk = self._next_chunk()
            if chunk is not None:
                self._render(chunk)
        except (EmptyTextError, ValueError) as err:  # UnsupportedScriptError is one
            self._fail(str(err), "bad-text")
        except Exception as err:
            self._fail(f"synthesis failed: {err}", "synthesis-failed")
            raise  # the worker logs it and counts an error
        finally:
            with self._lock:
                self._busy = False
                done = self._done_locked()
            if done:
                self._finish()

    def _next_chunk(self) -> PlannedChunk | None:
        with self._lock:
            if self._chunks:
                return self._chunks.popleft()
            if not self._texts or self._phase is _Phase.OVER:
                return None
            text, first = self._texts.popleft(), self._start is _Start.FRESH
            if first:
                self._start = _Start.PLANNED
        chunks = self._work.plan(self, text, first)
        with self._lock:
            self._chunks.extend(chunks[1:])
        return chunks[0] if chunks else None

    def _render(self, chunk: PlannedChunk) -> None:
        rate = self.rate
        first, self._start = self._start is not _Start.SPEAKING, _Start.SPEAKING

        def deliver(pcm: np.ndarray) -> bool:
            with self._lock:
                if self._phase is _Phase.OVER:
                    return False
                self._backlog_s += len(pcm) / rate
            self._emit(pcm)
            return True

        self._work.renderer.render(chunk, first, rate, deliver, stats=self.stats, whose=self.name)

    def _fail(self, text: str, code: str) -> None:
        with self._lock:
            if self._phase is _Phase.OVER:
                return
            self._phase = _Phase.OVER
            self._texts.clear()
            self._chunks.clear()
        self._work.remove(self)
        self._emit(Failed(text, code))

    def _finish(self) -> None:
        # Out of the open responses as soon as it is over: a finished response the work
        # still held would be visited by every `take` and never freed (issue 30's leak).
        self._work.remove(self)
        self._emit(Finished())

    def _done_locked(self) -> bool:
        """True once, when the last piece is out and no more text comes."""
        if self._phase is not _Phase.CLOSED or self._busy or self._texts or self._chunks:
            return False
        self._phase = _Phase.OVER
        return True


class Responses:
    """The open responses of every door, handed to the pipeline's workers one step at a
    time, in turn."""

    def __init__(
        self,
        synthesis: SynthesisSettings,
        voices: Voices,
        wake: Callable[[], None],
        cache: PhraseCache | None = None,
        lexicon: Lexicon | None = None,
        text: TextSettings | None = None,
    ) -> None:
        self.lock = threading.Lock()
        self.wake = wake  # the schedule's: an idle worker looks for work again
        self._voices = voices
        # The chunks render as a local request's do, through the pipeline's phrase cache
        # (None with cache.enabled off).
        self.renderer = ChunkRenderer(cache)
        self._responses: deque[Response] = deque()
        self._names = itertools.count(1)
        self._first_router = Router(synthesis, voices, lexicon, text)
        # A stream's later sentences need no short first chunk: audio is already flowing.
        rest = dataclasses.replace(synthesis, first_chunk_chars=synthesis.max_chunk_chars)
        self._rest_router = Router(rest, voices, lexicon, text)

    def open(
        self,
        emit: Emit,
        *,
        door: str,
        text_input: TextInput,
        voice: str | None = None,
        language: str | None = None,
        speaker: str | None = None,
        speed: float | None = None,
        tuning: Tuning | None = None,
    ) -> Response:
        """A new response for a client of `door` ("wyoming", "http": its name and its
        telemetry label) in the voice it named (by name, else by language, else the
        default voice), `speed` times as fast as the voice's own pace, or with the
        model's scales a Piper client gives (`tuning`). ValueError (UnknownVoiceError) for
        a voice or speaker there is not."""
        name = f"{door}-{next(self._names)}"
        chosen = self._voices.choose(voice, language)
        options = self._voices.options_for(chosen, speaker=speaker, speed=speed, tuning=tuning)
        chosen.speaker_id(options.speaker)
        choice = VoiceChoice(name, chosen, options)
        response = Response(self, choice, emit, text_input, door)
        with self.lock:
            self._responses.append(response)
        return response

    def remove(self, response: Response) -> None:
        with self.lock:
            if response in self._responses:
                self._responses.remove(response)

    @property
    def open_responses(self) -> int:
        with self.lock:
            return len(self._responses)

    def take(self) -> StepTask | None:
        """The next step of the first ready response, which then goes to the back."""
        with self.lock:
            for _ in range(len(self._responses)):
                response = self._responses[0]
                self._responses.rotate(-1)
                if response.ready():
                    return response.take()
        return None

    def plan(self, response: Response, text: str | Document, first: bool) -> list[PlannedChunk]:
        """`text`'s chunks, routed by writing system as an MQTT request's are. A stream's
        sentence with nothing to say (a lone "...") is skipped; the text of a plain
        request must have something (EmptyTextError)."""
        choice = response.choice
        router = self._first_router if first else self._rest_router
        try:
            return router.plan(text, choice.voice, choice.options)
        except EmptyTextError:
            if response.text_input is not TextInput.STREAM:
                raise
            return []
