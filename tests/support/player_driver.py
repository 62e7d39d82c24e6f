"""Runs one AlsaOutput scenario in its own process and prints JSON lines for the test.

Its own process because ALSA reads HOME (the virtual card's asoundrc) when PortAudio
initializes, and PortAudio initializes when sounddevice is first imported.

    python tests/support/player_driver.py SCENARIO '{"param": value, ...}' </dev/null

After its "done" event the driver keeps the stream open until its stdin closes: the test
closes it once the audio has come out of the sound card, rather than guessing how long the
sound server takes. Scenario `serve` takes the output's calls from a test instead
(tests/support/remote_output.py). Every wait in here is for a condition, with a deadline;
the sleeps that remain are what a scenario is about (idle time, a late writer, a gap).
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

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from edge_tts.audio.alsa import AlsaOutput
from edge_tts.audio.output import AudioUnavailableError, Utterance
from edge_tts.config import AudioSettings
from tests.support.remote_output import serve

RATE = 22050
NEVER = threading.Event()
DEADLINE_S = 30.0  # for conditions that normally hold within milliseconds


class ProbedOutput(AlsaOutput):
    """AlsaOutput with what the scenarios observe: how often a stream open was tried, and
    a re-entrant lock, so a scenario can read the ring position and interrupt atomically
    (the callback cannot hand out a block in between)."""

    def __init__(self, settings: AudioSettings, sample_rate: int) -> None:
        super().__init__(settings, sample_rate)
        lock = threading.RLock()
        self._lock = self._device._lock = lock  # type: ignore[assignment]
        self.opens_tried = 0
        new_stream = self._device._new_stream

        def counted(reinit: bool) -> Any:
            self.opens_tried += 1
            return new_stream(reinit)

        self._device._new_stream = counted  # type: ignore[method-assign]


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
            time.sleep(pause)  # the behaviour under test: a writer that falls behind
        oks.append(out.write(utterance, piece, stop))
    written = time.monotonic()
    ended = out.end(utterance, stop, timeout=DEADLINE_S)
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


def started(params: dict[str, Any]) -> ProbedOutput:
    """An output with the AudioSettings fields in `params`; blocks of 1024 frames and 100 ms
    of PortAudio latency unless they say otherwise (what these tests were measured with)."""
    fields = {f: params[f] for f in AudioSettings.__dataclass_fields__ if f in params}
    settings = AudioSettings(**{"block_frames": 1024, "latency_ms": 100, **fields})
    out = ProbedOutput(settings, RATE)
    out.start()
    return out


def scenario_tone(out: ProbedOutput, p: dict[str, Any]) -> None:
    # The behaviour under test: the stream plays silence meanwhile, and that is not an
    # underrun.
    time.sleep(p.get("idle", 0.0))
    pcm = tone(p.get("freq", 440.0), p.get("seconds", 1.0), p.get("phase", 0.0))
    emit("played", **play(out, "tone", pcm, p.get("writes", 5), p.get("pause", 0.0)))


def scenario_back_to_back(out: ProbedOutput, p: dict[str, Any]) -> None:
    stream = out._device._stream
    first = play(out, "first", tone(440.0, 0.5))
    second = play(out, "second", tone(660.0, 0.5))
    emit("played", first=first, second=second, same_stream=out._device._stream is stream)


def scenario_interrupt(out: ProbedOutput, p: dict[str, Any]) -> None:
    utterance = Utterance("long", RATE)
    out.begin(utterance)
    result: dict[str, Any] = {}

    def writer() -> None:
        result["write_ok"] = out.write(utterance, tone(440.0, 3.0), NEVER)
        result["write_returned"] = time.monotonic()

    thread = threading.Thread(target=writer, name="writer", daemon=True)
    thread.start()
    # Interrupt once `after` seconds of the tone went to ALSA (the utterance started at
    # position 0), however long that took on a busy machine.
    frames = round(p.get("after", 0.5) * RATE)
    assert wait_for(lambda: out._ring.frames_read >= frames, DEADLINE_S)
    with out._lock:  # no callback between reading the position and the cut
        handed = out._ring.frames_read
        interrupted_at = time.monotonic()
        out.interrupt(p.get("fade_ms"))
    thread.join(timeout=DEADLINE_S)
    ended = out.end(utterance, NEVER, timeout=DEADLINE_S)
    emit(
        "interrupted",
        handed=handed,
        interrupted_at=interrupted_at,
        end_ok=ended,
        flag=utterance.interrupted,
        **result,
    )
    time.sleep(0.5)  # the scenario: a gap, so the test tells the fade-out from what follows
    emit("played", **play(out, "next", tone(660.0, 0.3)))


def scenario_missing(out: ProbedOutput, p: dict[str, Any]) -> None:
    # The first attempt is start()'s; then the supervisor retries, backing off.
    retries = p.get("retries", 0)
    assert wait_for(lambda: out.opens_tried >= 1 + retries, DEADLINE_S + 2 * retries)
    error = None
    try:
        out.begin(Utterance("rejected", RATE))
    except AudioUnavailableError as err:
        error = str(err)
    emit("state", begin_error=error, opens_tried=out.opens_tried)


def scenario_recover(out: ProbedOutput, p: dict[str, Any]) -> None:
    emit("waiting", status=out.status)
    t0 = time.monotonic()
    if p.get("await_retry"):  # the supervisor has tried (and failed) again since start()
        tried = out.opens_tried
        assert wait_for(lambda: out.opens_tried > tried, DEADLINE_S)
        emit("retried", status=out.status, opens_tried=out.opens_tried)
    ok = wait_for(lambda: out.status == "ok", p.get("timeout", 60.0))
    emit("recovered", ok=ok, after=time.monotonic() - t0)
    if ok:
        emit("played", **play(out, "after-recovery", tone(440.0, 0.5)))


def scenario_callback_error(out: ProbedOutput, p: dict[str, Any]) -> None:
    def inject() -> None:  # mid-tone: once a quarter of it went out
        if wait_for(lambda: out._ring.frames_read >= RATE // 4, DEADLINE_S):
            out._device._callback.inject_error(RuntimeError("boom from the test"))

    threading.Thread(target=inject, name="injector", daemon=True).start()
    emit("played", **play(out, "tone", tone(440.0, 1.0)))


def scenario_dead_stream(out: ProbedOutput, p: dict[str, Any]) -> None:
    out._device._stream.abort()  # what a crashed callback or an ALSA error leaves behind
    emit("aborted", status=out.status)
    ok = wait_for(lambda: out.stream_opens == 2 and out.status == "ok", DEADLINE_S)
    emit("reopened", ok=ok)
    emit("played", **play(out, "after-reopen", tone(440.0, 0.5)))


def scenario_lost_device(out: ProbedOutput, p: dict[str, Any]) -> None:
    utterance = Utterance("cut-off", RATE)
    out.begin(utterance)
    result: dict[str, Any] = {}

    def writer() -> None:
        result["write_ok"] = out.write(utterance, tone(440.0, 4.0), NEVER)
        result["end_ok"] = out.end(utterance, NEVER, timeout=DEADLINE_S)

    thread = threading.Thread(target=writer, name="writer", daemon=True)
    thread.start()
    assert wait_for(lambda: utterance.first_sample_at is not None, DEADLINE_S)
    emit("playing")
    degraded = wait_for(lambda: out.status != "ok", DEADLINE_S)
    thread.join(timeout=DEADLINE_S)
    emit("degraded", ok=degraded, status=out.status, writer_done=not thread.is_alive(), **result)
    scenario_recover(out, p)


def scenario_serve(out: ProbedOutput, p: dict[str, Any]) -> None:
    """Calls from a RemoteOutput (tests/support/remote_output.py) until stdin closes."""
    serve(out, sys.stdin, sys.stdout)


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
        # The last frames are still in the device buffer: keep the stream open until the
        # test has heard them (it closes our stdin; EOF at once if it has none).
        sys.stdin.read()
    finally:
        out.close()


if __name__ == "__main__":
    main()
