"""The HTTP door against what a web page, an attacker and a clumsy client send, through
the real daemon (real voice, wav-dir sink, real sockets): cross-site and DNS-rebinding
requests, slow-header connections from one address while another is served, ids and
numbers no field should take, audio larger than the /invoke pool, stalled bodies and
`Expect: 100-continue`. The header rules alone: tests/test_http_browser.py."""

from __future__ import annotations

import json
import socket
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from .support.broker import Broker, free_port
from .support.daemon_proc import DaemonProcess, daemon_config
from .support.http_client import WAIT_S, Http, raw, read_to_end, status_of
from .support.waiting import wait_until

pytestmark = pytest.mark.daemon

ORIGIN = "http://homeassistant.local:8123"
EVIL = {
    "Origin": "http://evil.example",
    "Sec-Fetch-Site": "cross-site",
    "Sec-Fetch-Mode": "no-cors",
}
PER_CLIENT = 4
HEADER_TIMEOUT_S = 1.0
READ_TIMEOUT_S = 2.0
PHRASE = "The garage door is open."
LOUD = {"text": "Intruder alert.", "priority": "critical", "interrupt": True, "volume": 2.0}


@pytest.fixture(scope="module")
def server() -> Iterator[Http]:
    """One daemon (wav-dir sink) for every test here: each leaves it as it found it."""
    root = Path(tempfile.mkdtemp(prefix="ttsd-guard-"))
    with Broker(root) as broker:
        port = free_port()
        settings = {
            "uri": f"tcp://127.0.0.1:{port}",
            "max_connections": 16,
            "max_connections_per_client": PER_CLIENT,
            "header_timeout": HEADER_TIMEOUT_S,
            "read_timeout": READ_TIMEOUT_S,
            "pool_mb": 1,
            "cors_origins": [ORIGIN],
        }
        audio = {"sink": "wav-dir", "wav_dir": str(root / "wav")}
        text = {"max_silence_s": 60}  # room for pauses that pass the /invoke pool
        config = daemon_config(root, broker.port, audio=audio, http=settings, text=text)
        daemon = DaemonProcess(root, config)
        try:
            daemon.start()
            daemon.wait_ready()
            yield Http(daemon, port)
        finally:
            print(daemon.log()[-6000:])  # shown when a test fails
            daemon.close()


def played(server: Http) -> int:
    return len(list((server.daemon.root / "wav").glob("*.wav")))


def send(
    server: Http, method: str, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, dict[str, Any]]:
    status, _, data = server.request(method, path, body, headers)
    return status, json.loads(data) if data.startswith(b"{") else {}


def play_one_and_wait(server: Http, request_id: str) -> None:
    """A request of our own, played to the end: whatever was queued before it has been
    played before it too (one speaker, one queue)."""
    status, _ = server.json("POST", "/say", {"text": PHRASE, "id": request_id})
    assert status == 202
    status, event = server.json("GET", f"/requests/{request_id}?wait=true&timeout={WAIT_S:g}")
    assert status == 200 and event["event"] == "finished", event


# --- a web page -----------------------------------------------------------------------

SIMPLE_BODIES = [
    ("text/plain", json.dumps(LOUD).encode()),
    ("application/x-www-form-urlencoded", b"text=Intruder+alert"),
    (
        "multipart/form-data; boundary=b",
        b'--b\r\nContent-Disposition: form-data; name="text"\r\n\r\nHi\r\n--b--\r\n',
    ),
]


def test_a_cross_site_page_cannot_make_the_device_speak_or_synthesize(server: Http) -> None:
    before = played(server)
    mark = server.daemon.log_mark()
    for kind, body in SIMPLE_BODIES:
        for path in ("/say", "/v1/audio/speech", "/invoke", "/synthesize"):
            status, answer = send(server, "POST", path, body, {**EVIL, "Content-Type": kind})
            assert status == 403 and answer["error"]["code"] == "forbidden_origin", (path, kind)
            # The same from a browser that sends no Origin (only Sec-Fetch-Site).
            no_origin = {"Sec-Fetch-Site": "cross-site", "Content-Type": kind}
            status, answer = send(server, "POST", path, body, no_origin)
            assert status == 403, (path, kind, answer)
    play_one_and_wait(server, "after-the-page")
    assert played(server) == before + 1  # only ours
    assert "first audio after" not in server.daemon.log()[mark:]  # nothing synthesized


