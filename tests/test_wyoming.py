"""The Wyoming TTS server in-process, spoken to with the wyoming package's own client:
describe, synthesize, the streaming variant, bad clients, and its rank below local
playback on the shared synthesis workers. Fakes for the voice and the output."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest
from wyoming.audio import AudioChunk, AudioStart
from wyoming.client import AsyncTcpClient, AsyncUnixClient
from wyoming.error import Error
from wyoming.event import Event, async_read_event
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeTextFormat,
    SynthesizeVoice,
)

from edge_tts.audio.dsp import ms_to_frames
from edge_tts.config import AudioSettings, Settings, SynthesisSettings, WyomingSettings
from edge_tts.core.telemetry import Telemetry
from edge_tts.daemon.app import FIGURES
from edge_tts.messages.request import Priority, SayRequest
from edge_tts.mqtt.envelope import MqttOrigin
from edge_tts.speech.audio_stream import Failed, Finished
from edge_tts.speech.jobs import Job, StepTask
from edge_tts.speech.pipeline import Pipeline
from edge_tts.speech.responses import Responses, TextInput
from edge_tts.speech.schedule import TaskClass
from edge_tts.text import split_sentences
from edge_tts.voice.base import SpeechOptions
from edge_tts.voice.registry import Voices
from edge_tts.wyoming import WyomingServer, sentences
from edge_tts.wyoming.info import wyoming_language
from edge_tts.wyoming.sentences import SentenceBuffer

from .support.fakes import FakeDelivery, FakeOutput, FakeReporter, FakeVoice
from .support.waiting import DEFAULT_TIMEOUT_S, wait_until

pytestmark = pytest.mark.unit

T = TypeVar("T")
RATE = 22050
LEAD_IN_MS = 200
SENTENCES = " ".join(f"This is sentence number {n}." for n in range(1, 9))


class Rig:
    """A pipeline on fakes (what plays locally is recorded) and the Wyoming server on a
    free loopback port, sharing its workers."""

    def __init__(self, tmp: Path, delay: float = 0.0, uri: str = "tcp://127.0.0.1:0", **wy: Any):
        self.voice = FakeVoice(delay)  # what Wyoming clients get
        self.settings = Settings(
            device_id="testpi",
            audio=AudioSettings(lead_in_ms=LEAD_IN_MS),
            wyoming=WyomingSettings(uri=uri, **wy),
        )
        self.voices = Voices(self.settings, made={"default": self.voice})
        self.output = FakeOutput(speedup=50)
        self.reporter = FakeReporter()
        self.telemetry = Telemetry(figures=FIGURES)
        self.pipeline = Pipeline(
            SynthesisSettings(max_concurrent=2),
            self.settings.queue,
            output=self.output,
            output_rate=RATE,
            reporter=self.reporter,
            telemetry=self.telemetry,
            played=set[str](),
        )
        schedule = self.pipeline.schedule
        self.responses = Responses(self.settings.synthesis, self.voices, schedule.wake)
        schedule.add(TaskClass.REMOTE, self.responses)
        self.server = WyomingServer(self.settings, self.voices, self.responses, self.telemetry)
        self.pipeline.start()
        self.server.start()

    @property
    def port(self) -> int:
        address = self.server.address
        assert isinstance(address, tuple)
        return address[1]

    def client(self) -> AsyncTcpClient:
        return AsyncTcpClient("127.0.0.1", self.port)

    def say_locally(self, text: str, voice: FakeVoice, **fields: Any) -> Job:
        """An MQTT request as the intake makes it, played on the fake output."""
        request = SayRequest(id=fields.pop("id"), text=text, key="k", origin=MqttOrigin(), **fields)
        job = Job(request, [FakeDelivery()], voice, SpeechOptions())
        self.pipeline.submit(job)
        return job

    def counter(self, name: str) -> int:
        counters = self.telemetry.snapshot({})["counters"]
        assert isinstance(counters, dict)
        return int(counters[name])

    def close(self) -> None:
        try:
            self.server.stop()
        finally:
            self.pipeline.stop(5)


@pytest.fixture()
def rig(tmp_path: Path) -> Iterator[Rig]:
    made = Rig(tmp_path)
    try:
        yield made
    finally:
        made.close()


def run(coro: Awaitable[T], timeout: float = DEFAULT_TIMEOUT_S) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


async def collect(
    client: AsyncTcpClient | AsyncUnixClient, *until: str
) -> list[tuple[float, Event]]:
    """Events with their arrival times, up to one of `until`, an error, or the end."""
    got: list[tuple[float, Event]] = []
    while True:
        event = await client.read_event()
        if event is None:
            return got
        got.append((time.monotonic(), event))
        if event.type in until or Error.is_type(event.type):
            return got


async def synthesize(rig: Rig, *events: Event) -> list[tuple[float, Event]]:
    async with rig.client() as client:
        for event in events:
            await client.write_event(event)
        return await collect(client, "audio-stop", "synthesize-stopped")


def audio_of(events: list[tuple[float, Event]]) -> np.ndarray:
    chunks = [AudioChunk.from_event(e).audio for _, e in events if AudioChunk.is_type(e.type)]
    return np.frombuffer(b"".join(chunks), "<i2")


def types(events: list[tuple[float, Event]]) -> list[str]:
    """Event types in order, runs of audio-chunk folded into one."""
    folded: list[str] = []
    for _, event in events:
        if not (folded and folded[-1] == event.type == "audio-chunk"):
            folded.append(event.type)
    return folded


# --- describe and synthesize ----------------------------------------------------------


def test_describe_lists_every_voice_with_its_language(rig: Rig) -> None:
    async def ask() -> list[tuple[float, Event]]:
        async with rig.client() as client:
            await client.write_event(Describe().event())
            return await collect(client, "info")

    ((_, event),) = run(ask())
    assert Info.is_type(event.type)
    (program,) = Info.from_event(event).tts
    assert program.installed and program.supports_synthesize_streaming
    assert [(v.name, v.languages, v.installed) for v in program.voices] == [
        ("default", ["en_US"], True)
    ]


def test_languages_are_named_as_home_assistant_matches_them() -> None:
    assert wyoming_language("en-us") == "en_US"
    assert wyoming_language("en-GB") == "en_GB"
    assert wyoming_language("zh") == "zh_CN"  # the Mandarin voice (Baker: Mainland)
    assert wyoming_language("de") == "de"


def test_synthesize_answers_audio_with_a_lead_in_at_one_rate(rig: Rig) -> None:
    events = run(synthesize(rig, Synthesize(text="Hello there. How are you?").event()))
    assert types(events) == ["audio-start", "audio-chunk", "audio-stop"]
    start = AudioStart.from_event(events[0][1])
    assert (start.rate, start.width, start.channels) == (RATE, 2, 1)
    assert {AudioChunk.from_event(e).rate for _, e in events if e.type == "audio-chunk"} == {RATE}
    audio = audio_of(events)
    lead_in = ms_to_frames(LEAD_IN_MS, RATE)
    assert not audio[:lead_in].any() and audio[lead_in : lead_in + 100].any()
    assert audio.size > lead_in + RATE // 2
    assert rig.output.played == []  # nothing for the local speaker
    assert rig.counter("wyoming_requests") == 1 and rig.counter("wyoming_errors") == 0


def test_a_response_that_is_over_leaves_the_open_responses(rig: Rig) -> None:
    """Finished or failed, a response is no longer handed to the workers nor held: the
    HTTP door, which never cancels a finished answer, held every one (memory and a
    longer `take` per request)."""
    for text, last in (("Hello there.", Finished), ("...", Failed)):
        over = threading.Event()
        got: list[object] = []

        def emit(item: object, got: list[object] = got, over: threading.Event = over) -> None:
            got.append(item)
            if isinstance(item, Finished | Failed):
                over.set()

        response = rig.responses.open(emit, door="http", text_input=TextInput.WHOLE)
        response.add_text(text)
        response.close_input()
        assert over.wait(DEFAULT_TIMEOUT_S), got
        assert isinstance(got[-1], last)
        assert rig.responses.open_responses == 0


def test_audio_goes_out_as_it_is_made_not_after_the_whole_text(tmp_path: Path) -> None:
    rig = Rig(tmp_path, delay=0.3)
    try:
        events = run(synthesize(rig, Synthesize(text=SENTENCES).event()))
    finally:
        rig.close()
    first_audio = next(t for t, e in events if e.type == "audio-chunk")
    last_synthesis_began = max(start for start, _ in rig.voice.intervals)
    assert first_audio < last_synthesis_began  # the client had audio before the end
    assert len(rig.voice.intervals) >= 8


def test_a_voice_is_chosen_by_name_or_language(rig: Rig) -> None:
    by_name = Synthesize(text="Hi.", voice=SynthesizeVoice(name="default")).event()
    by_language = Synthesize(text="Hi.", voice=SynthesizeVoice(language="en_US")).event()
    assert types(run(synthesize(rig, by_name)))[-1] == "audio-stop"
    assert types(run(synthesize(rig, by_language)))[-1] == "audio-stop"


@pytest.mark.parametrize(
    ("voice", "reason"),
    [
        (SynthesizeVoice(name="nobody"), "unknown voice 'nobody'"),
        (SynthesizeVoice(language="fr_FR"), "no voice for language 'fr_FR'"),
        (SynthesizeVoice(name="default", speaker="7"), "has one speaker"),
    ],
)
def test_a_voice_that_is_not_there_is_an_error(
    rig: Rig, voice: SynthesizeVoice, reason: str
) -> None:
    events = run(synthesize(rig, Synthesize(text="Hi.", voice=voice).event()))
    error = Error.from_event(events[-1][1])
    assert reason in error.text and error.code == "bad-request"


def test_text_with_nothing_to_say_is_an_error(rig: Rig) -> None:
    events = run(synthesize(rig, Synthesize(text=" ?! ").event()))
    assert Error.from_event(events[-1][1]).code == "bad-text"


# --- SSML (text_format, wyoming 1.10) ----------------------------------------------------


def test_describe_says_it_reads_ssml(rig: Rig) -> None:
    async def ask() -> Event:
        async with rig.client() as client:
            await client.write_event(Describe().event())
            return (await collect(client, "info"))[0][1]

    event = run(ask())
    assert [program["supports_ssml"] for program in event.data["tts"]] == [True]
    assert "SSML" in (Info.from_event(event).tts[0].description or "")  # a wyoming 1.10 client


def test_ssml_synthesize_plays_its_break_as_exact_silence(rig: Rig) -> None:
    body = "Hello there.<break time='1s'/> How are you?"
    marked = Synthesize(text=f"<speak>{body}</speak>", text_format=SynthesizeTextFormat.SSML)
    plain = Synthesize(text="Hello there. How are you?")
    with_break, without = (audio_of(run(synthesize(rig, e.event()))) for e in (marked, plain))
    assert with_break.size - without.size == RATE  # the fake voice: the same audio besides
    lead_in = ms_to_frames(LEAD_IN_MS, RATE)
    speech = np.flatnonzero(with_break[lead_in:])
    assert np.diff(speech).max() > RATE  # a run of zeros longer than the break


def test_a_synthesize_starting_with_speak_is_ssml_unless_it_says_text(rig: Rig) -> None:
    markup = "<speak>Hi <say-as interpret-as='characters'>AB</say-as></speak>"
    spelled = audio_of(run(synthesize(rig, Synthesize(text="Hi eh B").event())))
    assert np.array_equal(audio_of(run(synthesize(rig, Synthesize(text=markup).event()))), spelled)
    as_text = Synthesize(text=markup, text_format=SynthesizeTextFormat.TEXT)
    assert audio_of(run(synthesize(rig, as_text.event()))).size > spelled.size  # the tags, read


def test_an_ssml_stream_is_parsed_whole_at_its_stop(rig: Rig) -> None:
    pieces = ("<speak>Hel", "lo.<br", "eak time='500ms'/> By", "e.</s", "peak>")
    marked = [
        SynthesizeStart(text_format=SynthesizeTextFormat.SSML).event(),
        *(SynthesizeChunk(text=piece).event() for piece in pieces),
        SynthesizeStop().event(),
    ]
    plain = [SynthesizeStart().event(), SynthesizeChunk(text="Hello. Bye.").event()]
    with_break = run(synthesize(rig, *marked))
    assert types(with_break) == ["audio-start", "audio-chunk", "audio-stop"]
    without = audio_of(run(synthesize(rig, *plain, SynthesizeStop().event())))
    assert audio_of(with_break).size - without.size == RATE // 2


@pytest.mark.parametrize(
    ("events", "code", "text"),
    [
        (
            [Synthesize(text="<speak>Hi<break time='1s'></speak>")],
            "bad-ssml",
            "SSML is not well-formed XML: mismatched tag at line 1, column 29",
        ),
        (
            [Synthesize(text="<speak><break time='soon'/></speak>")],
            "bad-ssml",
            "SSML line 1, column 8: break time 'soon' is not a duration",
        ),
        (
            [
                SynthesizeStart(text_format=SynthesizeTextFormat.SSML),
                SynthesizeChunk(text="<speak>Hi <prosody rate='warp'>"),
                SynthesizeChunk(text="there</prosody></speak>"),
                SynthesizeStop(),
            ],
            "bad-ssml",
            "SSML line 1, column 11: prosody rate 'warp' is not one of",
        ),
        ([Synthesize(text="Hi", text_format="html")], "bad-request", "text_format must be one of"),
    ],
)
def test_bad_ssml_gets_one_error_saying_where_and_no_audio(
    rig: Rig,
    events: list[Synthesize | SynthesizeStart | SynthesizeChunk | SynthesizeStop],
    code: str,
    text: str,
) -> None:
    answer = run(synthesize(rig, *(e.event() for e in events)))
    assert [e for e in types(answer) if e.startswith("audio")] == []
    assert types(answer)[-1] == "error"
    error = Error.from_event(answer[-1][1])
    assert error.code == code and error.text.startswith(text)
    assert_still_serves(rig)


# --- streaming ------------------------------------------------------------------------


def test_a_stream_gets_audio_while_its_text_is_still_arriving(tmp_path: Path) -> None:
    rig = Rig(tmp_path, delay=0.05)

    async def stream() -> tuple[list[tuple[float, Event]], float]:
        async with rig.client() as client:
            await client.write_event(SynthesizeStart().event())
            for delta in ("Turn on ", "the light", ". It", " is getting ", "dark in the "):
                await client.write_event(SynthesizeChunk(text=delta).event())
            first = await collect(client, "audio-chunk")  # before the text is complete
            stop_sent = time.monotonic()
            await client.write_event(SynthesizeChunk(text="kitchen.").event())
            # HA sends the whole text once more, for servers without streaming: ignored.
            await client.write_event(Synthesize(text="Turn on the light. It is").event())
            await client.write_event(SynthesizeStop().event())
            rest = await collect(client, "synthesize-stopped")
            return first + rest, stop_sent

    try:
        events, stop_sent = run(stream())
    finally:
        rig.close()
    assert types(events) == ["audio-start", "audio-chunk", "audio-stop", "synthesize-stopped"]
    assert events[1][0] < stop_sent
    assert len(rig.voice.intervals) == 2  # each sentence once, nothing twice


def test_sentences_are_complete_once_the_next_one_begins() -> None:
    buffer = SentenceBuffer()
    assert buffer.add("Dr. Smith is in") == []
    assert buffer.add(" room 3. It") == ["Dr. Smith is in room 3."]
    assert buffer.add(" closes at 5.30 ") == []
    assert buffer.add("today. ") == []  # the end might still be "today. ..."
    assert buffer.finish() == "It closes at 5.30 today."
    assert buffer.add("Yes. No. Maybe") == ["Yes.", "No."]
    assert buffer.finish() == "Maybe"
    assert buffer.add("前方路口请左转。注意") == ["前方路口请左转。"]
    assert buffer.finish() == "注意"


def test_the_work_per_chunk_of_a_stream_does_not_grow_with_its_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """10,000 tiny chunks without a sentence end (100,000 characters can be allowed):
    each costs its own characters and a short window, not all the text so far."""
    scanned: list[int] = []

    def counted(split: Callable[[str], T]) -> Callable[[str], T]:
        def count(text: str) -> T:
            scanned[-1] += len(text)
            return split(text)

        return count

    for name in ("split_sentences", "sentence_ends"):
        original = getattr(sentences, name, split_sentences)
        monkeypatch.setattr(sentences, name, counted(original), raising=False)
    buffer = SentenceBuffer()
    for _ in range(10_000):
        scanned.append(0)
        assert buffer.add("la ") == []
    assert max(scanned) <= 64  # the chunk and the window before it
    assert buffer.add("la. Next") == [" ".join(["la"] * 10_001) + "."]  # once, whole
    assert buffer.finish() == "Next"


def test_a_sentence_no_voice_reads_ends_the_stream_with_one_error(rig: Rig) -> None:
    events = run(
        synthesize(
            rig,
            SynthesizeStart().event(),
            SynthesizeChunk(text="Hello there. 前方路口请左转。 And more.").event(),
            SynthesizeStop().event(),
        )
    )
    assert types(events) == ["audio-start", "audio-chunk", "error"]  # the first sentence
    error = Error.from_event(events[-1][1])
    assert error.code == "bad-text" and "Mandarin" in error.text
    wait_until(lambda: rig.server.clients == 0, what="the connection to close")
    assert rig.counter("wyoming_errors") == 1


def test_a_stream_inside_a_stream_is_an_error(rig: Rig) -> None:
    events = run(synthesize(rig, SynthesizeStart().event(), SynthesizeStart().event()))
    assert Error.from_event(events[-1][1]).code == "unexpected"


def test_a_stream_that_ends_without_text_stops_without_audio(rig: Rig) -> None:
    events = run(synthesize(rig, SynthesizeStart().event(), SynthesizeStop().event()))
    assert types(events) == ["synthesize-stopped"]


def test_the_text_limit_is_per_response_not_per_connection(rig: Rig) -> None:
    text = "Word after word. " * 90  # 1,530 characters: under the limit (2,000), not twice
    plain = [Synthesize(text=text).event()]
    stream = [
        SynthesizeStart().event(),
        SynthesizeChunk(text=text).event(),
        SynthesizeStop().event(),
    ]

    async def one_connection() -> list[list[str]]:
        async with rig.client() as client:
            answers = []
            for events, last in (
                (plain, "audio-stop"),
                (stream, "synthesize-stopped"),
                (plain, "audio-stop"),
            ):
                for event in events:
                    await client.write_event(event)
                answers.append(types(await collect(client, last)))
            return answers

    spoken = ["audio-start", "audio-chunk", "audio-stop"]
    assert run(one_connection()) == [spoken, [*spoken, "synthesize-stopped"], spoken]
    assert rig.counter("wyoming_errors") == 0


# --- bad clients ----------------------------------------------------------------------


async def raw_exchange(rig: Rig, data: bytes, half_close: bool = True) -> list[Event]:
    """Send raw bytes; every event the server answers, until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", rig.port)
    writer.write(data)
    await writer.drain()
    if half_close:
        writer.write_eof()
    got: list[Event] = []
    while (event := await async_read_event(reader)) is not None:
        got.append(event)
    writer.close()
    return got


