"""The daemon as every benchmark runs it, and what the daemon benchmarks share.

`running` (or `launch` and `stop`) is the one launcher: tests/support/daemon_proc.py's
DaemonProcess with the benchmarks' settings (preload, INFO logs), this user's data
directory (where our INT8 build of the default voice is) and `edge-ttsd run --set` pairs.
`Rig` and `daemon_run` are Mosquitto plus one daemon on the wav-dir sink for bench/soak.py,
bench/fuzz.py, bench/memory.py and others: started, recorded and stopped around a run;
a `Tracker` sends their requests and matches the daemon's events to them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from bench.report_io import MB, add_output_options, fields, log, machine_info, table
from edge_tts.messages.events import FINAL_KINDS
from tests.support.broker import Broker, Recorder
from tests.support.daemon_proc import DaemonProcess, daemon_config, merge_sections

# What every benchmark's daemon runs with: the voices loaded before READY (a first
# request's load is not what is measured), and a log that does not cost a line per step.
BENCH_SETTINGS: dict[str, Any] = {"log_level": "INFO", "synthesis": {"preload": True}}
STOP_TIMEOUT_S = 20.0  # SIGTERM, then SIGKILL


def launch(
    home: Path,
    port: int,
    settings: dict[str, Any],
    env: dict[str, str] | None = None,
    sets: Sequence[str] = (),
    module: str = "edge_tts",
    ready_timeout: float = 180,
) -> DaemonProcess:
    """The daemon in `home` on the broker at `port`, with BENCH_SETTINGS then `settings`
    (sections merged), `env`, `sets` as `--set` (they win over the config file) and
    `module` run instead of edge_tts (bench/e2e/shim.py); returns once READY=1, after
    which `stop` is the caller's to call."""
    from edge_tts.voice import files

    home.mkdir(parents=True, exist_ok=True)
    config = daemon_config(home, port, **merge_sections(BENCH_SETTINGS, settings))
    env = {"EDGE_TTS_DATA_DIR": str(files.data_dir()), **(env or {})}
    args = [arg for pair in sets for arg in ("--set", pair)]
    daemon = DaemonProcess(home, config, env=env, args=args, module=module)
    try:
        daemon.start()
        daemon.wait_ready(ready_timeout)
    except BaseException:
        log_tail(daemon)
        stop(daemon)
        raise
    return daemon


def stop(daemon: DaemonProcess) -> tuple[int | None, float | None]:
    """SIGTERM, as systemd stops it (SIGKILL if it has not exited STOP_TIMEOUT_S later),
    then the notify socket closed; the exit status and how long it took (None, None if
    it had exited already: its status, None)."""
    proc = daemon.proc
    code: int | None = None if proc is None else proc.poll()
    took: float | None = None
    if proc is not None and code is None:
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(STOP_TIMEOUT_S)
            took = round(time.monotonic() - started, 2)
        except subprocess.TimeoutExpired:
            log(f"the daemon did not exit {STOP_TIMEOUT_S:g} s after SIGTERM: killed")
    daemon.close()
    return code, took


@contextlib.contextmanager
def running(
    home: Path, port: int, settings: dict[str, Any], **options: Any
) -> Iterator[DaemonProcess]:
    """`launch` for a `with`: stopped on leaving, whatever happened."""
    daemon = launch(home, port, settings, **options)
    try:
        yield daemon
    except BaseException:
        log_tail(daemon)
        raise
    finally:
        stop(daemon)


def log_tail(daemon: DaemonProcess) -> None:
    """The end of the daemon's log, on stderr: what a failed run needs to be read."""
    log(f"--- daemon log ({daemon.log_path}) ---\n{daemon.log()[-3000:]}")


def add_daemon_options(parser: argparse.ArgumentParser) -> None:
    """The output options (report_io.add_output_options), `--set KEY=VALUE` (repeatable,
    args.set: passed to `edge-ttsd run --set`) and `--keep` (the temp dir and its logs)."""
    add_output_options(parser)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="passed to the daemon's `edge-ttsd run --set` (repeatable)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs)")


