"""HTTP soak: rounds of mixed good and bad requests against ONE daemon's HTTP server, the
daemon's RSS after each round, to tell a leak from warm-up.

    .venv/bin/python -m bench.http_soak                  # 6 rounds of 1,000 requests
    .venv/bin/python -m bench.http_soak --rounds 3 --requests 200 --out soak.json

A real Mosquitto on a free port and the daemon as every benchmark runs it
(bench/daemon_rig.py: our INT8 build, wav-dir sink), its phrase cache on (as deployed).
Each round sends --requests requests from --clients threads, each request drawn with a
seeded RNG from a fixed mix (MIX): speech in both formats, /invoke and its /download,
/say and its state, /voices, /health, /metrics; and what browsers, attackers and clumsy
clients send: a cross-site page, a rebinding Host, a 401-digit number, an id with CR/LF,
bad JSON, an unknown field, a wrong content type, an unknown route, a body too large.
Every answer must be the status its kind expects (MIX), with no 5xx and no dropped
connection.

Recorded: the daemon's RSS after each round (psutil), and the least-squares slope in MB
per 1,000 requests over the rounds after the first (--warmup rounds, default 1). The
verdict: PASS below 1 MB per 1,000 requests. Exits 1 when the slope misses, when any
answer was not what its kind expects, or when there are fewer than two samples to fit.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import tempfile
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from bench.daemon_rig import running
from bench.report_io import MB, add_output_options, fields, log, machine_info, run_and_emit, table
from tests.support.broker import Broker, free_port

SLOPE_MAX_MB = 1.0  # per 1,000 requests, after warm-up
TIMEOUT_S = 120.0
TEXTS = ["The garage door is open.", "Dinner is ready.", "Battery low.", "Rain at six."]
JSON = {"Content-Type": "application/json"}


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: bytes | None
    headers: dict[str, str]
    expect: int


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


def _mix(rng: random.Random, port: int, only: list[str]) -> Call:
    text = rng.choice(TEXTS)
    speech = _json({"input": text, "response_format": rng.choice(["wav", "pcm"])})
    calls = [
        Call("POST", "/v1/audio/speech", speech, JSON, 200),
        Call("POST", "/synthesize", _json({"text": text}), JSON, 200),
        Call("POST", "/invoke", _json({"text": text}), JSON, 200),
        Call("POST", "/say", _json({"text": text, "priority": "low", "ttl": 1}), JSON, 202),
        Call("GET", "/voices", None, {}, 200),
        Call("GET", "/health", None, {}, 200),
        Call("GET", "/metrics", None, {}, 200),
        Call(
            "POST",
            "/say",
            text.encode(),
            {"Content-Type": "text/plain", "Origin": "http://evil.example"},
            403,
        ),
        Call("GET", "/voices", None, {"Host": f"attacker.rebind.network:{port}"}, 403),
        Call("POST", "/invoke", b'{"text": "x", "speed": ' + b"9" * 401 + b"}", JSON, 400),
        Call("POST", "/say", _json({"text": text, "id": "a\r\nb"}), JSON, 400),
        Call("POST", "/synthesize", b'{"text": ', JSON, 400),
        Call("POST", "/v1/audio/speech", _json({"input": text, "colour": 1}), JSON, 400),
        Call("POST", "/invoke", _json({"text": text}), {"Content-Type": "text/plain"}, 415),
        Call("GET", "/nowhere", None, {}, 404),
        Call("POST", "/invoke", b"x" * 40_000, JSON, 413),
    ]
    return rng.choice([call for call in calls if not only or call.path in only])


def _send(port: int, call: Call) -> str:
    """What came of one call: "ok", or what was wrong."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)
    try:
        conn.request(call.method, call.path, body=call.body, headers=call.headers)
        response = conn.getresponse()
        data = response.read()
        if response.status == 200 and call.path == "/invoke":
            audio_id = json.loads(data)["audio_id"]
            conn.request("GET", f"/download?audio_id={audio_id}")
            download = conn.getresponse()
            download.read()
            if download.status != 200:
                return f"GET /download: {download.status}"
    except (OSError, http.client.HTTPException) as err:
        return f"{call.method} {call.path}: dropped ({type(err).__name__})"
    finally:
        conn.close()
    if response.status != call.expect:
        return f"{call.method} {call.path}: {response.status}, expected {call.expect}"
    return "ok"