def header(**fields: Any) -> bytes:
    return json.dumps(fields).encode() + b"\n"


@pytest.mark.parametrize(
    ("data", "code", "text"),
    [
        (b"not json\n", "malformed", "not valid JSON"),
        (b"[1, 2]\n", "malformed", "JSON object"),
        (header(data={"text": "x"}), "malformed", "without a type"),
        (header(type="synthesize", data=[1]), "malformed", "data must be a JSON object"),
        (header(type="synthesize", data_length=10**9), "too-large", "over the limit"),
        (header(type="synthesize", payload_length=10**9), "too-large", "over the limit"),
        (header(type="synthesize", data_length=-1), "malformed", "non-negative"),
        (header(type="synthesize", data_length="12"), "malformed", "non-negative"),
        (b"{" + b" " * 300_000 + b"}\n", "too-large", "header longer"),
        (header(type="synthesize", data={"text": 5}), "bad-request", "needs a text"),
        (header(type="synthesize", data={"text": "x", "voice": "y"}), "bad-request", "voice"),
        (header(type="synthesize", data={"text": "x" * 3000}), "too-large", "2000 characters"),
        (header(type="synthesize-chunk", data={"text": "x"}), "unexpected", "without"),
    ],
)
def test_a_bad_event_gets_an_error_and_the_connection_closes(
    rig: Rig, data: bytes, code: str, text: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="edge_tts.wyoming")
    events = run(raw_exchange(rig, data))
    assert len(events) == 1 and Error.is_type(events[0].type), events
    error = Error.from_event(events[0])
    assert error.code == code and text in error.text
    assert any("127.0.0.1:" in r.getMessage() for r in caplog.records)  # who it was
    assert rig.counter("wyoming_errors") == 1
    assert_still_serves(rig)


