"""CPU seconds per request, trailing thread-pool spin included: onnxruntime's global pool
shared by all sessions against a pool per session with spinning off.

    python -m bench.spin_cpu [--rounds 3] [--model PATH] [--setups global,own,...]
        [--concurrent 2]

Setups, each in its own worker process (one voice, the engine's path: text front-end,
windowed decoder, pause gate):

    global      onnxruntime's global intra-op pool shared by all sessions, and one arena
                (share_runtime before): its workers spin ~50 ms after each run, and
                Python cannot turn that off
    own         share_runtime now: one arena, each session its own 2-thread pool with
                spinning off (the daemon, `say`)
    own-arenas  the same without share_runtime: an arena per session too

The workers take turns sentence by sentence, the order rotating, so background load hits
all alike. Per request: the process's CPU time (all threads, user + system) from SETTLE_S
after the last request until SETTLE_S after this one ends, so the spin after the last run
is counted; minus the CPU the same process burns over an idle window of that length
(measured once per round); plus wall time and time to first audio. `--concurrent N`
starts N requests at once (the daemon synthesizes up to `max_concurrent`, 2, at a time):
wall time is then until the last ends, TTFA the median of theirs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from . import workers as bench_workers
from .workers import REPO, Gated

SETTLE_S = 0.3  # longer than the ~50 ms the shared pool spins after a run
SETUPS = ("global", "own", "own-arenas")
CORPUS = REPO / "edge_tts" / "voice" / "data" / "evaluation_en.txt"


def global_pool(threads: int) -> None:
    """The runtime as share_runtime set it up before: onnxruntime's global intra-op pool
    for every session (whose workers spin after each run; Python cannot stop them), and
    one arena."""
    import onnxruntime

    import edge_tts.voice.model as voice_model

    onnxruntime.capi._pybind_state.set_global_thread_pool_sizes(threads, 1)
    voice_model.share_runtime()  # the shared arena
    plain = voice_model.session_options

    def global_options(threads: int, nchwc: bool = True) -> Any:
        options = plain(threads, nchwc)
        options.use_per_session_threads = False
        options.intra_op_num_threads = 0
        options.inter_op_num_threads = 0
        return options

    voice_model.session_options = global_options


def worker(setup: str, model: Path) -> int:
    import psutil

    import edge_tts.voice.model as voice_model
    from edge_tts.speech.direct import speak
    from edge_tts.voice import files

    if setup == "global":
        global_pool(2)
    elif setup == "own":
        voice_model.share_runtime()  # the daemon's runtime: an arena shared, pools per session
    voice = voice_model.Voice(files.from_model_path(model), threads=2)
    voice.load()
    for _ in speak("Hello there. This warms the engine up.", voice):
        pass
    process = psutil.Process()

    def cpu() -> float:
        times = process.cpu_times()
        return float(times.user + times.system)

    bench_workers.reply(ready=True)
    for line in sys.stdin:
        command = json.loads(line)
        time.sleep(SETTLE_S)
        before = cpu()
        if command["cmd"] == "idle":
            time.sleep(SETTLE_S)
            bench_workers.reply(cpu_s=cpu() - before)
            continue
        if command["cmd"] == "quit":
            return 0
        results: list[tuple[float, float]] = []
        start = time.perf_counter()
        threads = [
            threading.Thread(target=say, args=(voice, text, start, results))
            for text in command["texts"]
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - start
        time.sleep(SETTLE_S)
        bench_workers.reply(
            cpu_s=cpu() - before,
            wall_s=wall,
            ttfa_s=statistics.median(r[0] for r in results),
            audio_s=sum(r[1] for r in results),
            rss_mb=process.memory_info().rss / 1e6,
        )
    return 0


def say(voice: Any, text: str, start: float, results: list[tuple[float, float]]) -> None:
    """Speak `text`; append (seconds from `start` to its first audio, seconds of audio)."""
    from edge_tts.speech.direct import speak

    first = None
    audio = 0.0
    for chunk in speak(text, voice):
        first = first if first is not None else time.perf_counter() - start
        audio += chunk.seconds
    results.append((first or 0.0, audio))


def main() -> int:
    from edge_tts.voice import files

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", type=Path, default=files.default_int8_path())
    parser.add_argument("--setups", default=",".join(SETUPS))
    parser.add_argument("--concurrent", type=int, default=1, help="requests at once")
    parser.add_argument("--worker", choices=SETUPS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args.model)
    setups = args.setups.split(",")
    texts = [line.strip() for line in CORPUS.read_text("utf-8").splitlines() if line.strip()]
    workers = {
        setup: Gated(setup, "bench.spin_cpu", "--worker", setup, "--model", str(args.model))
        for setup in setups
    }
    samples: dict[str, list[dict[str, float]]] = {setup: [] for setup in setups}
    idle: dict[str, list[float]] = {setup: [] for setup in setups}
    load_before = os.getloadavg()[0]
    try:
        turn = 0
        for _ in range(args.rounds):
            for setup in setups:
                idle[setup].append(workers[setup].ask(cmd="idle")["cpu_s"])
            for index in range(len(texts)):
                turn += 1
                group = [texts[(index + k) % len(texts)] for k in range(args.concurrent)]
                for setup in setups[turn % len(setups) :] + setups[: turn % len(setups)]:
                    samples[setup].append(workers[setup].ask(cmd="say", texts=group))
    finally:
        for w in workers.values():
            w.kill()
    print(
        f"{args.model.name}, {len(texts)} sentences x {args.rounds} rounds, "
        f"{args.concurrent} at once, load "
        f"{load_before:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'setup':12} {'CPU s/req':>10} {'CPU s/audio s':>14} {'RTF':>7} {'TTFA p50 ms':>12} "
        f"{'idle CPU s':>11} {'max RSS MB':>11}"
    )
    for setup in setups:
        rows = samples[setup]
        base = statistics.median(idle[setup])
        audio = sum(r["audio_s"] for r in rows)
        cpu = sum(r["cpu_s"] - base for r in rows)
        wall = sum(r["wall_s"] for r in rows)
        ttfa = statistics.median(r["ttfa_s"] for r in rows)
        print(
            f"{setup:12} {cpu / len(rows):10.3f} {cpu / audio:14.4f} {wall / audio:7.4f} "
            f"{1000 * ttfa:12.1f} {base:11.4f} {max(r['rss_mb'] for r in rows):11.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
