"""Runs one AlsaOutput scenario in its own process and prints JSON lines for the test.

Its own process because ALSA reads HOME (the virtual card's asoundrc) when PortAudio
initializes, and PortAudio initializes when sounddevice is first imported.

    python tests/player_driver.py SCENARIO '{"param": value, ...}'
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from edge_tts.player import AlsaOutput, AudioUnavailableError, Utterance

RATE = 22050
NEVER = threading.Event()


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def tone(freq: float, seconds: float, phase: float = 0.0, amp: int = 12000) -> np.ndarray:
    t = np.arange(round(seconds * RATE)) / RATE
    return (amp * np.sin(2 * np.pi * freq * t + phase)).astype(np.int16)


def wait_for(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def play(
    out: AlsaOutput,
    request_id: str,
    pcm: np.ndarray,
    writes: int = 5,
    pause: float = 0.0,
    stop: threading.Event = NEVER,
) -> dict[str, Any]:
    """One utterance in `writes` pieces; `pause` seconds of nothing after the first half."""
    utterance = Utterance(request_id, RATE)
    begun = time.monotonic()
    out.begin(utterance)
    oks = []
    for i, piece in enumerate(np.array_split(pcm, writes)):
        if pause and i == writes // 2:
            time.sleep(pause)
        oks.append(out.write(utterance, piece, stop))
    written = time.monotonic()
    ended = out.end(utterance, stop, timeout=10)
    return {
        "begun": begun,
        "written": written,
        "writes_ok": oks,
        "end_ok": ended,
        "end_returned": time.monotonic(),
        "first_sample_at": utterance.first_sample_at,
        "finished_at": utterance.finished_at,
        "interrupted": utterance.interrupted,
    }


def counters(out: AlsaOutput) -> dict[str, Any]:
    return {
        "status": out.status,
        "healthy": out.healthy,
        "underruns": out.underruns,
        "stream_opens": out.stream_opens,
        "callback_errors": out.callback_errors,
    }


def started(params: dict[str, Any]) -> AlsaOutput:
    out = AlsaOutput(
        RATE,
        device=params.get("device"),
        fade_ms=params.get("fade_ms", 15),
        block_frames=params.get("block_frames", 1024),
    )
    out.start()
    return out


def scenario_tone(out: AlsaOutput, p: dict[str, Any]) -> None:
    time.sleep(p.get("idle", 0.0))  # the stream plays silence meanwhile: not an underrun
    pcm = tone(p.get("freq", 440.0), p.get("seconds", 1.0), p.get("phase", 0.0))
    emit("played", **play(out, "tone", pcm, p.get("writes", 5), p.get("pause", 0.0)))


def scenario_back_to_back(out: AlsaOutput, p: dict[str, Any]) -> None:
    stream = out._stream
    first = play(out, "first", tone(440.0, 0.5))
    second = play(out, "second", tone(660.0, 0.5))
    emit("played", first=first, second=second, same_stream=out._stream is stream)


def scenario_interrupt(out: AlsaOutput, p: dict[str, Any]) -> None:
    utterance = Utterance("long", RATE)
    out.begin(utterance)
    result: dict[str, Any] = {}

    def writer() -> None:
        result["write_ok"] = out.write(utterance, tone(440.0, 3.0), NEVER)
        result["write_returned"] = time.monotonic()

    thread = threading.Thread(target=writer, name="writer", daemon=True)
    thread.start()
    assert wait_for(lambda: utterance.first_sample_at is not None, 5)
    time.sleep(p.get("after", 0.5))
    handed = out._ring.frames_read  # the utterance started at position 0
    interrupted_at = time.monotonic()
    out.interrupt(p.get("fade_ms"))
    thread.join(timeout=5)
    ended = out.end(utterance, NEVER, timeout=5)
    emit(
        "interrupted",
        handed=handed,
        interrupted_at=interrupted_at,
        end_ok=ended,
        flag=utterance.interrupted,
        **result,
    )
    time.sleep(0.5)  # a gap, so the test can tell the fade-out from what follows
    emit("played", **play(out, "next", tone(660.0, 0.3)))


def scenario_missing(out: AlsaOutput, p: dict[str, Any]) -> None:
    time.sleep(p.get("wait", 0.0))  # let the supervisor retry a few times
    error = None
    try:
        out.begin(Utterance("rejected", RATE))
    except AudioUnavailableError as err:
        error = str(err)
    emit("state", begin_error=error)


def scenario_recover(out: AlsaOutput, p: dict[str, Any]) -> None:
    emit("waiting", status=out.status)
    t0 = time.monotonic()
    ok = wait_for(lambda: out.status == "ok", p.get("timeout", 20.0))
    emit("recovered", ok=ok, after=time.monotonic() - t0)
    if ok:
        emit("played", **play(out, "after-recovery", tone(440.0, 0.5)))


def scenario_callback_error(out: AlsaOutput, p: dict[str, Any]) -> None:
    def inject() -> None:
        time.sleep(0.4)
        out._inject_callback_error(RuntimeError("boom from the test"))

    threading.Thread(target=inject, name="injector", daemon=True).start()
    emit("played", **play(out, "tone", tone(440.0, 1.0)))


def scenario_dead_stream(out: AlsaOutput, p: dict[str, Any]) -> None:
    out._stream.abort()  # what a crashed callback or an ALSA error leaves behind
    emit("aborted", status=out.status)
    ok = wait_for(lambda: out.stream_opens == 2 and out.status == "ok", 5)
    emit("reopened", ok=ok)
    emit("played", **play(out, "after-reopen", tone(440.0, 0.5)))


def scenario_lost_device(out: AlsaOutput, p: dict[str, Any]) -> None:
    utterance = Utterance("cut-off", RATE)
    out.begin(utterance)
    result: dict[str, Any] = {}

    def writer() -> None:
        result["write_ok"] = out.write(utterance, tone(440.0, 4.0), NEVER)
        result["end_ok"] = out.end(utterance, NEVER, timeout=10)

    thread = threading.Thread(target=writer, name="writer", daemon=True)
    thread.start()
    assert wait_for(lambda: utterance.first_sample_at is not None, 5)
    emit("playing")
    degraded = wait_for(lambda: out.status != "ok", 10)
    thread.join(timeout=10)
    emit("degraded", ok=degraded, status=out.status, writer_done=not thread.is_alive(), **result)
    scenario_recover(out, p)


SCENARIOS = {
    name[len("scenario_") :]: fn for name, fn in globals().items() if name.startswith("scenario_")
}


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(threadName)s %(levelname)s %(message)s")
    scenario = SCENARIOS[sys.argv[1]]
    params: dict[str, Any] = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    out = started(params)
    try:
        emit("started", **counters(out))
        scenario(out, params)
        emit("done", **counters(out))
        time.sleep(0.3)  # the last frames are still in the device buffer: let them play
    finally:
        out.close()


if __name__ == "__main__":
    main()