def test_an_event_it_has_no_use_for_is_read_whole_and_ignored(rig: Rig) -> None:
    stray = header(type="audio-chunk", data={"rate": 16000}, payload_length=40_000)
    events = run(raw_exchange(rig, stray + bytes(40_000) + header(type="describe")))
    assert [e.type for e in events] == ["info"]
    assert rig.counter("wyoming_errors") == 0


def test_a_client_gone_mid_event_is_cleaned_up(rig: Rig) -> None:
    for data in (b'{"type": "synth', header(type="synthesize", data_length=50) + b'{"te'):
        assert run(raw_exchange(rig, data)) == []
    wait_until(lambda: rig.server.clients == 0, what="the connections to be dropped")
    assert rig.counter("wyoming_errors") == 2
    assert_still_serves(rig)


def test_a_client_that_disconnects_mid_response_stops_its_synthesis(tmp_path: Path) -> None:
    rig = Rig(tmp_path, delay=0.2)

    async def leave_early() -> None:
        async with rig.client() as client:
            await client.write_event(Synthesize(text=SENTENCES * 3).event())
            await collect(client, "audio-chunk")
        # `async with` closed the socket: the client is gone with 24 sentences to go

    try:
        run(leave_early())
        wait_until(lambda: rig.responses.open_responses == 0, what="the response dropped")
        calls = rig.voice.calls
        assert calls < 24
        assert_still_serves(rig)
        assert rig.voice.calls <= calls + 2  # none for the gone client (2: the check's)
    finally:
        rig.close()


