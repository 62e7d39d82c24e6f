"""What the daemon benchmarks share: the launcher (tests/support/daemon_proc.py's
DaemonProcess with `edge-ttsd run --set` pairs), and for bench/soak.py, bench/fuzz.py and
bench/memory.py Mosquitto plus one daemon on the wav-dir sink (`daemon_run`: start,
record, stop), its RSS, its log, percentiles; their command-line options and main()'s tail.

The helpers of tests/support/ are used as they are (broker.py, daemon_proc.py); the
daemon's `--set` pairs are appended to DaemonProcess's command line by a subclass.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from report_io import add_output_options, emit  # noqa: E402 - bench/ is the script's own directory

from tests.support.broker import Broker, Recorder  # noqa: E402 - needs the repo root on sys.path
from tests.support.daemon_proc import DaemonProcess, daemon_config  # noqa: E402

MB = 1e6


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def stop_on_signals() -> None:
    """SIGTERM and SIGINT raise KeyboardInterrupt, so the `finally` that stops the daemon
    and Mosquitto runs (a background job starts with SIGINT ignored; SIGTERM would kill
    the script and leave both running)."""

    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, interrupt)


def add_daemon_options(parser: argparse.ArgumentParser, out: str = "--out") -> None:
    """The output options (report_io.add_output_options) and `--keep`, for daemon_run."""
    add_output_options(parser, out)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs)")


def add_set_option(parser: argparse.ArgumentParser) -> None:
    """`--set KEY=VALUE` (repeatable, args.set): daemon_run's `sets`."""
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="passed to the daemon's `edge-ttsd run --set` (repeatable)",
    )


def run_and_emit(
    run: Callable[[argparse.Namespace], dict[str, Any]],
    args: argparse.Namespace,
    print_table: Callable[[dict[str, Any]], None],
) -> int:
    """`run(args)` stoppable by SIGTERM and SIGINT (stop_on_signals), then its result
    written and printed as add_daemon_options chose; main()'s exit status."""
    stop_on_signals()
    emit(run(args), args.out, args.json, print_table)
    return 0


def percentile(values: Sequence[float], q: float) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def stats(values: Sequence[float | None]) -> dict[str, Any]:
    clean = [v for v in values if v is not None]
    out: dict[str, Any] = {"n": len(clean)}
    for name, q in (("p50", 50), ("p95", 95), ("p99", 99)):
        p = percentile(clean, q)
        out[name] = None if p is None else round(p, 1)
    out["max"] = round(max(clean), 1) if clean else None
    return out


