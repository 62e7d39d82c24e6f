"""The Wyoming server of the real daemon (real voice, wav-dir sink, real sockets) against
clients that stall: mid-event, or never reading what it writes; and its clients at
SIGTERM. Every wait is on the connection (an event, the end), bounded."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest
from wyoming.audio import AudioChunk
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event, async_read_event
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop

from .support.broker import Broker, Recorder, free_port
from .support.daemon_proc import DaemonProcess, daemon_config
from .support.waiting import wait_until

pytestmark = pytest.mark.daemon

IDLE_TIMEOUT_S = 2
MAX_CLIENTS = 2
WAIT_S = 60.0  # for an answer of the daemon on a busy machine (the timeouts are 2 s)
TELEMETRY = "edge-tts/testpi/telemetry"
PHRASE = "The garage door is open."  # one chunk
LONG = "The washing machine has finished its cycle, and the dryer will start soon. " * 25


class Wyoming:
    def __init__(self, daemon: DaemonProcess, port: int) -> None:
        self.daemon, self.port = daemon, port

    async def open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.port)

    def connections(self) -> int:
        """The daemon's TCP connections from Wyoming clients (not its listening socket)."""
        assert self.daemon.proc is not None
        own = psutil.Process(self.daemon.proc.pid).net_connections("tcp")
        return sum(1 for c in own if c.laddr and c.laddr.port == self.port and c.raddr)


def start(root: Path, broker: Broker, **wyoming: Any) -> Wyoming:
    port = free_port()
    config = daemon_config(
        root,
        broker.port,
        audio={"sink": "wav-dir", "wav_dir": str(root / "wav")},
        wyoming={"uri": f"tcp://127.0.0.1:{port}", **wyoming},
    )
    daemon = DaemonProcess(root, config)
    daemon.start()
    daemon.wait_ready()
    return Wyoming(daemon, port)


@pytest.fixture()
def wy(workdir: Path, broker: Broker) -> Iterator[Wyoming]:
    made = start(workdir, broker, max_clients=MAX_CLIENTS, idle_timeout=IDLE_TIMEOUT_S)
    try:
        yield made
    finally:
        print(made.daemon.log()[-6000:])  # shown when the test fails
        made.daemon.close()


def run(coro: Any) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, WAIT_S)

    return asyncio.run(bounded())


async def events_until_the_end(reader: asyncio.StreamReader) -> list[Event]:
    got: list[Event] = []
    while (event := await async_read_event(reader)) is not None:
        got.append(event)
    return got


def header(**fields: Any) -> bytes:
    return json.dumps(fields).encode() + b"\n"


async def describe(wy: Wyoming) -> Event | None:
    reader, writer = await wy.open()
    writer.write(header(type=Describe().event().type))
    await writer.drain()
    answer = await async_read_event(reader)
    writer.close()
    return answer


def test_clients_stalled_mid_event_get_a_timeout_and_free_their_slots(wy: Wyoming) -> None:
    stalls = [
        header(type="synthesize", data_length=100) + b'{"text": "sta',
        header(type="audio-chunk", payload_length=1000) + bytes(10),
    ]

    async def stall(data: bytes) -> list[Event]:
        reader, writer = await wy.open()
        writer.write(data)
        await writer.drain()  # and then nothing more: the event stays incomplete
        try:
            return await events_until_the_end(reader)
        finally:
            writer.close()

    async def both() -> list[list[Event]]:
        return list(await asyncio.gather(*(stall(data) for data in stalls)))

    for events in run(both()):
        assert [Error.from_event(e).code for e in events] == ["timeout"], events
        assert "did not arrive" in Error.from_event(events[0]).text
    answer = run(describe(wy))  # the slots are free again
    assert answer is not None and Info.is_type(answer.type)


def test_a_client_that_reads_nothing_is_dropped_with_its_socket(wy: Wyoming) -> None:
    """Its audio backs up until a write times out; then its connection is gone from the
    daemon (a close would wait for the client to read, holding the socket for good)."""

    async def never_read() -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fills at once
        sock.connect(("127.0.0.1", wy.port))
        _, writer = await asyncio.open_connection(sock=sock)
        writer.write(header(type="synthesize", data={"text": LONG}))
        await writer.drain()
        try:
            # Not reading: the daemon's writes back up. Wait until it lets go.
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: wait_until(lambda: wy.connections() == 0, WAIT_S, "the drop")
            )
        finally:
            writer.close()

    run(never_read())
    answer = run(describe(wy))
    assert answer is not None and Info.is_type(answer.type)


