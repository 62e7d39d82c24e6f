"""Broker kills: requests in flight while Mosquitto is killed (SIGKILL) and restarted, N
times; every request must get exactly one final event and start playing at most once.

    python -m bench.broker_kills                       # 10 kills, 20 requests before each
    python -m bench.broker_kills --kills 3 --batch 10 --out kills.json

A real Mosquitto with persistence (tests/support/broker.py) and one daemon on the wav-dir
sink (bench/daemon_rig.py). Each round publishes a batch of one-sentence requests (QoS 1,
each acknowledged by the broker, unique ids), waits until the daemon has started one of
them, waits for the broker to save its state (Mosquitto persists every second here;
a SIGKILL loses what came since), kills the broker and starts it again on the same port.
The events are recorded by a client with a persistent session of its own, so what the
daemon publishes while the recorder reconnects is kept for it. At the end a last request
is sent and awaited: every earlier one was queued before it. Counted per id: final events
(exactly one wanted) and `started` events (more than one is a request played twice).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from bench.daemon_rig import Rig, add_daemon_options, daemon_run
from bench.report_io import log, print_targets, run_and_emit, target
from edge_tts.messages.events import FINAL_KINDS
from edge_tts.mqtt.client import close_client

WAIT_S = 600  # for one condition; the daemon may be minutes behind on a busy machine


class Events:
    """A client with a persistent session: it misses nothing the broker accepted for it."""

    def __init__(self, rig: Rig) -> None:
        self._topic = rig.topic("events")
        self._cond = threading.Condition()
        self.events: list[dict[str, Any]] = []
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=f"kills-recorder-{rig.device}",
            protocol=MQTTProtocolVersion.MQTTv5,
        )
        self.client.on_connect = lambda c, *_: c.subscribe(self._topic, qos=1)
        self.client.on_message = self._on_message
        self.client.reconnect_delay_set(1, 2)
        props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        props.SessionExpiryInterval = 3600
        self.client.connect("127.0.0.1", rig.port, clean_start=False, properties=props)
        self.client.loop_start()

    def _on_message(self, _c: mqtt.Client, _u: object, msg: mqtt.MQTTMessage) -> None:
        with self._cond:
            self.events.append(json.loads(msg.payload))
            self._cond.notify_all()

    def count(self, kind: str, ids: set[str]) -> int:
        with self._cond:
            return sum(1 for e in self.events if e.get("event") == kind and e.get("id") in ids)

    def wait(self, what: str, check: Any) -> None:
        deadline = time.monotonic() + WAIT_S
        with self._cond:
            while not check():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out after {WAIT_S} s waiting for {what}")
                self._cond.wait(min(left, 1.0))  # also re-checked without a message

    def close(self) -> None:
        close_client(self.client)


def publish(rig: Rig, payload: dict[str, Any]) -> None:
    """One QoS 1 publish, acknowledged by the broker, from a short-lived client."""
    client = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=MQTTProtocolVersion.MQTTv5)
    client.connect("127.0.0.1", rig.port)
    client.loop_start()
    try:
        info = client.publish(rig.topic("say"), json.dumps(payload), qos=1)
        info.wait_for_publish(60)
        if not info.is_published():
            raise AssertionError(f"publish of {payload['id']} not acknowledged")
    finally:
        close_client(client)


def run(args: argparse.Namespace) -> dict[str, Any]:
    with daemon_run("kills", args.set, args.keep, Events) as (rig, events):
        assert rig.broker is not None
        ids: list[str] = []
        for kill in range(args.kills):
            batch = [f"k{kill:02d}-{n:03d}" for n in range(args.batch)]
            for request_id in batch:
                publish(rig, {"id": request_id, "text": f"Request {len(ids)}. Please wait."})
                ids.append(request_id)
            events.wait(f"a start in batch {kill}", lambda b=set(batch): events.count("started", b))
            _persisted(rig)
            rig.broker.kill()
            log(f"kill {kill + 1}/{args.kills}: broker killed with {len(ids)} requests sent")
            rig.broker.start()
        publish(rig, {"id": "last", "text": "Last one."})
        events.wait("the last request's final event", lambda: _final("last", events))
        assert rig.same_process(), "the daemon died"
        return {"benchmark": "broker_kills", "kills": args.kills} | _tally(ids, events)


def _persisted(rig: Rig) -> None:
    """Wait for two more of the broker's saves (autosave_interval 1 s): what it held when
    the batch started (sessions, queued requests) is on disk. A SIGKILL loses what came
    since its last save, which no client can help: the rounds test what was persisted."""
    assert rig.broker is not None
    saves = rig.broker.log().count("Saving in-memory database")
    deadline = time.monotonic() + WAIT_S
    while rig.broker.log().count("Saving in-memory database") < saves + 2:
        if time.monotonic() > deadline:
            raise AssertionError("the broker did not save its state")
        time.sleep(0.2)  # a bench, not a test: polling the broker's log file


def _final(request_id: str, events: Events) -> bool:
    return any(e.get("id") == request_id and e.get("event") in FINAL_KINDS for e in events.events)


def _tally(ids: list[str], events: Events) -> dict[str, Any]:
    """Events are QoS 1: a broker killed before it acknowledged one gets it again from the
    daemon's client, so a subscriber may see the same event twice, identical. Those are
    counted apart; a request answered or played twice sends two different events."""
    seen = [json.dumps(e, sort_keys=True) for e in events.events]
    distinct = [json.loads(e) for e in dict.fromkeys(seen)]
    finals = Counter(e["id"] for e in distinct if e.get("event") in FINAL_KINDS)
    starts = Counter(e["id"] for e in distinct if e.get("event") == "started")
    kinds = Counter(e["event"] for e in distinct if e.get("event") in FINAL_KINDS)
    return {
        "requests": len(ids),
        "final_kinds": dict(kinds),
        "events_delivered_twice": len(seen) - len(distinct),
        "no_final_event": [i for i in ids if finals[i] == 0],
        "several_final_events": [i for i in ids if finals[i] > 1],
        "started_twice": [i for i in ids if starts[i] > 1],
    }


def print_report(result: dict[str, Any]) -> None:
    print(f"broker kills: {result['kills']}, requests: {result['requests']}")
    print(f"final events by kind: {result['final_kinds']}")
    print(f"events delivered twice by MQTT (identical): {result['events_delivered_twice']}\n")
    checks = [
        target(key, f"{len(found)} {found[:10]}", not found, failed="FAIL")
        for key in ("no_final_event", "several_final_events", "started_twice")
        for found in [result[key]]
    ]
    print_targets(checks)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=10, help="default 10")
    parser.add_argument("--batch", type=int, default=20, help="requests before each kill")
    add_daemon_options(parser)
    return run_and_emit(run, parser.parse_args(argv), print_report)


if __name__ == "__main__":
    sys.exit(main())
