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

RATE = 22050


class VirtualSoundCard:
    def __init__(self, root: Path, rate: int = RATE):
        self.root = root
        self.rate = rate
        self.socket = root / "native"
        self.fifo = root / "cap.fifo"
        self._proc: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._chunks: list[tuple[float, bytes]] = []

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
            f"rate={self.rate} channels=1 use_system_clock_for_timing=yes\n"
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
        deadline = time.monotonic() + 15
        while not self.socket.exists():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"pulseaudio did not start: {self.log()}")
            time.sleep(0.05)

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
                data = fifo.read1(4096)  # type: ignore[attr-defined]
                if not data:
                    return
                with self._lock:
                    self._chunks.append((time.monotonic(), data))

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

    def first_sound_time(self, since: int = 0, threshold: int = 300) -> float | None:
        """Monotonic time at which a non-silent chunk came out of the sound server."""
        with self._lock:
            chunks = list(self._chunks[since:])
        for stamp, chunk in chunks:
            samples = np.frombuffer(chunk[: len(chunk) // 2 * 2], dtype="<i2")
            if samples.size and int(np.abs(samples.astype(np.int32)).max()) > threshold:
                return stamp
        return None

    def stop(self) -> None:
        self._stop.set()
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=5)
        if self._reader is not None:
            self._reader.join(timeout=5)
