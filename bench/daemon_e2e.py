"""The daemon end to end: a real Mosquitto, the daemon subprocess, a real-time sound card.

    python bench/daemon_e2e.py --quick                 # a few minutes
    python bench/daemon_e2e.py                         # full (quiet machine)
    python bench/daemon_e2e.py --quick --investigate   # + TTFA breakdown and knob sweep
    python bench/daemon_e2e.py --only sequential,length --json
    python bench/daemon_e2e.py --quick --only length,burst2 \
        --set synthesis.max_concurrent=1 --set audio.block_frames=256 --latency 0.03
    python bench/daemon_e2e.py --quick --only none --rss-knobs   # only the memory knobs

Mosquitto on a free port (tests/support/broker.py), the daemon as `python -m edge_tts run --config
F` with a fake NOTIFY_SOCKET (tests/support/daemon_proc.py; preload on, the default voice, which
resolves to our INT8 build: EDGE_TTS_DATA_DIR points at this user's data directory, and
the voice's digest from the daemon's telemetry is checked against the INT8 manifest), and
PulseAudio with a pipe sink paced by the system clock (tests/support/soundcard.py) as ALSA's
default. Monotonic clocks are system-wide, so bench and daemon timestamps compare.

Phases (--only picks some; `--only none` runs none, for --investigate / --rss-knobs alone):

  sequential  corpus lines, one publisher: publish, wait for `finished`, settle, next
  length      short vs long sentences, interleaved, one publisher (same daemon)
  burst2      two publishers publish at the same moment, repeatedly (same daemon)
  burst100    100 requests at once with queue.size 128, then with the default 32; on the
              sound card at speed 2 (--quick: the wav-dir sink, not paced)
  rss         RSS of the daemon (psutil) across 1000 requests sampled every 100
              (--quick: 200, every 50): wav-dir sink (not paced by a clock, so it is
              quick), short texts, published a sample's worth at a time

--set KEY=VALUE (daemon settings) and --latency (PortAudio latency: audio.latency_ms)
apply to the phases' daemons.

Time to first audio (TTFA) "sound out" = publish -> first non-silent block out of the
sound server (VirtualSoundCard.first_sound_time: the time the FIFO reader got the block).
The pipe sink emits 2048-frame blocks (93 ms at 22.05 kHz mono) in real time, so the
"sample-accurate" figure adds the loud sample's offset inside its block. The daemon's own
`time_to_first_audio_ms` (message received -> first sample handed to ALSA) is shown next
to it.

--investigate runs the daemon through a shim (`--daemon-shim`) that traces every request
(received, planned, first chunk synthesized, first write into the ring, first sample
handed to ALSA, lead-in silence of the voice's audio) and can set the PortAudio latency
(not a config key), LOOKAHEAD_CHUNKS and onnxruntime's enable_mem_pattern; it sweeps
those, audio.block_frames, synthesis.first_chunk_chars and max_concurrent, the pipe
sink's sample format and PULSE_LATENCY_MSEC (SWEEP; --sweep picks some). --rss-knobs
repeats the RSS phase per memory knob (RSS_SWEEP). Nothing in edge_tts/ or tests/ is
changed: the shim patches at run time, and the other sink format is the test card's
pa.pa rewritten before PulseAudio starts.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from daemon_rig import stats  # noqa: E402 - bench/ is the script's own directory
from report_io import emit  # noqa: E402

from tests.support.broker import Broker, Recorder  # noqa: E402 - needs the repo root on sys.path
from tests.support.daemon_proc import DaemonProcess, daemon_config  # noqa: E402

# Loaded at run time: mypy would check tests/support/soundcard.py too, and flags its one
# `type: ignore` as unused under this project's strict settings.
_soundcard: Any = importlib.import_module("tests.support.soundcard")

SHIM_ENV = "EDGE_TTS_BENCH_SHIM"
CORPUS = REPO / "edge_tts" / "voice" / "data" / "evaluation_en.txt"
FINAL = ("finished", "rejected", "expired", "interrupted")
LOUD = 300  # int16 threshold, as VirtualSoundCard.first_sound_time
SETTLE_S = 0.7  # after `finished`: the tail still in ALSA/PulseAudio comes out first
RATE = 22050

SHORT_TEXTS = (  # one chunk each, as long as the long texts' first chunks (about 45 chars)
    "The front door has been unlocked.",
    "The washing machine has finished its cycle.",
    "The freezer door has been open for five minutes.",
    "Package delivered to the front porch.",
)
LONG_TEXTS = (  # long first sentences: the clause splitter must keep the first chunk short
    "The washing machine in the basement has finished its cycle, the dryer will start in "
    "ten minutes, and the laundry room lights will switch off automatically afterwards.",
    "Please remember to take your keys, close the garage door, switch off the lights in "
    "the kitchen and lock the back door before you leave for the airport this afternoon.",
    "Motion was detected in the backyard near the shed at eleven forty-two PM, and the "
    "camera recorded a short clip that you can review in the app when you have a moment.",
    "The temperature in the living room has dropped to seventeen degrees Celsius, so the "
    "heating will switch on now and run until the room reaches twenty-one degrees again.",
)
RSS_TEXTS = (
    "Message {i}.",
    "Door {i} is open.",
    "Timer {i} finished.",
    "Sensor {i} reads {j} degrees.",
    "Reminder number {i}: take out the bins.",
)

# Targets (see the issue "the daemon").
TTFA_SHORT_P50_MAX_MS = 100.0
LENGTH_RATIO_MAX = 1.25  # "independent of length": long p50 <= 1.25 x short p50
BURST2_P99_MAX_MS = 400.0
STEADY_RSS_MAX_MB = 200.0
RSS_GROWTH_MAX_MB = 5.0
MB = 1e6


# --- helpers around the test rig -------------------------------------------------------


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Card:
    """tests/support/soundcard.py's VirtualSoundCard, plus sample-accurate onsets and, for the
    knob sweep, another sink format (the helper's pa.pa, rewritten before PulseAudio starts)."""

    def __init__(self, root: Path, rate: int = RATE, channels: int = 1) -> None:
        self.inner: Any = _soundcard.VirtualSoundCard(root, rate=rate)
        self.rate = rate
        self.channels = channels
        if channels != 1:
            spawn = self.inner._spawn

            def spawn_stereo(env: dict[str, str], log: IO[bytes]) -> Any:
                pa = root / "pa.pa"
                pa.write_text(pa.read_text().replace("channels=1", f"channels={channels}"))
                return spawn(env, log)

            self.inner._spawn = spawn_stereo

    def start(self) -> None:
        self.inner.start()

    def stop(self) -> None:
        self.inner.stop()

    @property
    def env(self) -> dict[str, str]:
        return dict(self.inner.env)

    def mark(self) -> int:
        return int(self.inner.mark())

    def onset(self, since: int, threshold: int = LOUD) -> tuple[float, float] | None:
        """(first_sound_time: when the block holding the first loud sample was read, that
        time + the sample's offset in its block = when the sample plays, sample-accurate)."""
        import numpy as np

        stamp = self.inner.first_sound_time(since, threshold)
        if stamp is None:
            return None
        with self.inner._lock:
            chunks = list(self.inner._chunks[since:])
        for at, chunk in chunks:
            if at != stamp:
                continue
            samples = np.frombuffer(chunk[: len(chunk) // 2 * 2], dtype="<i2")
            loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > threshold)
            if loud.size:
                return float(stamp), float(stamp) + int(loud[0]) // self.channels / self.rate
        return float(stamp), float(stamp)


class ShimDaemon(DaemonProcess):
    """The daemon through `bench/daemon_e2e.py --daemon-shim` (same env as the base)."""

    def start(self) -> None:
        env = {
            **os.environ,
            **self.env,
            "NOTIFY_SOCKET": str(self.notify.path),
            "WATCHDOG_USEC": "4000000",
            "PYTHONUNBUFFERED": "1",
        }
        argv = [sys.executable, str(Path(__file__).resolve()), "--daemon-shim"]
        with self.log_path.open("ab") as out:
            self.proc = subprocess.Popen(
                [*argv, "--config", str(self.config_path)],
                env=env,
                cwd=REPO,
                stdout=out,
                stderr=subprocess.STDOUT,
            )


class Events:
    """Final events by request id, read incrementally from a Recorder's messages."""

    def __init__(self, rec: Recorder, topic: str) -> None:
        self.rec = rec
        self.topic = topic
        self._seen = 0
        self.final: dict[str, tuple[float, dict[str, Any]]] = {}
        self.started: dict[str, float] = {}
        self.duplicates: list[str] = []
        self.unidentified_rejections = 0

    def update(self) -> None:
        messages = self.rec.messages
        while self._seen < len(messages):
            stamp, topic, payload, _ = messages[self._seen]
            self._seen += 1
            if topic != self.topic:
                continue
            event = json.loads(payload)
            kind, rid = event.get("event"), event.get("id")
            if kind == "started" and rid:
                self.started[rid] = stamp
            elif kind in FINAL:
                if not rid:
                    self.unidentified_rejections += 1
                elif rid in self.final:
                    self.duplicates.append(rid)
                else:
                    self.final[rid] = (stamp, event)

    def wait(self, ids: Sequence[str], timeout: float) -> None:
        def done() -> bool:
            self.update()
            return all(i in self.final for i in ids)

        self.rec.wait_for(done, timeout, f"final events for {len(ids)} request(s)")

    def latest_telemetry(self, device: str) -> dict[str, Any] | None:
        topic = f"edge-tts/{device}/telemetry"
        for _, t, payload, _ in reversed(self.rec.messages):
            if t == topic:
                found: dict[str, Any] = json.loads(payload)
                return found
        return None


@dataclass(frozen=True)
class Knobs:
    """One daemon configuration; None means the daemon's own default."""

    name: str
    latency: float | None = None  # s; audio.latency_ms (default 50 ms)
    block_frames: int | None = None  # audio.block_frames (default 512)
    first_chunk_chars: int | None = None  # synthesis.first_chunk_chars (default 40)
    sink_rate: int = RATE  # the pipe sink's format: 4096-byte blocks whatever the format
    sink_channels: int = 1
    pulse_latency_msec: int | None = None  # PULSE_LATENCY_MSEC for the daemon (libpulse)
    max_concurrent: int | None = None  # synthesis.max_concurrent (default 2)
    lookahead: int | None = None  # edge_tts.pipeline.LOOKAHEAD_CHUNKS (a constant: shim)
    mem_pattern: bool | None = None  # onnxruntime SessionOptions.enable_mem_pattern (shim)

    @property
    def needs_shim(self) -> bool:
        return any(v is not None for v in (self.lookahead, self.mem_pattern))

    def describe(self) -> str:
        parts = []
        if self.latency is not None:
            parts.append(f"PortAudio latency {self.latency * 1000:.0f} ms")
        if self.block_frames is not None:
            parts.append(f"block_frames {self.block_frames}")
        if self.first_chunk_chars is not None:
            parts.append(f"first_chunk_chars {self.first_chunk_chars}")
        if (self.sink_rate, self.sink_channels) != (RATE, 1):
            block_ms = 4096 / (2 * self.sink_channels * self.sink_rate) * 1000
            parts.append(
                f"pipe sink {self.sink_rate} Hz x{self.sink_channels} ({block_ms:.0f} ms blocks)"
            )
        if self.pulse_latency_msec is not None:
            parts.append(f"PULSE_LATENCY_MSEC={self.pulse_latency_msec}")
        if self.max_concurrent is not None:
            parts.append(f"max_concurrent {self.max_concurrent}")
        if self.lookahead is not None:
            parts.append(f"LOOKAHEAD_CHUNKS {self.lookahead}")
        if self.mem_pattern is not None:
            parts.append(f"enable_mem_pattern {self.mem_pattern}")
        return ", ".join(parts) or (
            "defaults: latency 50 ms, block 512, first chunk 40, 2 workers, lookahead 2"
        )


class Rig:
    """Broker, sound card and recorder for one benchmark; daemons come and go."""

    def __init__(self, root: Path, data_dir: Path) -> None:
        self.root = root
        self.data_dir = data_dir
        self.broker = Broker(root)
        self.broker.start()
        self.rec = Recorder(self.broker.port, ["edge-tts/#"])
        self.cards: dict[tuple[int, int], Card] = {}
        self.runs = 0
        self.voice: str | None = None  # which model the first daemon loaded

    def card(self, rate: int = RATE, channels: int = 1) -> Card:
        key = (rate, channels)
        if key not in self.cards:
            card = Card(Path(tempfile.mkdtemp(prefix="vc", dir=self.root)), rate, channels)
            card.start()
            self.cards[key] = card
        return self.cards[key]

    @contextlib.contextmanager
    def daemon(
        self,
        knobs: Knobs = Knobs("default"),
        trace: bool = False,
        **overrides: Any,
    ) -> Iterator[Daemon]:
        self.runs += 1
        device = f"bench{self.runs}"
        home = self.root / f"d{self.runs}"
        home.mkdir()
        settings: dict[str, Any] = {
            "device_id": device,
            "log_level": "INFO",
            "telemetry": {"interval": 2},
            "synthesis": {"preload": True},
        }
        settings["audio"] = {}
        if knobs.block_frames is not None:
            settings["audio"]["block_frames"] = knobs.block_frames
        if knobs.latency is not None:
            settings["audio"]["latency_ms"] = round(knobs.latency * 1000)
        if knobs.first_chunk_chars is not None:
            settings["synthesis"]["first_chunk_chars"] = knobs.first_chunk_chars
        if knobs.max_concurrent is not None:
            settings["synthesis"]["max_concurrent"] = knobs.max_concurrent
        for key, value in overrides.items():
            if isinstance(value, dict) and isinstance(settings.get(key), dict):
                settings[key] = {**settings[key], **value}
            else:
                settings[key] = value
        config = daemon_config(home, self.broker.port, **settings)
        card = self.card(knobs.sink_rate, knobs.sink_channels)
        env = {**card.env, "EDGE_TTS_DATA_DIR": str(self.data_dir)}
        if knobs.pulse_latency_msec is not None:
            env["PULSE_LATENCY_MSEC"] = str(knobs.pulse_latency_msec)
        trace_path = home / "trace.jsonl" if trace else None
        if trace or knobs.needs_shim:
            opts = {
                "lookahead": knobs.lookahead,
                "mem_pattern": knobs.mem_pattern,
                "trace": str(trace_path) if trace_path else None,
            }
            env[SHIM_ENV] = json.dumps(opts)
            proc: DaemonProcess = ShimDaemon(home, config, env=env)
        else:
            proc = DaemonProcess(home, config, env=env)
        proc.start()
        running = Daemon(self, device, proc, card, knobs, trace_path)
        try:
            proc.wait_ready(timeout=120)
            if self.voice is None:
                self.voice = running.voice_check(int8_digest())
            yield running
        except BaseException:
            log(f"--- daemon log ({home / 'daemon.log'}) ---\n{proc.log()[-3000:]}")
            raise
        finally:
            if proc.running():
                with contextlib.suppress(Exception):
                    proc.terminate(timeout=15)
            proc.close()

    def close(self) -> None:
        self.rec.close()
        for card in self.cards.values():
            card.stop()
        self.broker.stop()


@dataclass
class Daemon:
    rig: Rig
    device: str
    proc: DaemonProcess
    card: Card
    knobs: Knobs
    trace_path: Path | None
    events: Events = field(init=False)
    counter: int = 0

    def __post_init__(self) -> None:
        self.events = Events(self.rig.rec, f"edge-tts/{self.device}/events")

    @property
    def say_topic(self) -> str:
        return f"edge-tts/{self.device}/say"

    def next_id(self, tag: str) -> str:
        self.counter += 1
        return f"{tag}-{self.counter}"

    def rss_mb(self) -> float:
        import psutil

        assert self.proc.proc is not None
        return float(psutil.Process(self.proc.proc.pid).memory_info().rss) / MB

    def payload(self, rid: str, text: str, **extra: Any) -> str:
        return json.dumps({"id": rid, "text": text, **extra})

    def speak(self, text: str, tag: str, timeout: float = 60) -> dict[str, Any]:
        """Publish one request, wait for its final event; sound-out and daemon figures."""
        time.sleep(SETTLE_S)
        mark = self.card.mark()
        rid = self.next_id(tag)
        sent = time.monotonic()
        self.rig.rec.publish(self.say_topic, self.payload(rid, text))
        self.events.wait([rid], timeout)
        return self._figures(rid, text, sent, mark)

    def _figures(self, rid: str, text: str, sent: float, mark: int) -> dict[str, Any]:
        stamp, event = self.events.final[rid]
        onset = self.card.onset(mark)
        deadline = time.monotonic() + 2
        while onset is None and time.monotonic() < deadline:
            time.sleep(0.05)
            onset = self.card.onset(mark)
        return {
            "id": rid,
            "text": text,
            "chars": len(text),
            "event": event["event"],
            "sent": sent,
            "sound_ms": None if onset is None else round((onset[0] - sent) * 1000, 1),
            "sound_exact_ms": None if onset is None else round((onset[1] - sent) * 1000, 1),
            "daemon_ttfa_ms": event.get("time_to_first_audio_ms"),
            "queue_wait_ms": event.get("queue_wait_ms"),
            "audio_ms": event.get("audio_ms"),
            "synthesis_ms": event.get("synthesis_ms"),
            "chunks": event.get("chunks"),
            "final_at": stamp,
        }

    def voice_check(self, expected: str | None) -> str:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            telemetry = self.events.latest_telemetry(self.device)
            if telemetry is not None:
                digest = telemetry.get("voices", {}).get("default", {}).get("sha256")
                if digest:
                    ok = (
                        "INT8 build, digest matches its manifest"
                        if digest == expected
                        else ("NOT the INT8 build")
                    )
                    return f"{ok} (sha256 {digest[:12]}...)"
            time.sleep(0.2)
        return "unknown (no telemetry)"

    def underruns(self) -> int | None:
        telemetry = self.events.latest_telemetry(self.device)
        if telemetry is None:
            return None
        value = telemetry.get("counters", {}).get("underruns")
        return int(value) if value is not None else None

    def trace(self) -> dict[str, dict[str, Any]]:
        if self.trace_path is None or not self.trace_path.exists():
            return {}
        lines = self.trace_path.read_text().splitlines()
        return {entry["id"]: entry for entry in map(json.loads, lines) if entry.get("id")}


# --- phases ----------------------------------------------------------------------------


def phase_sequential(d: Daemon, texts: list[str], rounds: int) -> dict[str, Any]:
    rss_start = d.rss_mb()
    rows = []
    for r in range(rounds):
        for text in texts:
            rows.append(d.speak(text, "seq"))
        log(f"  sequential round {r + 1}/{rounds}: {len(rows)} requests")
    return {
        "requests": len(rows),
        "sound_ms": stats([row["sound_ms"] for row in rows]),
        "sound_exact_ms": stats([row["sound_exact_ms"] for row in rows]),
        "daemon_ttfa_ms": stats([row["daemon_ttfa_ms"] for row in rows]),
        "all_finished": all(row["event"] == "finished" for row in rows),
        "rss_mb_start": round(rss_start, 1),
        "rss_mb_end": round(d.rss_mb(), 1),
        "underruns": d.underruns(),
        "rows": rows,
    }


def phase_length(
    d: Daemon, rounds: int, per_kind: int, synthesis: dict[str, Any]
) -> dict[str, Any]:
    from edge_tts.text import prepare  # the daemon's split, with its limits

    limits = {
        "max_chunk_chars": synthesis.get("max_chunk_chars", 200),
        "first_chunk_chars": synthesis.get("first_chunk_chars", 60),
    }

    short_rows: list[dict[str, Any]] = []
    long_rows: list[dict[str, Any]] = []
    for r in range(rounds):
        for i in range(per_kind):  # interleaved: short, long, short, long, ...
            short_rows.append(d.speak(SHORT_TEXTS[i % len(SHORT_TEXTS)], "short"))
            long_rows.append(d.speak(LONG_TEXTS[i % len(LONG_TEXTS)], "long"))
        log(f"  length round {r + 1}/{rounds}")
    out: dict[str, Any] = {}
    for kind, rows in (("short", short_rows), ("long", long_rows)):
        out[kind] = {
            "requests": len(rows),
            "chars_median": statistics.median(row["chars"] for row in rows),
            "first_chunk_chars_median": statistics.median(
                len(prepare(row["text"], **limits)[0]) for row in rows
            ),
            "sound_ms": stats([row["sound_ms"] for row in rows]),
            "sound_exact_ms": stats([row["sound_exact_ms"] for row in rows]),
            "daemon_ttfa_ms": stats([row["daemon_ttfa_ms"] for row in rows]),
            "rows": rows,
        }
    return out


def phase_burst2(d: Daemon, texts: list[str], bursts: int) -> dict[str, Any]:
    second = Recorder(d.rig.broker.port, [])
    first_rows: list[dict[str, Any]] = []
    next_rows: list[dict[str, Any]] = []
    try:
        for b in range(bursts):
            time.sleep(SETTLE_S)
            mark = d.card.mark()
            pair = [texts[(2 * b) % len(texts)], texts[(2 * b + 1) % len(texts)]]
            ids = [d.next_id("b2"), d.next_id("b2")]
            sent: dict[str, float] = {}
            barrier = threading.Barrier(2)

            def publish(
                client: Recorder,
                rid: str,
                text: str,
                barrier: threading.Barrier = barrier,
                sent: dict[str, float] = sent,
            ) -> None:
                barrier.wait()
                sent[rid] = time.monotonic()
                client.publish(d.say_topic, d.payload(rid, text))

            threads = [
                threading.Thread(target=publish, args=(client, rid, text))
                for client, rid, text in zip((d.rig.rec, second), ids, pair, strict=True)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            d.events.wait(ids, 90)
            played = sorted(ids, key=lambda rid: d.events.started.get(rid, float("inf")))
            text_of = dict(zip(ids, pair, strict=True))
            first = d._figures(played[0], text_of[played[0]], sent[played[0]], mark)
            first["burst_sound_ms"] = (
                None
                if first["sound_ms"] is None
                else round(first["sound_ms"] + (sent[played[0]] - min(sent.values())) * 1000, 1)
            )
            first_rows.append(first)
            _, ev = d.events.final[played[1]]
            ttfa, wait = ev.get("time_to_first_audio_ms"), ev.get("queue_wait_ms")
            next_rows.append(
                {
                    "id": played[1],
                    "daemon_ttfa_ms": ttfa,
                    "queue_wait_ms": wait,
                    "handover_ms": None if ttfa is None or wait is None else round(ttfa - wait, 1),
                }
            )
        log(f"  burst2: {bursts} bursts")
    finally:
        second.close()
    return {
        "bursts": bursts,
        "first_sound_ms": stats([row["sound_ms"] for row in first_rows]),
        "first_sound_exact_ms": stats([row["sound_exact_ms"] for row in first_rows]),
        "first_daemon_ttfa_ms": stats([row["daemon_ttfa_ms"] for row in first_rows]),
        "second_daemon_ttfa_ms": stats([row["daemon_ttfa_ms"] for row in next_rows]),
        "second_handover_ms": stats([row["handover_ms"] for row in next_rows]),
        "underruns": d.underruns(),
        "first_rows": first_rows,
        "second_rows": next_rows,
    }


def phase_burst100(d: Daemon, count: int, speed: float | None) -> dict[str, Any]:
    ids = [d.next_id("b100") for _ in range(count)]
    extra = {"speed": speed} if speed else {}
    time.sleep(SETTLE_S)
    started = time.monotonic()
    infos = [
        d.rig.rec.client.publish(
            d.say_topic, d.payload(rid, f"Burst message {i + 1}.", **extra), qos=1
        )
        for i, rid in enumerate(ids)
    ]
    for info in infos:
        info.wait_for_publish(30)
    published = time.monotonic()
    d.events.wait(ids, 60 + 5 * count)
    finals = [d.events.final[rid][1]["event"] for rid in ids]
    last = max(d.events.final[rid][0] for rid in ids)
    return {
        "requests": count,
        "finished": finals.count("finished"),
        "rejected": finals.count("rejected"),
        "other_final": len(finals) - finals.count("finished") - finals.count("rejected"),
        "rejection_reasons": sorted(
            {str(d.events.final[r][1].get("reason")) for r in ids if r in d.events.final} - {"None"}
        ),
        "duplicate_final_events": len(d.events.duplicates),
        "publish_s": round(published - started, 2),
        "drain_s": round(last - started, 2),
        "none_lost": len(finals) == count,
    }


def phase_rss(d: Daemon, wav_dir: Path, total: int, every: int) -> dict[str, Any]:
    samples = [(0, d.rss_mb())]
    started = time.monotonic()
    done = 0
    while done < total:
        ids = []
        infos = []
        for k in range(every):
            i = done + k + 1
            text = RSS_TEXTS[i % len(RSS_TEXTS)].format(i=i, j=i % 37)
            rid = d.next_id("rss")
            ids.append(rid)
            infos.append(d.rig.rec.client.publish(d.say_topic, d.payload(rid, text), qos=1))
        for info in infos:
            info.wait_for_publish(30)
        d.events.wait(ids, 300)
        done += every
        samples.append((done, d.rss_mb()))
        for wav in wav_dir.glob("*.wav"):
            wav.unlink()
        log(f"  rss: {done}/{total} requests, RSS {samples[-1][1]:.1f} MB")
    finals = [e["event"] for _, e in d.events.final.values() if e.get("id", "").startswith("rss")]
    steady = [mb for n, mb in samples if n >= every]
    return {
        "requests": total,
        "sample_every": every,
        "samples_mb": [[n, round(mb, 1)] for n, mb in samples],
        "start_mb": round(samples[0][1], 1),
        "after_first_batch_mb": round(steady[0], 1),
        "max_mb": round(max(mb for _, mb in samples), 1),
        "steady_max_mb": round(max(steady), 1),
        "end_mb": round(samples[-1][1], 1),
        "growth_total_mb": round(samples[-1][1] - samples[0][1], 1),
        "growth_after_first_batch_mb": round(samples[-1][1] - steady[0], 1),
        "finished": finals.count("finished"),
        "elapsed_s": round(time.monotonic() - started, 1),
    }


# --- investigation: where TTFA goes, and which knobs move it ---------------------------

BREAKDOWN = (  # (key, label, from, to): consecutive stamps of one request
    ("mqtt", "MQTT: publish -> daemon received", "sent", "received_at"),
    ("plan", "received -> planned (worker pick-up + text front-end)", "received_at", "plan_end"),
    (
        "pickup",
        "planned -> 1st chunk synthesis starts (worker hand-off)",
        "plan_end",
        "synth0_start",
    ),
    (
        "synth0",
        "1st piece synthesized (phonemes, encoder, 1st window)",
        "synth0_start",
        "synth0_end",
    ),
    (
        "handoff",
        "1st piece ready -> written into the ring (playback thread)",
        "synth0_end",
        "write0",
    ),
    ("ring", "in the ring -> a PortAudio callback takes it", "write0", "first_sample_at"),
    ("lead", "the voice's own lead-in silence (in the audio)", "first_sample_at", "loud_handed"),
    ("out", "loud sample to ALSA -> out of the sound server (block)", "loud_handed", "sound"),
    ("block", "onset's offset inside the sink's block", "sound", "sound_exact"),
)


def breakdown_samples(
    traces: dict[str, dict[str, Any]], rows: list[dict[str, Any]]
) -> dict[str, list[float]]:
    """Per BREAKDOWN key, the milliseconds each request spent there; plus chunk0_chars."""
    parts: dict[str, list[float]] = {key: [] for key, _, _, _ in BREAKDOWN}
    parts["chunk0_chars"] = []
    for row in rows:
        t = traces.get(row["id"])
        if t is None or row["sound_ms"] is None or t.get("first_sample_at") is None:
            continue
        stamps = dict(t)
        stamps["sent"] = row["sent"]
        stamps["sound"] = row["sent"] + row["sound_ms"] / 1000
        stamps["sound_exact"] = row["sent"] + row["sound_exact_ms"] / 1000
        stamps["loud_handed"] = t["first_sample_at"] + (t.get("lead_in_s") or 0.0)
        for key, _, a, b in BREAKDOWN:
            if stamps.get(a) is not None and stamps.get(b) is not None:
                parts[key].append((stamps[b] - stamps[a]) * 1000)
        parts["chunk0_chars"].append(float(len(t.get("chunk0_text", ""))))
    return parts


def medians(parts: dict[str, list[float]]) -> dict[str, float | None]:
    return {k: round(statistics.median(v), 1) if v else None for k, v in parts.items()}


_OUTPUT_KNOBS: dict[str, Any] = {
    "latency": 0.03,
    "block_frames": 256,
    "sink_rate": 48000,
    "sink_channels": 2,
    "pulse_latency_msec": 20,
}
SWEEP = (
    Knobs("baseline"),
    # the output path
    Knobs("latency 30 ms", latency=0.03),
    Knobs("block 256", block_frames=256),
    Knobs("latency 30 ms + block 256", latency=0.03, block_frames=256),
    Knobs("sink 48 kHz stereo (21 ms blocks)", sink_rate=48000, sink_channels=2),
    Knobs("PULSE_LATENCY_MSEC=20 + block 256", pulse_latency_msec=20, block_frames=256),
    Knobs("all output knobs", **_OUTPUT_KNOBS),
    # the first chunk's synthesis
    Knobs("max_concurrent 1", max_concurrent=1),
    Knobs("lookahead 1 (shim)", lookahead=1),
    Knobs("first chunk 30", first_chunk_chars=30),
    Knobs("first chunk 30 + max_concurrent 1", first_chunk_chars=30, max_concurrent=1),
    # everything
    Knobs("output + max_concurrent 1", max_concurrent=1, **_OUTPUT_KNOBS),
    Knobs(
        "output + max_conc. 1 + first chunk 30",
        max_concurrent=1,
        first_chunk_chars=30,
        **_OUTPUT_KNOBS,
    ),
)


RSS_SWEEP = (
    Knobs("defaults"),
    Knobs("enable_mem_pattern off", mem_pattern=False),
    Knobs("max_concurrent 1", max_concurrent=1),
    Knobs("mem_pattern off + max_concurrent 1", mem_pattern=False, max_concurrent=1),
)


def investigate(
    rig: Rig, texts: list[str], per_config: int, rounds: int, only: list[str] | None = None
) -> list[dict[str, Any]]:
    """Every SWEEP config (or those named in `only`), `per_config` requests per round; the
    config order rotates each round (a fresh daemon each time, warmed by one unmeasured
    request)."""
    sweep = [k for k in SWEEP if not only or k.name in only]
    if not sweep:
        raise SystemExit(f"--sweep: no such config; known: {', '.join(k.name for k in SWEEP)}")
    rows: dict[str, list[dict[str, Any]]] = {k.name: [] for k in sweep}
    parts: dict[str, dict[str, list[float]]] = {k.name: {} for k in sweep}
    underruns: dict[str, int] = {k.name: 0 for k in sweep}
    for r in range(rounds):
        shift = r % len(sweep)
        for knobs in [*sweep[shift:], *sweep[:shift]]:
            log(f"  round {r + 1}/{rounds}, knobs: {knobs.name}")
            with rig.daemon(knobs, trace=True) as d:
                d.speak("Ready.", "warm")
                new = [
                    d.speak(texts[(r * per_config + i) % len(texts)], "k")
                    for i in range(per_config)
                ]
                time.sleep(0.3)
                for key, values in breakdown_samples(d.trace(), new).items():
                    parts[knobs.name].setdefault(key, []).extend(values)
                rows[knobs.name].extend(new)
                underruns[knobs.name] += d.underruns() or 0
    results = []
    for knobs in sweep:
        got = rows[knobs.name]
        results.append(
            {
                "name": knobs.name,
                "knobs": knobs.describe(),
                "requests": len(got),
                "finished": sum(row["event"] == "finished" for row in got),
                "sound_ms": stats([row["sound_ms"] for row in got]),
                "sound_exact_ms": stats([row["sound_exact_ms"] for row in got]),
                "daemon_ttfa_ms": stats([row["daemon_ttfa_ms"] for row in got]),
                "underruns": underruns[knobs.name],
                "breakdown": medians(parts[knobs.name]),
                "rows": got,
            }
        )
    return results


# --- the shim: the daemon with a PortAudio latency and a per-request trace ------------


def shim_main(config: Path) -> int:
    """Runs in the daemon's process: patch, then `edge-ttsd run --config CONFIG`."""
    opts: dict[str, Any] = json.loads(os.environ.get(SHIM_ENV, "{}"))
    from edge_tts import cli

    if opts.get("lookahead") is not None:
        import edge_tts.pipeline as pipeline

        pipeline.LOOKAHEAD_CHUNKS = int(opts["lookahead"])  # read at run time by _pick_task
    if opts.get("mem_pattern") is not None:
        import edge_tts.voice.model as model

        plain_options = model.session_options

        def session_options(threads: int) -> Any:
            options = plain_options(threads)
            options.enable_mem_pattern = bool(opts["mem_pattern"])
            return options

        setattr(model, "session_options", session_options)  # noqa: B010 - looked up per load
    if opts.get("trace"):
        install_trace(Path(opts["trace"]))
    return cli.main(["run", "--config", str(config)])


def install_trace(path: Path) -> None:
    import numpy as np

    import edge_tts.app as app
    import edge_tts.audio.player as player
    import edge_tts.pipeline as pipeline

    out = path.open("a", buffering=1)
    lock = threading.Lock()
    marks: dict[str, dict[str, Any]] = {}

    def entry(rid: str) -> dict[str, Any]:
        return marks.setdefault(rid, {})

    def wrap(
        cls: type, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]
    ) -> None:
        setattr(cls, name, make(getattr(cls, name)))

    def plan(inner: Callable[..., Any]) -> Callable[..., Any]:
        def traced(self: Any, job: Any) -> Any:
            e = entry(job.request.id)
            e["plan_start"] = time.monotonic()
            result = inner(self, job)
            e["plan_end"] = time.monotonic()
            return result

        return traced

    current = threading.local()  # the request a synthesis worker is rendering

    def synthesize(inner: Callable[..., Any]) -> Callable[..., Any]:
        def traced(self: Any, job: Any, index: int) -> Any:
            if index == 0:
                e = entry(job.request.id)
                e["synth0_start"] = time.monotonic()
                e["chunk0_text"] = job.chunks[0].text
            current.rid = job.request.id if index == 0 else None
            return inner(self, job, index)

        return traced

    plain_render = getattr(pipeline, "render")  # noqa: B009 - imported by name there

    def render(*args: Any, **kwargs: Any) -> Any:
        """Stamp the first piece of a request's first chunk: what playback waits for."""
        rid = getattr(current, "rid", None)
        for piece in plain_render(*args, **kwargs):
            if rid is not None:
                entry(rid).setdefault("synth0_end", time.monotonic())
            yield piece

    setattr(pipeline, "render", render)  # noqa: B010 - the pipeline calls it by module name

    def write(inner: Callable[..., Any]) -> Callable[..., Any]:
        def traced(self: Any, utterance: Any, pcm: Any, stop: Any) -> Any:
            e = entry(utterance.request_id)
            if "write0" not in e:
                e["write0"] = time.monotonic()
                loud = np.flatnonzero(np.abs(np.asarray(pcm, dtype=np.int32)) > LOUD)
                rate = utterance.sample_rate
                e["lead_in_s"] = float(loud[0]) / rate if loud.size else None
                e["chunk0_audio_s"] = len(pcm) / rate
            return inner(self, utterance, pcm, stop)

        return traced

    def finished(inner: Callable[..., Any]) -> Callable[..., Any]:
        def traced(self: Any, job: Any) -> Any:
            e = marks.pop(job.request.id, {})
            utt = job.utterance
            record = {
                "id": job.request.id,
                "received_at": job.request.received_at,
                "started_at": job.started_at,
                "first_sample_at": utt.first_sample_at if utt else None,
                "chunks": [len(c.text) for c in job.chunks or []],
                "chunk_synth_s": [round(c.synth_seconds, 4) for c in job.chunks or []],
                **e,
            }
            with lock:
                out.write(json.dumps(record) + "\n")
            return inner(self, job)

        return traced

    wrap(pipeline.Pipeline, "_plan", plan)
    wrap(pipeline.Pipeline, "_synthesize", synthesize)
    wrap(player.AlsaOutput, "write", write)
    wrap(player.WavDirOutput, "write", write)
    wrap(app.Reporter, "finished", finished)


# --- report ------------------------------------------------------------------------------


def verdict(ok: bool | None) -> str:
    return "n/a " if ok is None else ("PASS" if ok else "MISS")


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    length = result.get("length")
    if length:
        short = length["short"]["sound_ms"]["p50"]
        long = length["long"]["sound_ms"]["p50"]
        out.append(
            {
                "target": f"TTFA p50 (sound out) <= {TTFA_SHORT_P50_MAX_MS:.0f} ms, short sentence",
                "value": short,
                "verdict": verdict(short is not None and short <= TTFA_SHORT_P50_MAX_MS),
            }
        )
        ratio = None if not short or long is None else round(long / short, 2)
        out.append(
            {
                "target": f"independent of length: long p50 <= {LENGTH_RATIO_MAX} x short p50",
                "value": ratio,
                "verdict": verdict(None if ratio is None else ratio <= LENGTH_RATIO_MAX),
            }
        )
    burst = result.get("burst2")
    if burst:
        p99 = burst["first_sound_ms"]["p99"]
        out.append(
            {
                "target": f"p99 <= {BURST2_P99_MAX_MS:.0f} ms under a 2-request burst "
                "(sound out of the one that plays first)",
                "value": p99,
                "verdict": verdict(p99 is not None and p99 <= BURST2_P99_MAX_MS),
            }
        )
    rss = result.get("rss")
    if rss:
        out.append(
            {
                "target": f"steady RSS <= {STEADY_RSS_MAX_MB:.0f} MB (max after 1st batch)",
                "value": rss["steady_max_mb"],
                "verdict": verdict(rss["steady_max_mb"] <= STEADY_RSS_MAX_MB),
            }
        )
        out.append(
            {
                "target": f"RSS growth < {RSS_GROWTH_MAX_MB:.0f} MB over {rss['requests']} "
                "requests (end - after 1st batch)",
                "value": rss["growth_after_first_batch_mb"],
                "verdict": verdict(rss["growth_after_first_batch_mb"] < RSS_GROWTH_MAX_MB),
            }
        )
    for key in ("burst100_q128", "burst100_q32"):
        b = result.get(key)
        if b:
            out.append(
                {
                    "target": f"{key}: every request gets one final event (none lost)",
                    "value": f"{b['finished']} finished + {b['rejected']} rejected "
                    f"of {b['requests']}",
                    "verdict": verdict(b["none_lost"] and not b["duplicate_final_events"]),
                }
            )
    return out


def fmt(value: Any, spec: str = ".0f") -> str:
    return "-" if value is None else format(value, spec)


def print_report(result: dict[str, Any]) -> None:
    m = result["machine"]
    print(
        f"Daemon end to end{' (QUICK run)' if result['quick'] else ''} — Mosquitto, "
        f"`python -m edge_tts run`, PulseAudio pipe sink paced by the system clock"
    )
    print(
        f"machine: {m['cpu']}, {m['cpus']} CPUs, Python {m['python']}, onnxruntime "
        f"{m['onnxruntime']}, numpy {m['numpy']}; load avg {m['loadavg_start'][0]} -> "
        f"{m['loadavg_end'][0]}"
    )
    print(f"voice: {result.get('voice', '?')}")
    o = result.get("overrides") or {}
    if o.get("latency_s") is not None or o.get("set"):
        print(f"overrides: PortAudio latency {o.get('latency_s')} s; --set {o.get('set')}")
    print()

    def line(label: str, s: dict[str, Any]) -> None:
        print(
            f"  {label:44} {fmt(s['p50']):>6} {fmt(s['p95']):>6} {fmt(s['p99']):>6} "
            f"{fmt(s['max']):>6}  (n={s['n']})"
        )

    header = f"  {'TTFA (ms)':44} {'p50':>6} {'p95':>6} {'p99':>6} {'max':>6}"
    seq = result.get("sequential")
    if seq:
        print(f"sequential, 1 publisher, {seq['requests']} requests (corpus)")
        print(header)
        line("publish -> sound out (block stamp)", seq["sound_ms"])
        line("publish -> sound out (sample-accurate)", seq["sound_exact_ms"])
        line("daemon: received -> first sample to ALSA", seq["daemon_ttfa_ms"])
        print(
            f"  daemon RSS {seq['rss_mb_start']:.0f} -> {seq['rss_mb_end']:.0f} MB; "
            f"underruns {seq['underruns']}"
        )
        print()
    length = result.get("length")
    if length:
        print("short vs long sentences, interleaved")
        print(header)
        for kind in ("short", "long"):
            k = length[kind]
            first = k["first_chunk_chars_median"]
            label = f"{kind} ({k['chars_median']:.0f} chars, 1st chunk {first:.0f})"
            line(f"{label}: sound out (block)", k["sound_ms"])
            line(f"{kind}: sound out (sample-accurate)", k["sound_exact_ms"])
            line(f"{kind}: daemon received -> ALSA", k["daemon_ttfa_ms"])
        print()
    burst = result.get("burst2")
    if burst:
        print(f"2 publishers at once, {burst['bursts']} bursts")
        print(header)
        line("plays 1st: burst -> sound out (block)", burst["first_sound_ms"])
        line("plays 1st: sound out (sample-accurate)", burst["first_sound_exact_ms"])
        line("plays 1st: daemon received -> ALSA", burst["first_daemon_ttfa_ms"])
        line("plays 2nd: daemon received -> ALSA", burst["second_daemon_ttfa_ms"])
        line("plays 2nd: its turn -> first sample (hand-over)", burst["second_handover_ms"])
        print(f"  underruns {burst['underruns']}")
        print()
    for key in ("burst100_q128", "burst100_q32"):
        b = result.get(key)
        if b:
            print(
                f"{key} ({b['sink']}): {b['requests']} published in {b['publish_s']} s; "
                f"{b['finished']} finished, {b['rejected']} rejected, {b['other_final']} other; "
                f"duplicate finals {b['duplicate_final_events']}; drained in {b['drain_s']} s"
            )
            if b["rejection_reasons"]:
                print(f"  rejections: {'; '.join(b['rejection_reasons'])}")
    if result.get("burst100_q128") or result.get("burst100_q32"):
        print()
    rss = result.get("rss")
    if rss:
        samples = ", ".join(f"{n}:{mb:.0f}" for n, mb in rss["samples_mb"])
        print(
            f"daemon RSS over {rss['requests']} requests (wav-dir sink, short texts, "
            f"{rss['sample_every']} at a time; {rss['elapsed_s']} s)"
        )
        print(
            f"  start {rss['start_mb']} MB, after 1st batch {rss['after_first_batch_mb']}, "
            f"max {rss['max_mb']}, end {rss['end_mb']}; growth {rss['growth_total_mb']} "
            f"(from start), {rss['growth_after_first_batch_mb']} (after 1st batch)"
        )
        print(f"  samples (requests:MB) {samples}")
        print()
    rss_knobs = result.get("rss_knobs")
    if rss_knobs:
        print("daemon RSS per memory knob (wav-dir sink, MB)")
        print(f"  {'config':36} {'start':>6} {'1st batch':>9} {'max':>6} {'end':>6} {'growth':>7}")
        for r in rss_knobs:
            print(
                f"  {r['name']:36} {r['start_mb']:>6.0f} {r['after_first_batch_mb']:>9.0f} "
                f"{r['max_mb']:>6.0f} {r['end_mb']:>6.0f} {r['growth_after_first_batch_mb']:>7.1f}"
            )
        print()
    sweep = result.get("investigation")
    if sweep:
        print("TTFA investigation (trace shim): short sentences, one publisher; medians, ms")
        print(
            f"  {'config':38} {'ok':>5} {'sound':>6} {'exact':>6} {'daemon':>6} {'synth0':>6} "
            f"{'ring':>5} {'lead':>5} {'out':>5} {'block':>5} {'chars0':>6} {'xrun':>4}"
        )
        for cfg in sweep:
            med = cfg["breakdown"]
            print(
                f"  {cfg['name']:38} {cfg['finished']:>2}/{cfg['requests']:<2} "
                f"{fmt(cfg['sound_ms']['p50']):>6} {fmt(cfg['sound_exact_ms']['p50']):>6} "
                f"{fmt(cfg['daemon_ttfa_ms']['p50']):>6} {fmt(med['synth0']):>6} "
                f"{fmt(med['ring']):>5} {fmt(med['lead']):>5} {fmt(med['out']):>5} "
                f"{fmt(med['block']):>5} {fmt(med.get('chunk0_chars')):>6} "
                f"{fmt(cfg['underruns'], 'd'):>4}"
            )
        print(
            "  sound/exact: publish -> out of the sound server (block stamp / sample-accurate);"
            " daemon: its time_to_first_audio_ms;\n  synth0: 1st chunk synthesis; ring: ring ->"
            " PortAudio callback; lead: the voice's lead-in silence; out: loud sample handed\n"
            "  to ALSA -> block out of the sound server; block: onset offset in that block;"
            " chars0: 1st chunk length; xrun: underruns"
        )
        first, last = sweep[0], sweep[-1]
        print(f"\n  full breakdown (medians, ms)        {first['name']:>14} {last['name']:>40}")
        for key, label, _, _ in BREAKDOWN:
            a = first["breakdown"].get(key)
            b = last["breakdown"].get(key)
            print(f"    {label:62} {fmt(a, '.1f'):>7} {fmt(b, '.1f'):>9}")
        print()
    print("targets")
    for t in result["targets"]:
        print(f"  {t['verdict']:5} {t['target']:72} {t['value']}")
    print(f"\n({result['elapsed_s']:.0f} s)")


# --- main --------------------------------------------------------------------------------


def machine_info(load_before: tuple[float, float, float]) -> dict[str, Any]:
    """As bench/engine.py's (not imported: mypy would see that file under two names)."""
    import platform

    import numpy
    import onnxruntime

    model = platform.machine()
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    for line in lscpu.splitlines():
        if line.startswith("Model name:"):
            model = line.split(":", 1)[1].strip()
    return {
        "cpu": model,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "onnxruntime": onnxruntime.__version__,
        "numpy": numpy.__version__,
        "loadavg_start": [round(x, 2) for x in load_before],
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
    }


def int8_digest() -> str | None:
    from edge_tts.voice import files
    from edge_tts.voice.integrity import manifest_digest

    return manifest_digest(files.default_int8_path())


def run(args: argparse.Namespace) -> dict[str, Any]:
    from edge_tts.voice import files

    phases = set(args.only.split(",")) if args.only else set(PHASES)
    corpus = [line.strip() for line in CORPUS.read_text("utf-8").splitlines() if line.strip()]
    q = args.quick
    load_before = os.getloadavg()
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="ttsdb-"))  # short: unix socket paths are limited
    result: dict[str, Any] = {"benchmark": "daemon_e2e", "quick": q, "root": str(root)}
    rig = Rig(root, files.data_dir())
    main = Knobs("main", latency=args.latency)  # the phases' daemons (not the sweeps')
    sets = parse_sets(args.set)
    result["overrides"] = {"latency_s": args.latency, "set": args.set}

    def daemon(**overrides: Any) -> contextlib.AbstractContextManager[Daemon]:
        for key, value in sets.items():
            if isinstance(value, dict) and isinstance(overrides.get(key), dict):
                overrides[key] = {**overrides[key], **value}
            else:
                overrides[key] = value
        return rig.daemon(main, **overrides)

    try:
        if phases & {"sequential", "length", "burst2"}:
            log("daemon: defaults (alsa sink, queue 32)")
            with daemon() as d:
                d.speak("Ready.", "warm")  # the stream's first utterance is not measured
                if "sequential" in phases:
                    texts = corpus[:5] if q else corpus
                    result["sequential"] = phase_sequential(d, texts, 1 if q else 3)
                if "length" in phases:
                    synthesis = sets.get("synthesis", {})
                    result["length"] = phase_length(d, 1 if q else 4, 3 if q else 4, synthesis)
                if "burst2" in phases:
                    result["burst2"] = phase_burst2(d, corpus, 4 if q else 30)
        if "burst100" in phases:
            count = args.burst
            wav = {"sink": "wav-dir", "wav_dir": str(root / "burst-wav")}
            for key, size in (("burst100_q128", 128), ("burst100_q32", None)):
                queue = {"size": size} if size else {}
                sink = wav if q else {}
                where = "wav-dir" if q else "alsa"
                log(f"burst of {count}: queue {size or 'default (32)'}, sink {where}")
                with daemon(queue=queue, audio=sink) as d:
                    b = phase_burst100(d, count, None if q else 2.0)
                    b["sink"] = "wav-dir" if q else "alsa, speed 2"
                    b["queue_size"] = size or 32
                    result[key] = b
        if "rss" in phases:
            total = args.rss_requests or (200 if q else 1000)
            every = 50 if q else 100
            log(f"RSS over {total} requests (wav-dir)")
            wav = {"sink": "wav-dir", "wav_dir": str(root / "rss-wav")}
            with daemon(queue={"size": 128}, audio=wav) as d:
                result["rss"] = phase_rss(d, root / "rss-wav", total, every)
        if args.rss_knobs:
            total = args.rss_requests or (200 if q else 1000)
            every = 50 if q else 100
            wav = {"sink": "wav-dir", "wav_dir": str(root / "rss-wav")}
            result["rss_knobs"] = []
            for knobs in RSS_SWEEP:
                log(f"RSS over {total} requests: {knobs.name}")
                with rig.daemon(knobs, queue={"size": 128}, audio=wav) as d:
                    r = phase_rss(d, root / "rss-wav", total, every)
                    r.update(name=knobs.name, knobs=knobs.describe())
                    result["rss_knobs"].append(r)
        if args.investigate:
            short = [t for t in corpus if len(t) <= 45] + list(SHORT_TEXTS)
            only = args.sweep.split(",") if args.sweep else None
            result["investigation"] = investigate(rig, short, 4, 1 if q else 3, only)
    finally:
        rig.close()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    result["voice"] = rig.voice
    result["machine"] = machine_info(load_before)
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    result["targets"] = targets(result)
    return result


