"""SSML through the daemon's doors, end to end: a real Mosquitto, the real voice, the
daemon as a subprocess writing each request's audio to a WAV file."""

from __future__ import annotations

import asyncio
import io
import json
import re
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soxr
from wyoming.audio import AudioChunk, AudioStart
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeTextFormat,
)

from .support.broker import Broker, Recorder, free_port
from .support.daemon_proc import REPO, DaemonProcess, daemon_config
from .support.http_client import WAIT_S, Http

pytestmark = pytest.mark.daemon

SAY = "edge-tts/testpi/say"
EVENTS = "edge-tts/testpi/events"
RATE = 22050
LEAD_IN_S = 0.25  # audio.lead_in_ms: silence a WAV file starts with


@pytest.fixture()
def daemon(workdir: Path, broker: Broker) -> Iterator[DaemonProcess]:
    out = workdir / "wavs"
    config = daemon_config(workdir, broker.port, audio={"sink": "wav-dir", "wav_dir": str(out)})
    process = DaemonProcess(workdir, config, env={"HOME": str(workdir)})
    try:
        process.start()
        process.wait_ready()
        yield process
    finally:
        log = process.log()
        process.close()
        print(log[-6000:])  # shown when the test fails


def wav(workdir: Path, request_id: str) -> np.ndarray:
    with wave.open(str(workdir / "wavs" / f"{request_id}.wav"), "rb") as file:
        assert file.getframerate() == RATE
        return np.frombuffer(file.readframes(file.getnframes()), dtype="<i2")


def say(recorder: Recorder, payload: str | dict[str, Any]) -> None:
    recorder.publish(SAY, payload if isinstance(payload, str) else json.dumps(payload))


def test_ssml_over_mqtt_plays_its_breaks_and_shares_the_plain_texts_cache_and_key(
    daemon: DaemonProcess, recorder: Recorder, workdir: Path
) -> None:
    text = (
        "<speak><break time='1s'/>Front door <say-as interpret-as='characters'>B</say-as>.</speak>"
    )
    say(recorder, {"text": text, "text_format": "ssml", "id": "s1"})
    done = recorder.wait_event(EVENTS, "finished", "s1")
    pcm = wav(workdir, "s1")
    start = round((LEAD_IN_S + 1.0) * RATE)
    assert not pcm[:start].any() and np.abs(pcm[start:]).max() > 1000
    assert done["audio_ms"] >= 1000

    say(recorder, {"text": "The garage door is open.", "id": "p1"})
    assert recorder.wait_event(EVENTS, "finished", "p1")["cached_chunks"] == 0
    say(recorder, "<speak>The garage <!-- a comment --> door is open.</speak>")  # no id

    def finished() -> list[dict[str, Any]]:
        return [e for e in recorder.events(EVENTS) if e["event"] == "finished"]

    recorder.wait_for(lambda: len(finished()) == 3, what="the SSML request's finished event")
    marked = finished()[-1]
    assert marked["cached_chunks"] == marked["chunks"] == 1  # the plain text's audio

    say(recorder, {"text": "<speak>The garage door is open.</speak>", "id": "p1"})
    duplicate = recorder.wait_event(EVENTS, "duplicate", "p1")
    assert duplicate["reason"] == "already played"


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ("<speak>Hi <break time='soon'/></speak>", "SSML line 1, column 11: break time 'soon'"),
        (
            {"id": "bad", "text": "<speak>\n<p>Hi</s></speak>", "text_format": "ssml"},
            "SSML is not well-formed XML: mismatched tag at line 2, column 8",
        ),
    ],
)
def test_bad_ssml_over_mqtt_is_rejected_once_with_where(
    daemon: DaemonProcess, recorder: Recorder, payload: str | dict[str, Any], reason: str
) -> None:
    say(recorder, payload)
    rejected = recorder.wait_event(EVENTS, "rejected", None)
    assert rejected["reason"].startswith(reason)
    say(recorder, {"text": "Still here.", "id": "after"})
    recorder.wait_event(EVENTS, "finished", "after")
    kinds = [e["event"] for e in recorder.events(EVENTS) if e.get("id") != "after"]
    assert kinds == ["rejected"]