def test_speech_routes_take_json_only_and_say_text_only_from_no_browser_page(server: Http) -> None:
    for path, body in (
        ("/v1/audio/speech", {"input": PHRASE}),
        ("/invoke", {"text": PHRASE}),
        ("/synthesize", {"text": PHRASE}),
    ):
        status, answer = send(
            server, "POST", path, json.dumps(body).encode(), {"Content-Type": "text/plain"}
        )
        assert status == 415 and answer["error"]["code"] == "unsupported_media_type", path
    same_origin_page = {"Origin": f"http://127.0.0.1:{server.port}", "Content-Type": "text/plain"}
    status, _ = send(server, "POST", "/say", PHRASE.encode(), same_origin_page)
    assert status == 415  # a page, even our own origin's, sends JSON
    status, answer = send(
        server,
        "POST",
        "/say",
        b"Plain text from curl.",
        {"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert status == 202, answer  # curl -d: no Origin, no Sec-Fetch-Site


def test_a_configured_origin_works_with_a_preflight_and_json(server: Http) -> None:
    preflight = {
        "Origin": ORIGIN,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
        "Sec-Fetch-Mode": "cors",
    }
    status, headers, _ = server.request("OPTIONS", "/say", headers=preflight)
    assert status == 204 and headers["Access-Control-Allow-Origin"] == ORIGIN
    status, _ = send(server, "OPTIONS", "/say", b"", {**preflight, **EVIL})
    assert status == 403
    body = json.dumps({"text": PHRASE, "id": "from-the-dashboard"}).encode()
    page = {"Origin": ORIGIN, "Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"}
    status, answer = send(server, "POST", "/say", body, page)
    assert status == 202, answer


def test_a_foreign_host_gets_no_answer_but_a_refusal(server: Http) -> None:
    for host in ("attacker.rebind.network", f"127.0.0.1.nip.io:{server.port}", "example.com:80"):
        for method, path in (
            ("GET", "/voices"),
            ("GET", "/metrics"),
            ("GET", "/requests/x"),
            ("GET", "/health"),
            ("POST", "/say"),
        ):
            body = b'{"text": "Rebound."}' if method == "POST" else None
            headers = {"Host": host, "Content-Type": "application/json"}
            status, _, data = server.request(method, path, body, headers)
            assert status == 403 and b"forbidden_host" in data, (host, path)
    for host in (f"localhost:{server.port}", f"[::1]:{server.port}", "127.0.0.1"):
        assert server.request("GET", "/voices", headers={"Host": host})[0] == 200


# --- one address must not lock out another -----------------------------------------------


class SlowHeaders:
    """Connections from 127.0.0.1 that send a request's head a byte at a time, each
    reopened as soon as the server closes it, until stopped."""

    def __init__(self, port: int, count: int) -> None:
        self.port = port
        self.stop = threading.Event()
        self.opened = 0
        self._threads = [threading.Thread(target=self._hold, daemon=True) for _ in range(count)]

    def __enter__(self) -> SlowHeaders:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def _hold(self) -> None:
        head = b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 1000
        while not self.stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
                    self.opened += 1
                    for byte in head:
                        sock.sendall(bytes([byte]))
                        if self.stop.wait(0.05):  # the attacker's pace, not a synchronization
                            return
            except OSError:
                continue  # closed by the server: open another at once


def poll_health(port: int) -> int:
    """GET /health from 127.0.0.2 (Linux routes all of 127/8 to loopback)."""
    with socket.create_connection(
        ("127.0.0.1", port), timeout=WAIT_S, source_address=("127.0.0.2", 0)
    ) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        return status_of(read_to_end(sock))


def test_slow_headers_from_one_address_do_not_lock_out_another(server: Http) -> None:
    with SlowHeaders(server.port, 40) as attack:
        # In full swing: every connection refused or closed at least once, and back.
        wait_until(lambda: attack.opened >= 80, WAIT_S, "the attack's connections")
        answers = [poll_health(server.port) for _ in range(30)]
    served = answers.count(200)
    assert served >= 27, answers  # >= 90 %
    wait_until(lambda: server.connections() == 0, WAIT_S, "the attack's connections to go")


# --- ids, numbers, formats ------------------------------------------------------------------


def test_ids_outside_the_alphabet_are_refused_and_locations_are_encoded(server: Http) -> None:
    for bad in ("a\r\nX-Forged: 1", "a\nINFO forged log line", "nul\u0000id", "a/b", "a b", "é"):
        status, answer = server.json("POST", "/say", {"text": PHRASE, "id": bad})
        assert status == 400 and answer["error"]["param"] == "id", (bad, answer)
    log = server.daemon.log()
    assert "\nX-Forged" not in log and "\nINFO forged" not in log and "\x00" not in log
    status, headers, _ = server.request("POST", "/say", {"text": PHRASE, "id": "tpms:17@car"})
    assert status == 202 and headers["Location"] == "/requests/tpms%3A17%40car"
    status, event = server.json("GET", headers["Location"])
    assert status == 200 and event["id"] == "tpms:17@car"


def test_huge_numbers_and_odd_formats_are_400s_naming_the_field(server: Http) -> None:
    huge = 10**400
    cases = [
        ("/v1/audio/speech", {"input": PHRASE, "speed": huge}, "speed"),
        ("/v1/audio/speech", {"input": PHRASE, "speed": -huge}, "speed"),
        ("/synthesize", {"text": PHRASE, "length_scale": huge}, "length_scale"),
        ("/synthesize", {"text": PHRASE, "noise_w": huge}, "noise_w"),
        ("/invoke", {"text": PHRASE, "speed": huge}, "speed"),
        ("/say", {"text": PHRASE, "speed": huge}, "speed"),
        ("/say", {"text": PHRASE, "volume": huge}, "volume"),
        ("/say", {"text": PHRASE, "priority": "urgent"}, "priority"),
        ("/say", {"text": PHRASE, "colour": "red"}, "colour"),
        ("/v1/audio/speech", {"input": PHRASE, "response_format": {}}, "response_format"),
        ("/v1/audio/speech", {"input": PHRASE, "response_format": 0}, "response_format"),
    ]
    for path, body, param in cases:
        status, answer = server.json("POST", path, body)
        assert status == 400 and answer["error"]["param"] == param, (path, body, answer)
    assert "Traceback" not in server.daemon.log()


# --- the /invoke pool -----------------------------------------------------------------------

LONG = "The washing machine has finished its cycle, and the dryer will start soon. " * 20


def test_audio_that_cannot_fit_the_pool_is_a_413_before_synthesis(server: Http) -> None:
    mark = server.daemon.log_mark()
    status, answer = server.json("POST", "/invoke", {"text": LONG})
    assert status == 413 and "pool_mb" in answer["error"]["message"], answer
    assert "/invoke" in server.daemon.log()[mark:]
    assert "first audio after" not in server.daemon.log()[mark:]
    # A short text that the stream proves too long: pauses the text's length cannot tell.
    pauses = '<break time="10s"/>' * 4
    status, answer = server.json("POST", "/invoke", {"text": f"<speak>One.{pauses}Two.</speak>"})
    assert status == 413 and answer["error"]["code"] == "audio_too_large", answer
    # And the pool is whole again: a text that fits.
    status, answer = server.json("POST", "/invoke", {"text": PHRASE})
    assert status == 200, answer
    assert server.request("GET", f"/download?audio_id={answer['audio_id']}")[0] == 200


def test_concurrent_invokes_reserve_what_they_take_and_never_overshoot(server: Http) -> None:
    text = "The front door has been unlocked by the family code. " * 4  # ~0.6 MiB each
    with ThreadPoolExecutor(2) as both:
        answers = list(both.map(lambda _: server.json("POST", "/invoke", {"text": text}), range(2)))
    statuses = sorted(status for status, _ in answers)
    assert statuses == [200, 503], answers
    busy = next(answer for status, answer in answers if status == 503)
    assert busy["error"]["code"] == "pool_full"
    done = next(answer for status, answer in answers if status == 200)
    assert server.request("GET", f"/download?audio_id={done['audio_id']}")[0] == 200


# --- bodies that stall or will not fit -------------------------------------------------------


def test_a_stalled_body_is_answered_408_and_closed_at_once(server: Http) -> None:
    head = (
        b"POST /invoke HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100\r\n\r\n{"
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S) as sock:
        sock.sendall(head)
        sock.settimeout(READ_TIMEOUT_S * 3)  # aiohttp's own lingering would last 10 s more
        answer = read_to_end(sock)
    assert status_of(answer) == 408, answer[:200]


def test_expect_continue_with_a_too_large_body_gets_413_at_once(server: Http) -> None:
    head = (
        b"POST /invoke HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100000000\r\nExpect: 100-continue\r\n\r\n"
    )
    answer = raw(server.port, head)  # closed after the answer: nothing more is read
    assert status_of(answer) == 413 and b"100 Continue" not in answer, answer[:200]
    refused = head.replace(b"Host: localhost", b"Host: evil.example").replace(b"100000000", b"20")
    with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S) as sock:
        sock.sendall(refused)
        first = sock.recv(65536)
    assert status_of(first) == 403 and b"100 Continue" not in first
