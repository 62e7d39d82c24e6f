"""Broker, sound cards and recorder for one benchmark; daemons come and go.

The daemon is bench/daemon_rig.py's launcher (`edge-ttsd run --config F --set K=V ...`,
or bench/e2e/shim.py with the same arguments for the knobs no setting reaches). What a
request went through comes from its public events: `queued` (its `ts` is when the
daemon had it), `started`, and `finished` (`time_to_first_audio_ms`, `stages_ms`,
`first_chunk_chars`, ...).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.daemon_rig import running, voice_check
from bench.report_io import MB
from edge_tts.messages.events import FINAL_KINDS
from tests.support.broker import Broker, Recorder
from tests.support.daemon_proc import DaemonProcess
from tests.support.soundcard import VirtualSoundCard

from .knobs import RATE, Knobs
from .shim import SHIM_ENV

LOUD = 300  # int16 threshold, as VirtualSoundCard.first_sound_time
SETTLE_S = 0.7  # after `finished`: the tail still in ALSA/PulseAudio comes out first


class Events:
    """A device's events by request id, read incrementally from a Recorder's messages."""

    def __init__(self, rec: Recorder, topic: str) -> None:
        self.rec = rec
        self.topic = topic
        self._seen = 0
        self.final: dict[str, tuple[float, dict[str, Any]]] = {}
        self.queued_ts: dict[str, float] = {}  # the daemon's wall clock when it had it
        self.started: dict[str, float] = {}  # our monotonic clock when `started` came
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
            if kind == "queued" and rid:
                self.queued_ts[rid] = float(event["ts"])
            elif kind == "started" and rid:
                self.started[rid] = stamp
            elif kind in FINAL_KINDS:
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


class Rig:
    """Broker, sound cards and recorder; `daemon()` starts one daemon for a `with`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.broker = Broker(root)
        self.broker.start()
        self.rec = Recorder(self.broker.port, ["edge-tts/#"])
        self.cards: dict[tuple[int, int], VirtualSoundCard] = {}
        self.runs = 0
        self.voice: str | None = None  # which model the first daemon loaded

    def card(self, rate: int = RATE, channels: int = 1) -> VirtualSoundCard:
        key = (rate, channels)
        if key not in self.cards:
            root = Path(tempfile.mkdtemp(prefix="vc", dir=self.root))
            card = VirtualSoundCard(root, rate, channels)
            card.start()
            self.cards[key] = card
        return self.cards[key]

    @contextlib.contextmanager
    def daemon(self, knobs: Knobs, sets: Sequence[str] = (), **overrides: Any) -> Iterator[Daemon]:
        """One daemon with `knobs`, `overrides` (config sections) and `sets` (passed to
        `edge-ttsd run --set`: they win over the config file); READY when it yields."""
        self.runs += 1
        device = f"bench{self.runs}"
        card = self.card(knobs.sink_rate, knobs.sink_channels)
        env = dict(card.env)
        if knobs.pulse_latency_msec is not None:
            env["PULSE_LATENCY_MSEC"] = str(knobs.pulse_latency_msec)
        module = "edge_tts"
        if knobs.needs_shim:
            shim = {"lookahead": knobs.lookahead, "mem_pattern": knobs.mem_pattern}
            env[SHIM_ENV] = json.dumps(shim)
            module = "bench.e2e.shim"
        home = self.root / f"d{self.runs}"
        settings = knobs.settings(device, overrides)
        with running(
            home, self.broker.port, settings, env=env, sets=sets, module=module, ready_timeout=120
        ) as proc:
            daemon = Daemon(self, device, proc, card, knobs)
            if self.voice is None:
                self.voice = daemon.voice_check()
            yield daemon

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
    card: VirtualSoundCard
    knobs: Knobs
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
        sent, sent_wall = time.monotonic(), time.time()
        self.rig.rec.publish(self.say_topic, self.payload(rid, text))
        self.events.wait([rid], timeout)
        return self.figures(rid, text, sent, mark, sent_wall)

    def figures(
        self, rid: str, text: str, sent: float, mark: int, sent_wall: float | None = None
    ) -> dict[str, Any]:
        stamp, event = self.events.final[rid]
        onset = self.card.first_sound(mark, LOUD)
        deadline = time.monotonic() + 2
        while onset is None and time.monotonic() < deadline:
            time.sleep(0.05)
            onset = self.card.first_sound(mark, LOUD)
        first = self.card.first_sound(mark, threshold=0)  # the utterance's first sample
        queued = self.events.queued_ts.get(rid)
        return {
            "id": rid,
            "text": text,
            "chars": len(text),
            "event": event["event"],
            "sent": sent,
            "mqtt_ms": None if queued is None or sent_wall is None else (queued - sent_wall) * 1e3,
            "sound_ms": None if onset is None else round((onset[0] - sent) * 1000, 1),
            "sound_exact_ms": None if onset is None else round((onset[1] - sent) * 1000, 1),
            "lead_in_ms": None if onset is None or first is None else (onset[1] - first[1]) * 1e3,
            "daemon_ttfa_ms": event.get("time_to_first_audio_ms"),
            "queue_wait_ms": event.get("queue_wait_ms"),
            "stages_ms": event.get("stages_ms") or {},
            "first_chunk_chars": event.get("first_chunk_chars"),
            "audio_ms": event.get("audio_ms"),
            "synthesis_ms": event.get("synthesis_ms"),
            "chunks": event.get("chunks"),
            "final_at": stamp,
        }

    def voice_check(self) -> str:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            telemetry = self.events.latest_telemetry(self.device)
            if telemetry is not None and telemetry.get("voices"):
                return voice_check(telemetry)
            time.sleep(0.2)
        return voice_check(None)

    def underruns(self) -> int | None:
        telemetry = self.events.latest_telemetry(self.device)
        if telemetry is None:
            return None
        value = telemetry.get("counters", {}).get("underruns")
        return int(value) if value is not None else None