def _round(args: argparse.Namespace, port: int, rng: random.Random) -> Counter[str]:
    calls = [_mix(rng, port, args.only) for _ in range(args.requests)]
    lock = threading.Lock()
    outcomes: Counter[str] = Counter()

    def one(call: Call) -> None:
        outcome = _send(port, call)
        with lock:
            outcomes[outcome] += 1

    with ThreadPoolExecutor(args.clients) as pool:
        list(pool.map(one, calls))
    return outcomes


def slope_mb_per_1000(samples: list[tuple[int, float]]) -> float | None:
    """The least-squares slope of RSS (MB) over requests sent, per 1,000."""
    if len(samples) < 2:
        return None
    sent, rss = zip(*samples, strict=True)
    return float(np.polyfit(np.array(sent) / 1000, np.array(rss), 1)[0])


def run(args: argparse.Namespace) -> dict[str, Any]:
    load_before = psutil.getloadavg()
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="bench-http-soak-"))
    samples: list[tuple[int, float]] = []
    outcomes: Counter[str] = Counter()
    with Broker(root) as broker:
        port = free_port()
        http = {"uri": f"tcp://127.0.0.1:{port}", "max_connections": 64}
        settings = {"audio": {"sink": "wav-dir", "wav_dir": str(root / "wav")}, "http": http}
        with running(root, broker.port, settings) as daemon:
            assert daemon.proc is not None
            process = psutil.Process(daemon.proc.pid)
            for number in range(args.rounds):
                outcomes += _round(args, port, rng)
                for wav in (root / "wav").glob("*.wav"):
                    wav.unlink(missing_ok=True)
                rss = process.memory_info().rss / MB
                log(f"round {number + 1}/{args.rounds}: RSS {rss:.1f} MB")
                samples.append(((number + 1) * args.requests, rss))
    after = samples[args.warmup - 1 :] if args.warmup else samples
    return {
        "machine": machine_info(load_before),
        "rounds": args.rounds,
        "requests_per_round": args.requests,
        "clients": args.clients,
        "rss_mb": [round(rss, 2) for _, rss in samples],
        "slope_mb_per_1000": slope_mb_per_1000(after),
        "outcomes": dict(outcomes),
    }


def passed(result: dict[str, Any]) -> bool:
    slope = result["slope_mb_per_1000"]
    wrong = {k: v for k, v in result["outcomes"].items() if k != "ok"}
    return slope is not None and slope < SLOPE_MAX_MB and not wrong


def print_report(result: dict[str, Any]) -> None:
    rows = [(n + 1, rss) for n, rss in enumerate(result["rss_mb"])]
    table(["round", "RSS MB"], rows, title="HTTP soak: the daemon's RSS after each round")
    slope = result["slope_mb_per_1000"]
    fields(
        "HTTP soak",
        {
            "requests": f"{result['rounds']} x {result['requests_per_round']}",
            "slope after warm-up": "no samples" if slope is None else f"{slope:.2f} MB / 1,000",
            "answers": ", ".join(f"{k}: {v}" for k, v in sorted(result["outcomes"].items())),
            "verdict": "PASS" if passed(result) else "FAIL",
        },
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--requests", type=int, default=1000, help="per round")
    parser.add_argument("--clients", type=int, default=4, help="threads sending at once")
    parser.add_argument("--warmup", type=int, default=1, help="rounds left out of the slope")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--only", action="append", default=[], metavar="PATH", help="only the calls to PATH"
    )
    add_output_options(parser)
    args = parser.parse_args(argv)
    if args.rounds - args.warmup < 2:
        parser.error("--rounds must exceed --warmup by 2: a slope needs two samples")
    return args


def main(argv: list[str] | None = None) -> int:
    return run_and_emit(run, parse_args(argv), print_report, passed)


if __name__ == "__main__":
    raise SystemExit(main())
