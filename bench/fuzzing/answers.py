"""The ledger of a fuzz run: every payload sent, and every answer matched to its payload
(on its own response topic, or on the events topic for one sent alone), with what a
repeated (id, text) must get."""

from __future__ import annotations

import json
import time
from collections import Counter, OrderedDict
from typing import Any

from bench.daemon_rig import Rig
from edge_tts.messages.events import FINAL_KINDS

from .case import Case
from .mqtt5_client import Client, Inbound

# The daemon remembers the keys of its last 1,000 distinct plays (edge_tts/speech/dedupe.py,
# PlayedStore; the key is id + text, or topic + payload without an id): the same id and
# text again is a `duplicate` while its key is there, and plays again once it has gone.
PLAYED_HISTORY = 1000
HISTORY_MARGIN = 20  # keys this close to being dropped: either answer is right


class Ledger:
    def __init__(self, rig: Rig, client: Client, run_id: str) -> None:
        self.rig = rig
        self.client = client
        self.run_prefix = f"fuzz/{run_id}/r"
        self.say = rig.topic("say")
        self.events_topic = rig.topic("events")
        self.telemetry_topic = rig.topic("telemetry")
        self.cases: list[Case] = []  # in the order sent
        self.by_index: dict[int, Case] = {}
        self.by_id: dict[str, list[Case]] = {}
        self.outstanding: dict[int, Case] = {}
        self.lanes: Counter[str] = Counter()  # in flight per lane
        # The daemon's PlayedStore as we see it: keys in the order they were last played.
        self.history: OrderedDict[object, None] = OrderedDict()
        self.alone: Case | None = None
        self.idless_events = 0  # id-less final events on the events topic, not matched alone
        self.other_id_events = 0  # final events with an id no payload carried (daemon's ids)
        self.late: list[tuple[int, str]] = []
        self.stray_rt: list[str] = []
        self.nonfinal: Counter[str] = Counter()
        self.telemetry: dict[str, Any] | None = None
        self.telemetry_at = 0.0
        self._seen = 0
        self.last_answer = time.monotonic()

    # --- answers -------------------------------------------------------------------------

    def process(self) -> None:
        messages = self.client.messages
        while self._seen < len(messages):
            m = messages[self._seen]
            self._seen += 1
            if m.topic == self.telemetry_topic:
                self.telemetry, self.telemetry_at = json.loads(m.payload), m.at
            elif m.topic == self.events_topic:
                self._on_event(m)
            elif m.topic.startswith(self.run_prefix + "/"):
                self._on_response(m)

    def _on_event(self, m: Inbound) -> None:
        event = json.loads(m.payload)
        kind, rid = str(event.get("event")), event.get("id")
        if kind not in FINAL_KINDS:
            self.nonfinal[kind] += 1
            return
        owners = self.by_id.get(rid, []) if isinstance(rid, str) else []
        for case in owners:
            case.events_copies += 1
        alone = self.alone
        if alone is not None and (
            rid is None or rid == alone.sender_id or (not owners and alone.sender_id is None)
        ):
            self._final(alone, kind, event, m, via_events=True)
        elif rid is None:
            self.idless_events += 1
        elif not owners:
            self.other_id_events += 1

    def _on_response(self, m: Inbound) -> None:
        try:
            index = int(m.topic[len(self.run_prefix) + 1 :].split("/", 1)[0])
        except ValueError:
            self.stray_rt.append(m.topic[:100])
            return
        case = self.by_index.get(index)
        if case is None:
            self.stray_rt.append(m.topic[:100])
            return
        event = json.loads(m.payload)
        ok = m.correlation == case.correlation or (not m.correlation and not case.correlation)
        case.correlation_ok = ok if case.correlation_ok is None else case.correlation_ok and ok
        self._final(case, str(event.get("event")), event, m, via_events=False)

    def _final(
        self, case: Case, kind: str, event: dict[str, Any], m: Inbound, via_events: bool
    ) -> None:
        case.finals.append(kind)
        if len(case.finals) > 1:
            return
        if case.timed_out:
            self.late.append((case.index, kind))
        case.kind, case.answered_at = kind, m.at
        self.last_answer = m.at
        case.idless = not via_events and "id" not in event
        case.reason = event.get("reason")
        for name in ("audio_ms", "synthesis_ms"):
            value = event.get(name)
            if isinstance(value, (int, float)):
                setattr(case, name, float(value))
        if kind == "finished":
            self._played(case)
        self._settle(case)

    def _settle(self, case: Case) -> None:
        """No longer in flight (answered, timed out, or never published)."""
        if self.outstanding.pop(case.index, None) is not None:
            self.lanes[case.lane] -= 1
        if self.alone is case:
            self.alone = None

    def _played(self, case: Case) -> None:
        """As the daemon's PlayedStore.add(key). Payload ids are unique but for the
        dedupe_key cases, so (id, payload) stands for the daemon's (id, text)."""
        key: object = case.dedupe_key or (case.sender_id or "", case.payload)
        self.history[key] = None
        self.history.move_to_end(key)
        while len(self.history) > PLAYED_HISTORY:
            self.history.popitem(last=False)

    def _repeat_expectation(self, case: Case) -> str:
        """What a payload whose (id, text) may repeat must get: `duplicate` while an
        earlier one is in flight or its key is among the daemon's last PLAYED_HISTORY
        plays, `play` once it has gone ("replay", either, when it is about to go: plays
        we have not seen yet may have pushed it out)."""
        key = case.dedupe_key
        assert key is not None
        earlier = [c for c in self.by_id.get(key[0], []) if c is not case and c.dedupe_key == key]
        if any(c.kind is None and not c.timed_out for c in earlier):
            return "duplicate"
        if key not in self.history:
            return "play"
        left = PLAYED_HISTORY - len(self.history) + list(self.history).index(key)
        return "duplicate" if left >= self.lanes["speak"] + HISTORY_MARGIN else "replay"