def slope(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of y over x, or None with fewer than two distinct x."""
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def fmt(value: Any, spec: str = ".0f") -> str:
    return "-" if value is None else format(value, spec)


class SetDaemon(DaemonProcess):
    """tests/support/daemon_proc.py's DaemonProcess, with `--set KEY=VALUE` pairs passed to
    `edge-ttsd run` (as `python -m edge_tts run`). `entry` replaces `-m edge_tts` with
    another script that takes the same arguments (bench/e2e/shim.py)."""

    def __init__(
        self,
        root: Path,
        config: dict[str, Any],
        env: dict[str, str],
        sets: Sequence[str] = (),
        entry: Sequence[str] = ("-m", "edge_tts"),
    ) -> None:
        super().__init__(root, config, env=env)
        self.sets = list(sets)
        self.entry = list(entry)

    def start(self) -> None:
        env = {
            **os.environ,
            **self.env,
            "NOTIFY_SOCKET": str(self.notify.path),
            "WATCHDOG_USEC": "4000000",
            "PYTHONUNBUFFERED": "1",
        }
        argv = [sys.executable, *self.entry, "run", "--config", str(self.config_path)]
        for pair in self.sets:
            argv += ["--set", pair]
        with self.log_path.open("ab") as out:
            self.proc = subprocess.Popen(
                argv, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT
            )


@dataclass
class Rig:
    """Mosquitto plus one daemon on the wav-dir sink. start() and stop() own both
    processes; stop() is safe after a partial start and is meant for a `finally`."""

    root: Path
    device: str
    sets: Sequence[str] = ()
    settings: dict[str, Any] = field(default_factory=dict)
    broker: Broker | None = None
    daemon: SetDaemon | None = None
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
        """The daemon with preload, INFO logs and the wav-dir sink; returns once READY=1."""
        from edge_tts.voice import files

        home = self.root / "daemon"
        home.mkdir()
        settings: dict[str, Any] = {
            "device_id": self.device,
            "log_level": "INFO",
            "telemetry": {"interval": 5},
            "synthesis": {"preload": True},
            "audio": {"sink": "wav-dir", "wav_dir": str(self.wav_dir)},
        }
        settings.update(self.settings)
        config = daemon_config(home, self.port, **settings)
        # As bench/daemon_e2e.py: this user's data directory, where our INT8 build is.
        env = {"EDGE_TTS_DATA_DIR": str(files.data_dir())}
        self.daemon = SetDaemon(home, config, env, self.sets)
        self.daemon.start()
        self.daemon.wait_ready(ready_timeout)
        assert self.daemon.proc is not None
        self.pid = self.daemon.proc.pid
        import psutil

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
        try:
            entries = list(os.scandir(self.wav_dir))
        except FileNotFoundError:
            return 0
        for entry in entries:
            if entry.name.endswith(".wav"):
                try:
                    os.unlink(entry.path)
                    removed += 1
                except FileNotFoundError:
                    pass
        return removed

    def watchdog_after(self, since: float, timeout: float) -> bool:
        """Whether a WATCHDOG=1 ping arrives after `since` (monotonic) within `timeout`:
        the daemon's health tick pings only while MQTT, synthesis and audio are alive."""
        assert self.daemon is not None
        notify = self.daemon.notify
        deadline = time.monotonic() + timeout
        with notify._cond:
            while True:
                if any(t > since and "WATCHDOG=1" in d.splitlines() for t, d in notify.datagrams):
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                notify._cond.wait(left)

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
        """SIGTERM the daemon (SIGKILL if it has not exited 20 s later), then Mosquitto."""
        try:
            if self.daemon is not None:
                proc = self.daemon.proc
                if proc is not None and proc.poll() is None:
                    started = time.monotonic()
                    proc.send_signal(signal.SIGTERM)
                    try:
                        self.exit_code = proc.wait(20)
                        self.stop_s = round(time.monotonic() - started, 2)
                    except subprocess.TimeoutExpired:
                        log("the daemon did not exit 20 s after SIGTERM: killed")
                        proc.kill()
                        proc.wait(10)
                elif proc is not None:
                    self.exit_code = proc.returncode
                self.daemon.close()
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
            log(f"--- daemon log ---\n{rig.daemon.log()[-3000:]}")
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


def process_until(
    rec: Recorder,
    process: Callable[[], object],
    condition: Callable[[], bool],
    timeout: float,
    what: str,
) -> bool:
    """`process()` the recorded messages until `condition` holds (True) or `timeout`
    passes (False, logged)."""

    def check() -> bool:
        process()
        return condition()

    try:
        rec.wait_for(check, timeout)
    except AssertionError:
        log(f"timed out waiting for {what}")
        return False
    return True


def print_log_and_counters(daemon: dict[str, Any], counters: dict[str, Any] | None) -> None:
    """The daemon's log summary (Rig.summary()["log"]) and its telemetry counters."""
    summary = daemon["log"]
    print(
        f"  log: {summary['errors']} errors, {summary['tracebacks']} tracebacks, "
        f"{summary['warnings']} warnings"
    )
    for e in summary["error_lines"][:8]:
        print(f"    {e['count']}x {e['line'][:150]}")
    if counters:
        print("  counters: " + ", ".join(f"{k} {v}" for k, v in counters.items()))


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


def machine_info(load_before: tuple[float, float, float]) -> dict[str, Any]:
    import numpy
    import onnxruntime

    model = platform.machine()
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    for line in lscpu.splitlines():
        if line.startswith("Model name:"):
            model = line.split(":", 1)[1].strip()
    flags = Path("/proc/cpuinfo").read_text().split()
    return {
        "cpu": model,
        "cpus": os.cpu_count(),
        "avx512_vnni": "avx512_vnni" in flags,  # onnxruntime's fast INT8 kernels need it
        "python": platform.python_version(),
        "onnxruntime": onnxruntime.__version__,
        "numpy": numpy.__version__,
        "loadavg_start": [round(x, 2) for x in load_before],
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
    }


def machine_line(m: dict[str, Any]) -> str:
    """machine_info's result, in one line for a report."""
    return (
        f"machine: {m['cpu']}, {m['cpus']} CPUs, AVX512-VNNI {m['avx512_vnni']}, onnxruntime "
        f"{m['onnxruntime']}; load average {m['loadavg_start']} -> {m['loadavg_end']}"
    )