def test_connections_over_the_limit_are_refused(tmp_path: Path) -> None:
    rig = Rig(tmp_path, max_clients=2)

    async def crowd() -> tuple[list[Event], list[Event]]:
        first, second = rig.client(), rig.client()
        await first.connect()
        await second.connect()
        wait_until(lambda: rig.server.clients == 2, what="two clients")
        refused = await raw_exchange(rig, b"", half_close=False)
        answers = []
        for client in (first, second):  # the two admitted ones are served
            await client.write_event(Describe().event())
            answer = await client.read_event()
            assert answer is not None
            answers.append(answer)
            await client.disconnect()
        return refused, answers

    try:
        refused, answers = run(crowd())
        assert [Error.from_event(e).code for e in refused] == ["busy"]
        assert all(Info.is_type(a.type) for a in answers)
        wait_until(lambda: rig.server.clients == 0, what="the clients to leave")
        assert_still_serves(rig)
    finally:
        rig.close()


def test_an_idle_client_is_closed(tmp_path: Path) -> None:
    rig = Rig(tmp_path, idle_timeout=1.0)
    try:
        started = time.monotonic()
        events = run(raw_exchange(rig, b"", half_close=False))
        assert [Error.from_event(e).code for e in events] == ["timeout"]
        assert time.monotonic() - started < 10
        # Waiting for audio is not idling: a response longer than the timeout completes.
        rig.voice.delay = 0.3
        assert types(run(synthesize(rig, Synthesize(text=SENTENCES).event())))[-1] == "audio-stop"
    finally:
        rig.close()