@dataclass
class Rig:
    """Mosquitto plus one daemon on the wav-dir sink. start() and stop() own both
    processes; stop() is safe after a partial start and is meant for a `finally`."""

    root: Path
    device: str
    sets: Sequence[str] = ()
    settings: dict[str, Any] = field(default_factory=dict)
    broker: Broker | None = None
    daemon: DaemonProcess | None = None
    pid: int | None = None
    create_time: float | None = None
    exit_code: int | None = None
    stop_s: float | None = None
    same_pid_at_end: bool = False
    log_report: dict[str, Any] = field(default_factory=dict)  # log_summary(), once stopped
    load_before: tuple[float, float, float] = field(default_factory=os.getloadavg)

    @property
    def wav_dir(self) -> Path:
        return self.root / "wav"

    @property
    def port(self) -> int:
        assert self.broker is not None
        return self.broker.port

    def topic(self, leaf: str) -> str:
        return f"edge-tts/{self.device}/{leaf}"

    def start_broker(self) -> None:
        self.broker = Broker(self.root)
        self.broker.start()

    def start_daemon(self, ready_timeout: float = 180) -> None:
        """The daemon on the wav-dir sink, Rig's settings, telemetry every 5 s."""
        import psutil

        settings = {
            "device_id": self.device,
            "telemetry": {"interval": 5},
            "audio": {"sink": "wav-dir", "wav_dir": str(self.wav_dir)},
        }
        home = self.root / "daemon"
        self.daemon = launch(
            home, self.port, merge_sections(settings, self.settings), sets=self.sets,
            ready_timeout=ready_timeout,
        )  # fmt: skip
        assert self.daemon.proc is not None
        self.pid = self.daemon.proc.pid
        self.create_time = psutil.Process(self.pid).create_time()

    def alive(self) -> bool:
        return self.daemon is not None and self.daemon.running()

    def same_process(self) -> bool:
        """The process we started is still running (same PID, same start time)."""
        import psutil

        if self.pid is None or not self.alive():
            return False
        try:
            return bool(psutil.Process(self.pid).create_time() == self.create_time)
        except psutil.Error:
            return False

    def sample(self) -> dict[str, float]:
        """RSS (MB), threads, open fds and CPU seconds of the daemon."""
        import psutil

        assert self.pid is not None
        p = psutil.Process(self.pid)
        with p.oneshot():
            cpu = p.cpu_times()
            return {
                "rss_mb": p.memory_info().rss / MB,
                "threads": float(p.num_threads()),
                "fds": float(p.num_fds()),
                "cpu_s": cpu.user + cpu.system,
            }

    def sweep_wavs(self) -> int:
        """Delete every finished WAV (the sink renames a file into place when complete)."""
        removed = 0
        for wav in self.wav_dir.glob("*.wav"):
            with contextlib.suppress(FileNotFoundError):
                wav.unlink()
                removed += 1
        return removed

    def watchdog_pings(self, timeout: float) -> bool:
        """Whether a WATCHDOG=1 ping comes within `timeout`: the daemon's health tick pings
        only while MQTT, synthesis and audio are alive."""
        assert self.daemon is not None
        notify = self.daemon.notify
        try:
            notify.wait_for("WATCHDOG=1", timeout, after=len(notify.lines()))
        except AssertionError:
            return False
        return True

    def log_summary(self) -> dict[str, Any]:
        text = self.daemon.log() if self.daemon is not None else ""
        lines = text.splitlines()
        errors = [ln for ln in lines if " ERROR " in ln or " CRITICAL " in ln]
        warnings = [ln for ln in lines if " WARNING " in ln]
        unique: dict[str, int] = {}
        for line in errors:
            key = re.sub(r"^\S+ \S+ ", "", line)[:200]  # without the timestamp
            unique[key] = unique.get(key, 0) + 1
        return {
            "lines": len(lines),
            "warnings": len(warnings),
            "errors": len(errors),
            "tracebacks": text.count("Traceback (most recent call last)"),
            "error_lines": [{"line": k, "count": v} for k, v in list(unique.items())[:20]],
            "warning_lines": warnings[:5],
        }

    def stop(self) -> None:
        """The daemon (rig.exit_code, rig.stop_s), then Mosquitto."""
        try:
            if self.daemon is not None:
                self.exit_code, self.stop_s = stop(self.daemon)
        finally:
            if self.broker is not None:
                self.broker.stop()

    def summary(self) -> dict[str, Any]:
        """The daemon's part of a result (after daemon_run)."""
        return {
            "pid": self.pid,
            "same_pid_at_end": self.same_pid_at_end,
            "exit_code": self.exit_code,
            "stop_s": self.stop_s,
            "log": self.log_report,
        }

    def machine(self) -> dict[str, Any]:
        return machine_info(self.load_before)


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