def test_clients_at_sigterm_are_told_the_server_stops(workdir: Path, broker: Broker) -> None:
    wy = start(workdir, broker)
    try:

        async def at_sigterm() -> list[Event]:
            reader, writer = await wy.open()
            writer.write(header(type=Describe().event().type))
            await writer.drain()
            assert await async_read_event(reader) is not None  # connected and served
            assert wy.daemon.proc is not None
            wy.daemon.proc.terminate()
            try:
                return await events_until_the_end(reader)
            finally:
                writer.close()

        events = run(at_sigterm())
        assert [Error.from_event(e).code for e in events] == ["stopping"], events
        assert wy.daemon.wait_exit() == 0
    finally:
        print(wy.daemon.log()[-6000:])
        wy.daemon.close()


# --- one engine: the phrase cache and the telemetry serve Wyoming too ------------------


async def answer(port: int, events: list[Event], last: str) -> np.ndarray:
    """The audio of one answer of the real `wyoming` client, up to the event `last`."""
    pieces: list[bytes] = []
    async with AsyncTcpClient("127.0.0.1", port) as client:
        for event in events:
            await client.write_event(event)
        while (got := await client.read_event()) is not None and got.type != last:
            assert got.type != "error", got.data
            if AudioChunk.is_type(got.type):
                pieces.append(AudioChunk.from_event(got).audio)
    assert got is not None, f"the connection ended before {last}"
    return np.frombuffer(b"".join(pieces), "<i2")


def telemetry_where(rec: Recorder, check: Any, what: str) -> dict[str, Any]:
    """The latest telemetry, once it satisfies `check` (it is published every second)."""

    def latest() -> dict[str, Any] | None:
        found = [json.loads(p) for _, t, p, _ in rec.messages if t == TELEMETRY]
        return found[-1] if found and check(found[-1]) else None

    return wait_until(latest, WAIT_S, what)


def counters(doc: dict[str, Any]) -> tuple[int, int]:
    return doc["counters"]["cache_misses"], doc["counters"]["cache_hits"]


def answers(doc: dict[str, Any], door: str) -> int:
    """How many answers of `door` the telemetry's time-to-first-audio window holds."""
    return int(doc["latency_by_door"][door]["time_to_first_audio_ms"]["count"])


def test_a_text_asked_for_twice_is_synthesized_once(workdir: Path, broker: Broker) -> None:
    rec = Recorder(broker.port, [TELEMETRY])
    wy = start(workdir, broker)
    try:
        first = run(answer(wy.port, [Synthesize(text=PHRASE).event()], "audio-stop"))
        telemetry_where(rec, lambda d: counters(d) == (1, 0), "a miss, no hit")
        second = run(answer(wy.port, [Synthesize(text=PHRASE).event()], "audio-stop"))
        telemetry_where(rec, lambda d: counters(d) == (1, 1), "then a hit")
        stream = [
            SynthesizeStart().event(),
            SynthesizeChunk(text=PHRASE).event(),
            SynthesizeStop().event(),
        ]
        streamed = run(answer(wy.port, stream, "synthesize-stopped"))
        doc = telemetry_where(rec, lambda d: counters(d) == (1, 2), "a stream's hit")
        doc = telemetry_where(rec, lambda d: answers(d, "wyoming") >= 3, "3 Wyoming answers")
    finally:
        print(wy.daemon.log()[-6000:])  # shown when the test fails
        wy.daemon.close()
        rec.close()
    assert first.size and np.array_equal(second, first) and np.array_equal(streamed, first)
    assert answers(doc, "wyoming") == 3 and answers(doc, "mqtt") == 0
    assert doc["latency_by_door"]["wyoming"]["real_time_factor"]["count"] == 3
    # `latency` stays the figures of requests played here (Home Assistant's sensors).
    assert doc["latency"]["time_to_first_audio_ms"]["count"] == 0