def test_a_taken_port_degrades_and_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(WyomingServer, "retry_s", 0.1)
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    rig = Rig(tmp_path, uri=f"tcp://127.0.0.1:{port}")
    try:
        assert rig.server.problem is not None and "cannot listen" in rig.server.problem
        taken.close()
        wait_until(lambda: rig.server.problem is None, what="the server to listen")
        assert_still_serves(rig)
    finally:
        taken.close()
        rig.close()


def test_it_serves_a_unix_socket(tmp_path: Path) -> None:
    path = tmp_path / "wy.sock"
    rig = Rig(tmp_path, uri=f"unix://{path}")

    async def ask() -> list[tuple[float, Event]]:
        async with AsyncUnixClient(str(path)) as client:
            await client.write_event(Synthesize(text="Hi.").event())
            return await collect(client, "audio-stop")

    try:
        assert types(run(ask()))[-1] == "audio-stop"
    finally:
        rig.close()
    assert not path.exists()


def test_stopping_the_server_drops_its_clients_and_local_playback_goes_on(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path, delay=0.2)

    async def stopped_midway() -> list[tuple[float, Event]]:
        async with rig.client() as client:
            await client.write_event(Synthesize(text=SENTENCES).event())
            await collect(client, "audio-chunk")
            await asyncio.get_running_loop().run_in_executor(None, rig.server.stop)
            return await collect(client, "audio-stop")

    try:
        assert "audio-stop" not in types(run(stopped_midway()))  # cut off: the end, no stop
        assert rig.responses.open_responses == 0 and not rig.server.alive
        job = rig.say_locally("Local request.", FakeVoice(), id="after-stop")
        rig.reporter.wait("finished", job.request.id)
    finally:
        rig.close()  # stops the server a second time: nothing happens