@contextlib.contextmanager
def daemon_run(
    device: str,
    sets: Sequence[str],
    keep: bool,
    connect: Callable[[Rig], C],
    settings: dict[str, Any] | None = None,
    ready_timeout: float = 180,
) -> Iterator[tuple[Rig, C]]:
    """Mosquitto, then the client `connect(rig)` makes (before the daemon, so that it
    sees all the daemon publishes), then the daemon (READY=1; Rig's settings updated
    with `settings`, then `--set` `sets`). Leaving: whether the
    daemon is still the process it was (rig.same_pid_at_end), then, whatever happened,
    the client closed, the daemon stopped (SIGTERM: rig.exit_code, rig.stop_s),
    Mosquitto stopped, the daemon log summarized (rig.log_report) and the temp dir removed
    unless `keep`."""
    root = Path(tempfile.mkdtemp(prefix=f"tt{device[:2]}-"))  # short: unix socket paths
    rig = Rig(root, device, sets=sets, settings=settings or {})
    client: C | None = None
    try:
        rig.start_broker()
        client = connect(rig)
        log(f"daemon: starting (wav-dir sink){' --set ' + ' '.join(sets) if sets else ''}")
        rig.start_daemon(ready_timeout)
        yield rig, client
        rig.same_pid_at_end = rig.same_process()
    except BaseException:
        if rig.daemon is not None:
            log_tail(rig.daemon)
        raise
    finally:
        if client is not None:
            client.close()
        rig.stop()
        rig.log_report = rig.log_summary()  # before the temp dir goes
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def record_events(rig: Rig) -> Recorder:
    """A daemon_run client: a recorder of the daemon's events and telemetry."""
    return Recorder(rig.port, [rig.topic("events"), rig.topic("telemetry")])


@dataclass
class Request:
    """One request a Tracker sent, and what the daemon said of it."""

    index: int
    id: str
    text: str
    sent: float  # monotonic
    tag: str = ""  # the benchmark's class of request
    started: float | None = None  # when its `started` event came
    final_at: float | None = None  # when its first final event came
    kind: str | None = None  # that event's kind
    event: dict[str, Any] | None = None
    finals: int = 0  # final events received: more than one is a doubled answer


