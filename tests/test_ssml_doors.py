"""SSML through the daemon's doors, end to end: a real Mosquitto, the real voice, the
daemon as a subprocess writing each request's audio to a WAV file."""

from __future__ import annotations

import json
import re
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from .support.broker import Broker, Recorder
from .support.daemon_proc import REPO, DaemonProcess, daemon_config

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