def assert_still_serves(rig: Rig) -> None:
    """The server answers the next client, and local playback works."""
    assert types(run(synthesize(rig, Synthesize(text="Still here.").event())))[-1] == "audio-stop"
    job = rig.say_locally("Local request.", FakeVoice(), id=f"local-{time.monotonic()}")
    rig.reporter.wait("finished", job.request.id)


# --- rank below local playback --------------------------------------------------------


def test_a_critical_local_request_waits_for_no_more_than_the_running_wyoming_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two Wyoming clients keep both workers busy with long texts; a critical MQTT
    request then gets the next free worker: its first audio comes after at most the
    Wyoming chunks already running, and no Wyoming chunk starts until it has it."""
    rig = Rig(tmp_path, delay=0.4)  # each Wyoming chunk takes 0.4 s
    local_voice = FakeVoice(delay=0.1)
    arrived: dict[str, float] = {}
    taken: list[float] = []  # when a worker took a Wyoming step (under the schedule's lock)
    take = rig.responses.take

    def recorded_take() -> StepTask | None:
        step = take()
        if step is not None:
            taken.append(time.monotonic())
        return step

    monkeypatch.setattr(rig.responses, "take", recorded_take)

    async def client(name: str) -> list[tuple[float, Event]]:
        async with rig.client() as c:
            await c.write_event(Synthesize(text=SENTENCES).event())
            first = await collect(c, "audio-chunk")
            arrived[name] = first[-1][0]
            return first + await collect(c, "audio-stop")

    async def both() -> list[list[tuple[float, Event]]]:
        return list(await asyncio.gather(client("a"), client("b")))

    async def scenario() -> tuple[list[list[tuple[float, Event]]], Job, float]:
        responses = asyncio.ensure_future(both())
        while len(arrived) < 2:  # both clients are being served: both workers are busy
            await asyncio.sleep(0.01)
        job = rig.say_locally(
            "Fire in the kitchen.", local_voice, id="fire", priority=Priority.CRITICAL
        )
        queued = time.monotonic()  # from here on every worker sees it first
        return await responses, job, queued

    try:
        results, job, queued = run(scenario(), timeout=120)
        rig.reporter.wait("finished", "fire")
    finally:
        rig.close()
    assert all(types(r)[-1] == "audio-stop" for r in results)  # Wyoming went on afterwards
    assert job.chunks is not None and job.first_written_at is not None
    local_first_audio = job.chunks[0].stats.first_audio_at
    assert local_first_audio is not None
    wyoming_steps = rig.voice.intervals
    started_meanwhile = [t for t in taken if queued < t < local_first_audio]
    assert started_meanwhile == []  # no Wyoming chunk began before the local first audio
    # So the Wyoming syntheses in that window are the ones taken before it (one a worker).
    running = [end for start, end in wyoming_steps if end > queued and start < local_first_audio]
    assert len(running) <= 2
    # The wait: the Wyoming chunks already running (at most one per worker), then its own.
    waited_for_wyoming = max(running, default=queued) - queued
    own = job.chunks[0].stats.synth_seconds
    delay = job.first_written_at - queued
    assert delay <= waited_for_wyoming + own + 0.5, (delay, waited_for_wyoming, own)
    assert waited_for_wyoming <= 0.4 + 0.3  # one chunk's synthesis (with a busy machine's slack)


# --- the daemon's part ----------------------------------------------------------------


def test_the_daemon_runs_it_after_the_pipeline_only_when_configured(tmp_path: Path) -> None:
    from edge_tts.config import settings_from_mapping
    from edge_tts.daemon.app import Daemon

    def daemon(uri: str | None) -> Daemon:
        return Daemon(
            settings_from_mapping(
                {
                    "device_id": "testpi",
                    "state_dir": str(tmp_path / "state"),
                    "audio": {"sink": "wav-dir", "wav_dir": str(tmp_path / "wav")},
                    "synthesis": {"preload": False},
                    "wyoming": {"uri": uri},
                }
            )
        )

    served = daemon("tcp://127.0.0.1:0")
    names = [part.name for part in served.parts.parts]
    assert names.index("wyoming") == names.index("pipeline") + 1  # so it stops before it
    assert served.wyoming is not None and "wyoming" in served.status.checks()
    served.wyoming.problem = "cannot listen on tcp://0.0.0.0:10200: Address already in use"
    assert "wyoming cannot listen on tcp://0.0.0.0:10200" in "; ".join(served.status.problems())
    plain = daemon(None)
    assert plain.wyoming is None and "wyoming" not in [p.name for p in plain.parts.parts]


@pytest.mark.parametrize(
    "uri", ["10200", "http://pi:10200", "tcp://pi", "tcp://:10200", "tcp://pi:99999", "unix://"]
)
def test_a_uri_it_cannot_serve_is_refused_naming_the_key(uri: str) -> None:
    from edge_tts.config import ConfigError, settings_from_mapping

    with pytest.raises(ConfigError) as refused:
        settings_from_mapping({"device_id": "testpi", "wyoming": {"uri": uri}})
    assert refused.value.key == "wyoming.uri"


def test_it_is_off_unless_configured() -> None:
    from edge_tts.config import default_settings

    settings = default_settings()
    assert settings.wyoming == WyomingSettings(uri=None, max_clients=4, idle_timeout=60.0)
    assert settings.audio.lead_in_ms == 250