class Tracker:
    """The requests a benchmark sends to a daemon_run daemon and what the daemon publishes
    about them, read from the Recorder as it comes (`process`): each request's `started`
    and first final event, doubled final events, final events for no request of ours
    (`strays`), the other events by kind, and its telemetry. A finished request's WAV is
    deleted at once."""

    def __init__(self, rig: Rig, rec: Recorder) -> None:
        self.rig = rig
        self.rec = rec
        self.requests: dict[str, Request] = {}
        self.order: list[Request] = []
        self.outstanding: set[str] = set()
        self.doubled: dict[str, list[str]] = {}  # request id: the kinds of the extra events
        self.strays: list[dict[str, Any]] = []
        self.nonfinal: Counter[str] = Counter()
        self.telemetry: list[tuple[float, dict[str, Any]]] = []  # (received, message)
        self.wavs_deleted = 0
        self._seen = 0

    @property
    def latest_telemetry(self) -> dict[str, Any] | None:
        return self.telemetry[-1][1] if self.telemetry else None

    def send(self, index: int, text: str, rid: str, tag: str = "") -> Request:
        """Publish a request (QoS 1) and keep it, in order."""
        request = Request(index, rid, text, time.monotonic(), tag)
        self.requests[rid] = request
        self.order.append(request)
        self.outstanding.add(rid)
        payload = json.dumps({"id": rid, "text": text})
        self.rec.client.publish(self.rig.topic("say"), payload, qos=1)
        return request

    def process(self) -> list[Request]:
        """Read the new messages; the requests that got their first final event."""
        done: list[Request] = []
        events, telemetry = self.rig.topic("events"), self.rig.topic("telemetry")
        messages = self.rec.messages
        while self._seen < len(messages):
            stamp, topic, payload, _ = messages[self._seen]
            self._seen += 1
            if topic == telemetry:
                self.telemetry.append((stamp, json.loads(payload)))
            elif topic == events:
                request = self._on_event(stamp, json.loads(payload))
                if request is not None:
                    done.append(request)
        return done

    def _on_event(self, stamp: float, event: dict[str, Any]) -> Request | None:
        kind, rid = str(event.get("event")), event.get("id")
        request = self.requests.get(rid) if isinstance(rid, str) else None
        if kind not in FINAL_KINDS:
            self.nonfinal[kind] += 1
            if kind == "started" and request is not None and request.started is None:
                request.started = stamp
            return None
        if request is None:
            self.strays.append(event)
            return None
        request.finals += 1
        if request.finals > 1:
            self.doubled.setdefault(request.id, []).append(kind)
            return None
        request.final_at, request.kind, request.event = stamp, kind, event
        self.outstanding.discard(request.id)
        if kind == "finished":
            with contextlib.suppress(FileNotFoundError):
                (self.rig.wav_dir / f"{request.id}.wav").unlink()
                self.wavs_deleted += 1
        return request

    def wait_messages(self, timeout: float) -> bool:
        """Until a message not yet processed arrives (True) or `timeout` passes (False)."""
        try:
            self.rec.wait_for(lambda: len(self.rec.messages) > self._seen, timeout)
        except AssertionError:
            return False
        return True

    def until(self, condition: Callable[[], bool], timeout: float, what: str) -> bool:
        """Process the messages until `condition` holds (True) or `timeout` (False, logged)."""

        def check() -> bool:
            self.process()
            return condition()

        try:
            self.rec.wait_for(check, timeout)
        except AssertionError:
            log(f"timed out waiting for {what}")
            return False
        return True

    def telemetry_after(self, after: float, timeout: float = 30) -> dict[str, Any] | None:
        """The first telemetry message received after `after` (monotonic), or None."""

        def fresh() -> list[dict[str, Any]]:
            return [m for t, m in self.telemetry if t > after]

        if not self.until(lambda: bool(fresh()), timeout, "telemetry"):
            return None
        return fresh()[0]


def print_daemon(daemon: dict[str, Any], counters: dict[str, Any] | None, **more: Any) -> None:
    """The daemon's part of a report (Rig.summary(), its telemetry counters, `more`)."""
    summary = daemon["log"]
    fields(
        "the daemon",
        {
            "PID, same at the end": f"{daemon['pid']}, {daemon['same_pid_at_end']}",
            "exit status after SIGTERM (s)": f"{daemon['exit_code']} ({daemon['stop_s']})",
            "log: errors, tracebacks, warnings": (
                f"{summary['errors']}, {summary['tracebacks']}, {summary['warnings']}"
            ),
            **more,
            "counters": ", ".join(f"{k} {v}" for k, v in (counters or {}).items()),
        },
    )
    if summary["error_lines"]:
        errors = summary["error_lines"][:8]
        table(("times", "error"), [(e["count"], e["line"][:150]) for e in errors])


def voice_check(telemetry: dict[str, Any] | None) -> str:
    """Whether the daemon's default voice is our INT8 build (digest vs its manifest)."""
    from edge_tts.voice import files
    from edge_tts.voice.integrity import manifest_digest

    if telemetry is None:
        return "unknown (no telemetry)"
    digest = telemetry.get("voices", {}).get("default", {}).get("sha256")
    if not digest:
        return "unknown (no digest in telemetry)"
    expected = manifest_digest(files.default_int8_path())
    verdict = "INT8 build (digest matches its manifest)" if digest == expected else "NOT INT8"
    return f"{verdict}, sha256 {digest[:12]}..."
