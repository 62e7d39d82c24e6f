"""A virtual sound card that runs in real time, for tests.

PulseAudio with a pipe sink clocked by the system clock, and an asoundrc (HOME points at
the temp dir) routing ALSA's `default` to it. The sink writes into a FIFO that a reader
thread drains continuously (otherwise PulseAudio drops audio); what was played comes back
as int16 samples. The sink emits silence while idle, also in real time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import IO

import numpy as np

from .waiting import DEFAULT_TIMEOUT_S, stop_process, wait_until

RATE = 22050


class VirtualSoundCard:
    def __init__(self, root: Path, rate: int = RATE, channels: int = 1):
        self.root = root
        self.rate = rate
        self.channels = channels  # the sink's format: what the sound server mixes down to
        self.socket = root / "native"
        self.fifo = root / "cap.fifo"
        self._proc: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._chunks: list[tuple[float, bytes]] = []
        self._bytes = 0  # captured so far: grows in real time while pulseaudio runs

    @property
    def env(self) -> dict[str, str]:
        """Environment for a process that should play into this card."""
        return {"HOME": str(self.root), "PULSE_SERVER": f"unix:{self.socket}"}

    def start(self) -> None:
        if shutil.which("pulseaudio") is None:
            raise RuntimeError("pulseaudio is not installed (scripts/setup --test installs it)")
        os.mkfifo(self.fifo)
        (self.root / "pa.pa").write_text(
            f"load-module module-native-protocol-unix auth-anonymous=1 socket={self.socket}\n"
            f"load-module module-pipe-sink file={self.fifo} sink_name=cap format=s16le "
            f"rate={self.rate} channels={self.channels} use_system_clock_for_timing=yes\n"
            "set-default-sink cap\n"
        )
        server = f'"unix:{self.socket}"'
        (self.root / ".asoundrc").write_text(
            f"pcm.!default {{ type pulse; server {server} }}\n"
            f"ctl.!default {{ type pulse; server {server} }}\n"
        )
        env = {**os.environ, "HOME": str(self.root), "XDG_RUNTIME_DIR": str(self.root)}
        with (self.root / "pa.log").open("wb") as log:
            self._proc = self._spawn(env, log)
        self._reader = threading.Thread(target=self._read, name="fifo-reader", daemon=True)
        self._reader.start()
        proc = self._proc

        def listening() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"pulseaudio exited with {proc.returncode}: {self.log()}")
            return self.socket.exists()

        try:
            wait_until(listening, DEFAULT_TIMEOUT_S, "pulseaudio's socket", self.log, 0.05)
        except BaseException:
            self.stop()  # no pulseaudio left behind by a start that failed
            raise

    def _spawn(self, env: dict[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                "pulseaudio",
                "-n",
                "-F",
                str(self.root / "pa.pa"),
                "--daemonize=no",
                "--exit-idle-time=-1",
                "--use-pid-file=no",
                "--disallow-exit",
                "--system=false",
                "--log-target=stderr",
                "--log-level=error",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )

    def _read(self) -> None:
        with self.fifo.open("rb") as fifo:  # blocks until pulseaudio opens the write end
            while not self._stop.is_set():
                data = fifo.read1(4096)
                if not data:
                    return
                with self._lock:
                    self._chunks.append((time.monotonic(), data))
                    self._bytes += len(data)

    def log(self) -> str:
        path = self.root / "pa.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def mark(self) -> int:
        """A position in the capture; `captured(since=mark)` returns what came after it."""
        with self._lock:
            return len(self._chunks)

    def captured(self, since: int = 0) -> np.ndarray:
        with self._lock:
            data = b"".join(chunk for _, chunk in self._chunks[since:])
        return np.frombuffer(data[: len(data) // 2 * 2], dtype="<i2")

    def captured_seconds(self) -> float:
        """How much the sink has written (sound or silence): a clock of the card."""
        with self._lock:
            return self._bytes / 2 / self.rate

    def wait_sound(
        self, since: int = 0, timeout: float = DEFAULT_TIMEOUT_S, threshold: int = 300
    ) -> float:
        """Wait until something audible came out after `since`; the time it came."""
        heard = wait_until(
            lambda: self.first_sound_time(since, threshold),
            timeout,
            f"sound (|sample| > {threshold}) from the card",
            self._status,
        )
        assert heard is not None
        return heard

    def wait_played(
        self,
        since: int = 0,
        min_sound_s: float = 0.0,
        silence_s: float = 0.3,
        timeout: float = DEFAULT_TIMEOUT_S,
        threshold: int = 0,
    ) -> np.ndarray:
        """Wait until what was played has come out of the sound server, and return the
        capture since `since`: sound spanning at least `min_sound_s` (first to last sample
        above `threshold`), followed by `silence_s` of silence (the idle sink writes
        exact zeros). Use `min_sound_s` when the audio has pauses of its own."""

        def played() -> list[np.ndarray]:  # [the capture] once played, else []
            audio = self.captured(since)
            loud = np.flatnonzero(np.abs(audio.astype(np.int32)) > threshold)
            if not loud.size:
                return []
            span = (loud[-1] - loud[0] + 1) / self.rate
            after = (audio.size - 1 - loud[-1]) / self.rate
            return [audio] if span >= min_sound_s and after >= silence_s else []

        what = f"{min_sound_s:g} s of sound then {silence_s:g} s of silence from the card"
        [audio] = wait_until(played, timeout, what, self._status, 0.05)
        return audio

    def _status(self) -> str:
        alive = self._proc is not None and self._proc.poll() is None
        return (
            f"card: {self.captured_seconds():.1f} s captured, pulseaudio "
            f"{'running' if alive else 'not running'}; log: {self.log()[-2000:]}"
        )

    def first_sound_time(self, since: int = 0, threshold: int = 300) -> float | None:
        """Monotonic time at which a non-silent chunk came out of the sound server."""
        found = self.first_sound(since, threshold)
        return None if found is None else found[0]

    def first_sound(self, since: int = 0, threshold: int = 300) -> tuple[float, float] | None:
        """When the first chunk after `since` with a sample above `threshold` came out of
        the sound server (monotonic), and when that sample played: the chunk's time plus
        the sample's offset in it (the sink writes a chunk at the start of its span)."""
        with self._lock:
            chunks = list(self._chunks[since:])
        for stamp, chunk in chunks:
            samples = np.frombuffer(chunk[: len(chunk) // 2 * 2], dtype="<i2")
            loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > threshold)
            if loud.size:
                return stamp, stamp + int(loud[0]) // self.channels / self.rate
        return None

    def stop(self) -> None:
        """Stop pulseaudio and the reader; safe to call twice, and after a failed start."""
        self._stop.set()
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_process(proc, timeout=5)
        reader, self._reader = self._reader, None
        if reader is not None:
            if reader.is_alive():
                self._unblock_reader()
            reader.join(timeout=5)

    def _unblock_reader(self) -> None:
        """A reader still waiting in open() for a writer (pulseaudio never opened the
        FIFO) gets one, then EOF; otherwise its thread would outlive the test."""
        try:
            fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # no reader waiting (ENXIO), or the FIFO is gone
            return
        os.close(fd)