def readme_example(pattern: str) -> str:
    match = re.search(pattern, (REPO / "README.md").read_text("utf-8"), re.DOTALL)
    assert match is not None, f"README has no example matching {pattern}"
    return match[1]


def test_the_readmes_ssml_example_plays(
    daemon: DaemonProcess, recorder: Recorder, workdir: Path
) -> None:
    payload = readme_example(r"mosquitto_pub -q 1 -t edge-tts/kitchen-pi/say -m '(<speak.*?)'")
    say(recorder, payload)
    recorder.wait_for(
        lambda: any(e["event"] == "finished" for e in recorder.events(EVENTS)), what="finished"
    )
    assert [e["event"] for e in recorder.events(EVENTS)] == ["queued", "started", "finished"]


# --- <audio src>: a chime from text.sounds_dir, on every door ------------------------------

CHIME_S, CHIME_HZ = 0.3, 880.0
CHIMED = (
    '<speak><audio src="chime.wav">Ding.</audio><audio src="https://example.com/x.mp3"/>'
    "Front door open.</speak>"
)


def write_chime(path: Path, rate: int = 44_100) -> None:
    t = np.arange(round(CHIME_S * rate)) / rate
    tone = np.rint(0.5 * 32767 * np.sin(2 * np.pi * CHIME_HZ * t)).astype("<i2")
    with wave.open(str(path), "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(rate)
        file.writeframes(tone.tobytes())


def starts_with_the_chime(pcm: np.ndarray, rate: int) -> None:
    """The chime (880 Hz, its length at `rate`), then the voice's speech."""
    samples = pcm.astype(np.float64)
    chime = round(CHIME_S * rate)
    spectrum = np.abs(np.fft.rfft(samples[:chime]))
    peak = np.fft.rfftfreq(chime, 1 / rate)[int(np.argmax(spectrum))]
    assert abs(peak - CHIME_HZ) < 10 and np.abs(samples[:chime]).max() > 0.4 * 32767
    assert np.abs(samples[chime:]).max() > 1000  # speech after it
    onset = np.flatnonzero(np.abs(samples[:chime]) > 3000)
    assert onset.size and onset[0] < 0.01 * rate and onset[-1] > chime - 0.01 * rate


@pytest.fixture()
def chimed(workdir: Path, broker: Broker) -> Iterator[tuple[DaemonProcess, int, int]]:
    sounds = workdir / "sounds"
    sounds.mkdir()
    write_chime(sounds / "chime.wav")
    http_port, wyoming_port = free_port(), free_port()
    config = daemon_config(
        workdir,
        broker.port,
        audio={"sink": "wav-dir", "wav_dir": str(workdir / "wavs")},
        text={"sounds_dir": str(sounds)},
        http={"uri": f"tcp://127.0.0.1:{http_port}"},
        wyoming={"uri": f"tcp://127.0.0.1:{wyoming_port}"},
    )
    process = DaemonProcess(workdir, config, env={"HOME": str(workdir)})
    try:
        process.start()
        process.wait_ready()
        yield process, http_port, wyoming_port
    finally:
        log = process.log()
        process.close()
        print(log[-6000:])  # shown when the test fails


def test_a_chime_from_the_sounds_directory_opens_the_announcement_on_every_door(
    chimed: tuple[DaemonProcess, int, int], recorder: Recorder, workdir: Path
) -> None:
    daemon, http_port, wyoming_port = chimed
    say(recorder, {"text": CHIMED, "id": "c1"})  # played here: the WAV file
    recorder.wait_event(EVENTS, "finished", "c1")
    starts_with_the_chime(wav(workdir, "c1")[round(LEAD_IN_S * RATE) :], RATE)

    http = Http(daemon, http_port)  # pcm at 24 kHz: the chime resampled to it
    body = {"input": "\ufeff" + CHIMED, "voice": "default", "response_format": "pcm"}  # a BOM
    status, _, pcm = http.request("POST", "/v1/audio/speech", body)
    assert status == 200
    starts_with_the_chime(np.frombuffer(pcm, "<i2"), 24_000)

    async def wyoming() -> np.ndarray:
        pieces: list[bytes] = []
        async with AsyncTcpClient("127.0.0.1", wyoming_port) as client:
            await client.write_event(Synthesize(text=CHIMED).event())
            while (got := await client.read_event()) is not None and got.type != "audio-stop":
                assert got.type != "error", got.data
                if AudioChunk.is_type(got.type):
                    pieces.append(AudioChunk.from_event(got).audio)
        return np.frombuffer(b"".join(pieces), "<i2")

    answer = asyncio.run(asyncio.wait_for(wyoming(), WAIT_S))
    starts_with_the_chime(answer[round(LEAD_IN_S * RATE) :], RATE)  # its lead-in, as a WAV's
    log = daemon.log()
    assert "'https://example.com/x.mp3' is a URL: nothing is ever fetched" in log


# --- a document of only a sound: the chime alone, no speech, on every door ----------------

SOUND_ONLY = '<speak><audio src="chime.wav"/></speak>'


def is_only_the_chime(pcm: np.ndarray, rate: int, workdir: Path) -> None:
    """The samples of the chime the fixture wrote, resampled to `rate` here (soxr, as the
    daemon does, within its error), and nothing else: no speech before or after it."""
    with wave.open(str(workdir / "sounds" / "chime.wav"), "rb") as file:
        written = np.frombuffer(file.readframes(file.getnframes()), "<i2") / 32768
        chime = soxr.resample(written, file.getframerate(), rate)
    got = pcm.astype(np.float64) / 32768
    assert abs(got.size - chime.size) <= rate // 1000, (got.size, chime.size)  # ±1 ms
    both = min(got.size, chime.size)
    assert np.abs(got[:both] - chime[:both]).max() < 0.01


def wav_samples(data: bytes, rate: int) -> np.ndarray:
    with wave.open(io.BytesIO(data), "rb") as file:  # streamed: sizes 0xFFFFFFFF
        assert (file.getframerate(), file.getnchannels(), file.getsampwidth()) == (rate, 1, 2)
        return np.frombuffer(file.readframes(file.getnframes()), "<i2")


def wyoming_answer(port: int, events: list[Event], last: str) -> list[Event]:
    """The events of one answer of the real `wyoming` client, up to the event `last`, or
    to the end of the connection (the daemon closes it after an error)."""

    async def answer() -> list[Event]:
        got: list[Event] = []
        async with AsyncTcpClient("127.0.0.1", port) as client:
            for event in events:
                await client.write_event(event)
            while (event := await client.read_event()) is not None:
                got.append(event)
                if event.type == last:
                    break
        return got

    return asyncio.run(asyncio.wait_for(answer(), WAIT_S))


def wyoming_chime(events: list[Event], workdir: Path, *, stream: bool) -> None:
    """audio-start at the voice's rate, chunks of its lead-in and the chime, audio-stop
    (then synthesize-stopped after a stream)."""
    kinds = [event.type for event in events]
    end = ["audio-stop", "synthesize-stopped"] if stream else ["audio-stop"]
    assert kinds[0] == "audio-start" and kinds[-len(end) :] == end, kinds
    assert set(kinds[1 : -len(end)]) == {"audio-chunk"}, kinds
    assert AudioStart.from_event(events[0]).rate == RATE
    chunks = [AudioChunk.from_event(event) for event in events if AudioChunk.is_type(event.type)]
    assert {(chunk.rate, chunk.width, chunk.channels) for chunk in chunks} == {(RATE, 2, 1)}
    pcm = np.frombuffer(b"".join(chunk.audio for chunk in chunks), "<i2")
    lead_in = round(LEAD_IN_S * RATE)
    assert not pcm[:lead_in].any()
    is_only_the_chime(pcm[lead_in:], RATE, workdir)


def test_a_document_of_only_a_chime_plays_it_and_says_nothing_on_every_door(
    chimed: tuple[DaemonProcess, int, int], workdir: Path
) -> None:
    daemon, http_port, wyoming_port = chimed
    http = Http(daemon, http_port)
    pcm_body = {"input": SOUND_ONLY, "voice": "alloy", "response_format": "pcm"}
    status, headers, pcm = http.request("POST", "/v1/audio/speech", pcm_body)
    assert status == 200 and headers["X-Sample-Rate"] == "24000"
    is_only_the_chime(np.frombuffer(pcm, "<i2"), 24_000, workdir)  # resampled twice
    for path, body in (
        ("/v1/audio/speech", {"input": SOUND_ONLY}),  # wav, at the voice's rate
        ("/synthesize", {"text": SOUND_ONLY}),  # Piper's
    ):
        status, headers, data = http.request("POST", path, body)
        assert status == 200 and headers["Content-Type"] == "audio/wav", (path, data[:200])
        is_only_the_chime(wav_samples(data, RATE), RATE, workdir)
    status, made = http.json("POST", "/invoke", {"text": SOUND_ONLY})
    assert status == 200 and made["audio_ms"] == round(CHIME_S * 1000), made
    status, _, data = http.request("GET", f"/download?audio_id={made['audio_id']}")
    assert status == 200
    is_only_the_chime(wav_samples(data, RATE), RATE, workdir)

    whole = [Synthesize(text=SOUND_ONLY).event()]  # SSML as it starts with <speak
    stream = [
        SynthesizeStart(text_format=SynthesizeTextFormat.SSML).event(),
        SynthesizeChunk(text=SOUND_ONLY).event(),
        SynthesizeStop().event(),
    ]
    for events, last in ((whole, "audio-stop"), (stream, "synthesize-stopped")):
        answer = wyoming_answer(wyoming_port, events, last)
        wyoming_chime(answer, workdir, stream=last == "synthesize-stopped")


NOTHING = '<speak><audio src="missing.wav"/></speak>'  # not in the directory, no fallback
MISSING_SAID = "'missing.wav' is not in the sounds directory"


def test_a_document_with_nothing_to_play_is_refused_on_every_door_which_then_serves_on(
    chimed: tuple[DaemonProcess, int, int], workdir: Path
) -> None:
    daemon, http_port, wyoming_port = chimed
    http = Http(daemon, http_port)
    for path, field in (
        ("/v1/audio/speech", "input"),
        ("/synthesize", "text"),
        ("/invoke", "text"),
    ):
        status, answer = http.json("POST", path, {field: NOTHING})
        error = answer["error"]
        assert status == 400 and error["code"] == "bad_text", (path, answer)
        assert error["message"].startswith("text has nothing speakable"), (path, answer)
        assert error["param"] == field, (path, answer)  # the field at fault, as every 400's
        assert MISSING_SAID in error["message"], answer  # why, without the device's paths
        assert "/" not in error["message"].split("(", 1)[1], answer  # no directory named
    synthesize = [Synthesize(text=NOTHING).event()]
    refused = wyoming_answer(wyoming_port, synthesize, "audio-stop")
    assert [event.type for event in refused] == ["error"], refused  # then the end: closed
    error = Error.from_event(refused[0])
    assert error.code == "bad-text" and error.text.startswith("text has nothing speakable")
    assert MISSING_SAID in error.text, error.text

    status, _, data = http.request("POST", "/synthesize", {"text": SOUND_ONLY})
    assert status == 200
    is_only_the_chime(wav_samples(data, RATE), RATE, workdir)
    whole = [Synthesize(text=SOUND_ONLY).event()]
    served = wyoming_answer(wyoming_port, whole, "audio-stop")
    wyoming_chime(served, workdir, stream=False)
    assert "Traceback" not in daemon.log()
