"""An AlsaOutput in a driver process, used through the AudioOutput protocol from a test.

ALSA reads HOME (the virtual card's asoundrc) when PortAudio initializes, which happens
once per process, so the real output runs in tests/support/player_driver.py (scenario
`serve`) and `RemoteOutput` forwards each call to it: one JSON line per call, each
executed on its own thread there, so a write() blocked on the device does not hold up an
interrupt(). A caller's stop event is forwarded when it is set while a call waits, and
the driver sends back every change of an utterance's fields (first_sample_at,
finished_at, interrupted), so the caller's Utterance objects move as the real ones do.
Monotonic clocks are system-wide: times from the driver compare with the test's.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import numpy as np

from edge_tts.audio.output import AudioOutput, AudioUnavailableError, Utterance

from .waiting import DEFAULT_TIMEOUT_S, stop_process

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("player_driver.py")
CALL_TIMEOUT_S = 120.0  # a call still unanswered after this long is a hang


def spawn_driver(
    scenario: str, params: dict[str, Any], env: dict[str, str], log: Path
) -> subprocess.Popen[str]:
    """player_driver.py running `scenario`: JSON lines on stdin/stdout, stderr into `log`."""
    with log.open("w") as stderr:
        return subprocess.Popen(
            [sys.executable, str(DRIVER), scenario, json.dumps(params)],
            env={**os.environ, **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            cwd=REPO,
        )


_FIELDS = ("first_sample_at", "finished_at", "interrupted")
_ERRORS: dict[str, type[Exception]] = {
    e.__name__: e for e in (AudioUnavailableError, ValueError, TypeError, RuntimeError)
}


# -- the driver's side ----------------------------------------------------------------


def serve(out: AudioOutput, commands: IO[str], replies: IO[str]) -> None:
    """Run the calls read from `commands` on `out` until EOF; answer on `replies`."""
    server = _Server(out, replies)
    watcher = threading.Thread(target=server.watch, name="utterance-watcher", daemon=True)
    watcher.start()
    for line in commands:
        server.dispatch(json.loads(line))
    server.done.set()
    watcher.join(timeout=DEFAULT_TIMEOUT_S)


class _Server:
    def __init__(self, out: AudioOutput, replies: IO[str]) -> None:
        self.out = out
        self.done = threading.Event()
        self._replies = replies
        self._lock = threading.Lock()  # one message at a time on `replies`
        self._utterances: dict[str, Utterance] = {}
        self._stops: dict[str, threading.Event] = {}
        self._sent: dict[str, list[Any]] = {}  # the fields last sent, by utterance

    def dispatch(self, command: dict[str, Any]) -> None:
        if command["call"] == "set_stop":
            self._stop(command["stop"]).set()
            return
        name = f"call-{command['call']}-{command['n']}"
        threading.Thread(target=self._run, args=(command,), name=name, daemon=True).start()

    def watch(self) -> None:
        """Send utterance changes the callback makes between calls (a mirror, not a wait)."""
        while not self.done.wait(0.02):
            self._send({"event": "utterances"})

    def _run(self, command: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"event": "reply", "n": command["n"]}
        try:
            reply["result"] = self._call(command)
        except Exception as err:
            reply["error"] = [type(err).__name__, str(err)]
        self._send(reply)

    def _call(self, c: dict[str, Any]) -> Any:
        out, call = self.out, c["call"]
        if call == "begin":
            utterance = Utterance(c["request_id"], c["sample_rate"])
            self._utterances[c["uid"]] = utterance
            return out.begin(utterance)
        if call == "write":
            pcm = np.frombuffer(base64.b64decode(c["pcm"]), dtype=c["dtype"]).reshape(c["shape"])
            return out.write(self._utterance(c), pcm, self._stop(c["stop"], c["stop_set"]))
        if call == "end":
            return out.end(self._utterance(c), self._stop(c["stop"], c["stop_set"]), c["timeout"])
        if call == "interrupt":
            return out.interrupt(c["fade_ms"])
        if call == "set_volume":
            return out.set_volume(c["volume"])
        if call in ("start", "close", "recover"):
            return getattr(out, call)()
        if call == "state":
            return {key: getattr(out, key) for key in ("healthy", "alive", "status", "underruns")}
        raise ValueError(f"unknown call {call!r}")

    def _utterance(self, c: dict[str, Any]) -> Utterance:
        # One the caller never began: a stand-in that the output has never seen either.
        return self._utterances.get(c["uid"]) or Utterance(c["request_id"], c["sample_rate"])

    def _stop(self, sid: str, is_set: bool = False) -> threading.Event:
        stop = self._stops.setdefault(sid, threading.Event())
        if is_set:
            stop.set()
        return stop

    def _send(self, message: dict[str, Any]) -> None:
        """Send `message` with the utterance fields changed since the last one (under one
        lock, so the caller never sees an older value after a newer one)."""
        with self._lock:
            changed = {}
            for uid, utterance in list(self._utterances.items()):
                fields = [getattr(utterance, name) for name in _FIELDS]
                if self._sent.get(uid) != fields:
                    self._sent[uid] = changed[uid] = fields
            if message["event"] == "utterances" and not changed:
                return
            self._replies.write(json.dumps({**message, "utterances": changed}) + "\n")
            self._replies.flush()


# -- the test's side ------------------------------------------------------------------


class RemoteOutput:
    """An AudioOutput whose calls run on a real AlsaOutput in a driver process.

    `settings` are AudioSettings fields for the driver; `env` points it at a sound card.
    shutdown() stops the driver (call it in a finalizer); close() is the protocol's.
    """

    def __init__(self, env: dict[str, str], settings: dict[str, Any], log: Path) -> None:
        self._log = log
        self._n = itertools.count()
        self._pending: dict[int, queue.SimpleQueue[dict[str, Any]]] = {}
        self._utterances: dict[str, Utterance] = {}
        self._stops: dict[str, threading.Event] = {}  # kept alive while their ids are in use
        self._started = threading.Event()
        self._write_lock = threading.Lock()
        self._proc = spawn_driver("serve", settings, env, log)
        self._reader = threading.Thread(target=self._read, name="remote-output", daemon=True)
        self._reader.start()
        if not self._started.wait(CALL_TIMEOUT_S):
            raise AssertionError(f"the player driver did not start: {self.stderr()}")

    # -- AudioOutput ------------------------------------------------------------------

    def start(self) -> None:
        self._call("start")

    def close(self) -> None:
        self._call("close")

    def recover(self) -> None:
        self._call("recover")

    @property
    def healthy(self) -> bool:
        return bool(self._call("state")["healthy"])

    @property
    def alive(self) -> bool:
        return bool(self._call("state")["alive"])

    @property
    def status(self) -> str:
        return str(self._call("state")["status"])

    @property
    def underruns(self) -> int:
        return int(self._call("state")["underruns"])

    def begin(self, utterance: Utterance) -> None:
        uid = str(id(utterance))
        self._utterances[uid] = utterance
        self._call(
            "begin", uid=uid, request_id=utterance.request_id, sample_rate=utterance.sample_rate
        )

    def write(self, utterance: Utterance, pcm: np.ndarray, stop: threading.Event) -> bool:
        data = base64.b64encode(np.ascontiguousarray(pcm).tobytes()).decode()
        shape = list(pcm.shape)
        return bool(
            self._call("write", stop, utterance, pcm=data, dtype=str(pcm.dtype), shape=shape)
        )

    def end(self, utterance: Utterance, stop: threading.Event, timeout: float) -> bool:
        return bool(self._call("end", stop, utterance, timeout=timeout))

    def interrupt(self, fade_ms: int | None = None) -> None:
        self._call("interrupt", fade_ms=fade_ms)

    def set_volume(self, volume: float) -> None:
        self._call("set_volume", volume=volume)

    # -- the driver process -----------------------------------------------------------

    def stderr(self) -> str:
        return self._log.read_text(errors="replace")

    def shutdown(self) -> None:
        """End the driver (it closes its output at EOF) and wait until it is gone."""
        with self._write_lock, contextlib.suppress(BrokenPipeError, ValueError):
            assert self._proc.stdin is not None
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=DEFAULT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            stop_process(self._proc)
        self._reader.join(timeout=5)
        assert self._proc.stdout is not None
        self._proc.stdout.close()

    def _call(
        self,
        call: str,
        stop: threading.Event | None = None,
        utterance: Utterance | None = None,
        **args: Any,
    ) -> Any:
        """Run `call` in the driver; forwards `stop` if it is set while the call runs."""
        n = next(self._n)
        replies: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self._pending[n] = replies
        if utterance is not None:
            args.update(uid=str(id(utterance)), request_id=utterance.request_id)
            args.update(sample_rate=utterance.sample_rate)
        sid = str(id(stop))
        if stop is not None:
            self._stops[sid] = stop
            args.update(stop=sid, stop_set=stop.is_set())
        self._send({"n": n, "call": call, **args})
        forwarded = stop is None or stop.is_set()
        deadline = time.monotonic() + CALL_TIMEOUT_S
        try:
            while True:
                if not forwarded and stop is not None and stop.is_set():
                    self._send({"call": "set_stop", "stop": sid})
                    forwarded = True
                with contextlib.suppress(queue.Empty):
                    reply = replies.get(timeout=0.01)
                    break
                if time.monotonic() > deadline or self._proc.poll() is not None:
                    raise AssertionError(f"no reply to {call!r}: {self.stderr()[-3000:]}")
        finally:
            del self._pending[n]
        if "error" in reply:
            kind, message = reply["error"]
            if kind in _ERRORS:
                raise _ERRORS[kind](message)
            raise RuntimeError(f"{kind} in the player driver: {message}")
        return reply.get("result")

    def _send(self, message: dict[str, Any]) -> None:
        with self._write_lock:
            assert self._proc.stdin is not None
            self._proc.stdin.write(json.dumps(message) + "\n")
            self._proc.stdin.flush()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            message = json.loads(line)
            self._mirror(message.get("utterances", {}))
            pending = self._pending.get(message.get("n", -1))
            if message["event"] == "reply" and pending is not None:
                pending.put(message)
            elif message["event"] == "started":
                self._started.set()

    def _mirror(self, changes: dict[str, list[Any]]) -> None:
        for uid, fields in changes.items():
            utterance = self._utterances.get(uid)
            if utterance is not None:
                for name, value in zip(_FIELDS, fields, strict=True):
                    setattr(utterance, name, value)