def parse_sets(pairs: list[str]) -> dict[str, Any]:
    """`section.key=VALUE` (VALUE is YAML) -> {"section": {"key": value}}, like --set."""
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs:
        dotted, sep, raw = pair.partition("=")
        if not sep:
            raise SystemExit(f"--set {pair!r}: expected KEY=VALUE")
        *parents, leaf = dotted.strip().split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = yaml.safe_load(raw)
    return out


PHASES = ("sequential", "length", "burst2", "burst100", "rss")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short run (a few minutes)")
    parser.add_argument("--only", help=f"comma-separated phases: {','.join(PHASES)}")
    parser.add_argument("--investigate", action="store_true", help="TTFA breakdown + knobs")
    parser.add_argument("--sweep", help="--investigate only these configs (names, comma-separated)")
    parser.add_argument(
        "--rss-knobs", action="store_true", help="RSS run again per memory knob (RSS_SWEEP)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="daemon setting for the phases, e.g. synthesis.max_concurrent=1 (repeatable)",
    )
    parser.add_argument(
        "--latency",
        type=float,
        help="PortAudio latency (s) for the phases' daemons (audio.latency_ms)",
    )
    parser.add_argument("--burst", type=int, default=100, help="requests in the big burst")
    parser.add_argument("--rss-requests", type=int, help="requests for the RSS run")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--json-out", type=Path, help="also write the results as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs)")
    parser.add_argument("--daemon-shim", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--config", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.daemon_shim:
        return shim_main(args.config)
    emit(run(args), args.json_out, args.json, print_report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
