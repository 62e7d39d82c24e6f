"""The run: payloads out in two lanes, every answer matched to its payload.

Lanes (Case.lane): payloads that may be queued ("speak": played, expired, duplicate or
any) are kept at most --window in flight, below the daemon's queue; payloads expected to
be refused on arrival ("reject") go beside them, up to --reject-window in flight: they
never wait behind a synthesis. Payloads are made in index order and each lane sends in
that order; the reject lane runs at most --window spoken payloads ahead. A heavy payload
waits until no spoken one is in flight and holds the speak lane until it is answered
(the reject lane goes on, further ahead). Payloads without a usable response topic
(Case.alone) are kept for a batch of --alone-batch, sent once nothing at all is in
flight, one at a time: their final events can only be matched on the events topic.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from bench.daemon_rig import Rig
from bench.report_io import log

from .answers import Ledger
from .case import Case
from .mix import make_case
from .mqtt5_client import Client

HEAVY_TIMEOUT_S = 600.0
SAMPLE_EVERY = 100  # payloads between RSS samples (and WAV sweeps)
AHEAD_WHILE_HEAVY = 8  # x --window: how far the reject lane may run while a heavy one plays
# A low-priority request waits while higher ones keep arriving: no new payload that may
# play goes out while one has waited this long (answer p99 was 65-77 s without it).
STARVING_S = 15.0


class Fuzz(Ledger):
    """Sends the payloads (the schedule above) and keeps the Ledger of their answers."""

    def __init__(self, args: argparse.Namespace, rig: Rig, client: Client, run_id: str) -> None:
        super().__init__(rig, client, run_id)
        self.args = args
        self.samples: list[tuple[int, float]] = []
        self.crash: dict[str, Any] | None = None
        self._counted = 0  # payloads sent that _every has seen
        self.started = time.monotonic()
        self.elapsed = 0.0
        self.heavy_s = 0.0  # wall time with a heavy payload in flight
        self.alone_s = 0.0  # wall time spent draining for and sending the alone batches
        self.cpu_s: dict[str, float] = {}  # CPU seconds used during the payloads
        self.stall: dict[str, Any] | None = None

    # --- sending -------------------------------------------------------------------------

    def send(self, case: Case) -> None:
        self.cases.append(case)
        self.by_index[case.index] = case
        if case.sender_id is not None:
            self.by_id.setdefault(case.sender_id, []).append(case)
        if case.dedupe_key is not None:
            case.expect = self._repeat_expectation(case)
        case.sent_at = time.monotonic()
        self.outstanding[case.index] = case
        self.lanes[case.lane] += 1
        if case.alone:
            self.alone = case  # its final event is matched on the events topic
        try:
            self.client.publish(self.say, case, self.run_prefix)
        except (ValueError, TypeError) as err:  # paho refused it: nothing was sent
            case.publish_error = repr(err)
            self._settle(case)

    def expire_outstanding(self) -> None:
        now = time.monotonic()
        for case in list(self.outstanding.values()):
            timeout = HEAVY_TIMEOUT_S if case.heavy else float(self.args.answer_timeout)
            if case.sent_at is not None and now - case.sent_at > timeout:
                case.timed_out = True
                self._settle(case)
                log(f"  no answer to payload {case.index} ({case.klass}: {case.note[:60]})")

    def pump(self, until: Callable[[], bool]) -> bool:
        """Process answers until `until()` holds; False if the daemon died or stalls."""
        while not until():
            if not self.step(1.0):
                return False
        return True

    def step(self, timeout: float) -> bool:
        """Wait up to `timeout` for a message and process what came; False if the daemon
        died or stalls."""
        if not self.rig.alive():
            self.note_crash()
            return False
        heavy = self.heavy_out()
        started = time.monotonic()
        if self.client.wait(self._seen, timeout):
            self.process()
        if heavy:
            self.heavy_s += time.monotonic() - started
        self.expire_outstanding()
        return not self.stalled()

    def heavy_out(self) -> bool:
        return any(c.heavy for c in self.outstanding.values())

    def stalled(self) -> bool:
        """Payloads wait and nothing was answered for --stall s (600 s with a heavy one
        out): the daemon is stuck. Recorded with its last telemetry; the run stops."""
        if not self.outstanding:
            return False
        limit = HEAVY_TIMEOUT_S if self.heavy_out() else self.args.stall
        silent = time.monotonic() - self.last_answer
        if silent <= limit:
            return False
        telemetry = self.telemetry or {}
        self.stall = {
            "silent_s": round(silent),
            "after_payloads": len(self.cases),
            "waiting": sorted(self.outstanding)[:50],
            "last_payloads": [c.index for c in self.cases[-20:]],
            "queue_depth": telemetry.get("queue_depth"),
            "syntheses_in_flight": telemetry.get("syntheses_in_flight"),
            "status": telemetry.get("status"),
        }
        log(f"the daemon answered nothing for {silent:.0f} s: stopping the run ({self.stall})")
        return True

    # --- the schedule ----------------------------------------------------------------------

    def run(self, indexes: Sequence[int]) -> None:
        self.started = time.monotonic()
        first = self.rig.sample()
        client_cpu = time.process_time()
        self.samples.append((0, first["rss_mb"]))
        if self._schedule(self._cases(indexes), len(indexes)):
            self.pump(lambda: not self.outstanding)
        self.elapsed = time.monotonic() - self.started
        if self.rig.alive():
            self.cpu_s["daemon"] = self.rig.sample()["cpu_s"] - first["cpu_s"]
        self.cpu_s["fuzz_client"] = time.process_time() - client_cpu
        if self.crash is None and self.stall is None:
            self.finish()
        self.rig.sweep_wavs()

    def _cases(self, indexes: Sequence[int]) -> Iterator[Case]:
        a = self.args
        for index in indexes:
            yield make_case(a.seed, index, a.requests, a.heavy, a.max_text_chars)

    def _schedule(self, source: Iterator[Case], total: int) -> bool:
        """Send every case; False when the run had to stop (crash, stall)."""
        a = self.args
        speak: deque[Case] = deque()
        reject: deque[Case] = deque()
        batch: list[Case] = []
        made = 0
        while True:
            ahead = a.window * (AHEAD_WHILE_HEAVY if self.heavy_out() else 1)
            while made < total and len(speak) < ahead and len(reject) < a.reject_window:
                case = next(source)
                made += 1
                queue = batch if case.alone else speak if case.lane == "speak" else reject
                queue.append(case)
            if len(batch) >= a.alone_batch or (batch and made == total and not speak):
                if not self._send_alone(batch):
                    return False
                batch.clear()
            while reject and self.lanes["reject"] < a.reject_window:
                self.send(reject.popleft())
            while speak and self._may_speak(speak[0]):
                self.send(speak.popleft())
            self._every(total)
            if made == total and not (speak or reject or batch):
                return True
            more = made < total and len(speak) < ahead and len(reject) < a.reject_window
            if not self.step(0.0 if more else 0.5):
                return False

    def _may_speak(self, case: Case) -> bool:
        if self.heavy_out():
            return False
        if case.heavy:
            return self.lanes["speak"] == 0
        if self.lanes["speak"] >= int(self.args.window):
            return False
        now = time.monotonic()
        return not any(
            now - (c.sent_at or now) > STARVING_S
            for c in self.outstanding.values()
            if c.lane == "speak"
        )

    def _send_alone(self, batch: list[Case]) -> bool:
        """Each case of the batch with nothing else in flight."""
        started = time.monotonic()
        try:
            for case in batch:
                if not self.pump(lambda: not self.outstanding):
                    return False
                self.send(case)
            return self.pump(lambda: not self.outstanding)
        finally:
            self.alone_s += time.monotonic() - started

    def _every(self, total: int) -> None:
        """RSS samples and WAV sweeps every SAMPLE_EVERY payloads sent, progress lines."""
        while self._counted < len(self.cases):
            self._counted += 1
            if self._counted % SAMPLE_EVERY == 0:
                self.rig.sweep_wavs()
                self.samples.append((self._counted, self.rig.sample()["rss_mb"]))
            if self._counted % self.args.progress_every == 0:
                rate = self._counted / (time.monotonic() - self.started)
                rss = self.samples[-1][1]
                log(f"  {self._counted}/{total} payloads, RSS {rss:.1f} MB, {rate:.1f}/s")

    def finish(self) -> None:
        """Clear the retained say message, then a last valid request must play."""
        clear = Case(-1, "cleanup", "empty retained message (clears the say topic)", b"",
                     "reject", retain=True)  # fmt: skip
        payload = json.dumps({"id": "fuzz-last", "text": "Fuzzing finished."}).encode()
        last = Case(-2, "cleanup", "last valid request", payload, "play", sender_id="fuzz-last")
        for case in (clear, last):
            case.correlation = f"c{case.index}".encode()
            self.send(case)
            if not self.pump(lambda case=case: case.kind is not None or case.timed_out):  # type: ignore[misc]
                return
        self.samples.append((len(self.cases), self.rig.sample()["rss_mb"]))
        after = time.monotonic()
        self.pump(lambda: self.telemetry_at > after or time.monotonic() - after > 20)

    def note_crash(self) -> None:
        if self.crash is not None or self.rig.daemon is None or self.rig.daemon.proc is None:
            return
        proc = self.rig.daemon.proc
        self.crash = {
            "exit_code": proc.poll(),
            "after_payloads": len(self.cases),
            "last_payloads": [c.index for c in self.cases[-20:]],
            "log_tail": self.rig.daemon.log()[-4000:],
        }
        log(f"the daemon exited ({proc.poll()}) after {len(self.cases)} payloads")
