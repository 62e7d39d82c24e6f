"""A real browser (headless Chromium) as the HTTP door's client: a page of another origin
tries what a malicious page would (simple POSTs that need no preflight, a JSON POST, a
read of /voices, a form submitted as text/plain) and nothing is played or synthesized;
a page at an origin in `http.cors_origins` speaks through /say with JSON, as configured.
The same rules on headers alone: test_http_browser.py; as raw requests:
test_http_hardening.py."""

from __future__ import annotations

import http.server
import json
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from .support.broker import Broker, free_port
from .support.daemon_proc import DaemonProcess, daemon_config
from .support.http_client import WAIT_S, Http

pytestmark = pytest.mark.system  # Chromium: scripts/setup --test-all installs it

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",  # as root in CI
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # This machine's network is closed: Chromium's own connections would fail at start.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=20000",  # run the page's script, fetches included, then dump
    "--dump-dom",
]
LOUD = {"text": "Intruder alert.", "priority": "critical", "interrupt": True, "volume": 2.0}

ATTACK = """<!doctype html><div id="out">RUNNING</div><script>
const target = "http://127.0.0.1:%(port)d";
const loud = JSON.stringify(%(loud)s);
async function go() {
  const results = [];
  const simple = [["/say", "text/plain", loud], ["/say", "application/x-www-form-urlencoded",
    "text=Intruder+alert"], ["/v1/audio/speech", "text/plain", JSON.stringify({input: "Hi"})],
    ["/invoke", "text/plain", JSON.stringify({text: "Hi"})]];
  for (const [path, type, body] of simple) {
    try {
      const headers = {"Content-Type": type};
      await fetch(target + path, {method: "POST", mode: "no-cors", headers, body});
      results.push("sent");
    } catch (e) { results.push("error"); }
  }
  for (const [name, path, init] of [["json", "/say", {method: "POST", body: loud,
      headers: {"Content-Type": "application/json"}}], ["voices", "/voices", {}]]) {
    try { results.push(name + ":" + (await fetch(target + path, init)).status); }
    catch (e) { results.push(name + ":blocked"); }
  }
  document.getElementById("out").textContent = "DONE " + results.join(",");
}
go();
</script>"""

FORM = """<!doctype html><form id="f" method="POST" enctype="text/plain"
action="http://127.0.0.1:%(port)d/say"><input name='{"text": "Intruder alert.", "x": "'
value='"}'></form><script>document.getElementById("f").submit();</script>"""

FRIEND = """<!doctype html><div id="out">RUNNING</div><script>
fetch("http://127.0.0.1:%(port)d/say", {method: "POST", headers: {"Content-Type":
  "application/json"}, body: JSON.stringify({text: "Dinner is ready.", id: "from-the-page"})})
  .then(r => r.json().then(b => { document.getElementById("out").textContent =
    "DONE " + r.status + " " + b.event; }))
  .catch(e => { document.getElementById("out").textContent = "DONE failed " + e; });
</script>"""


class Pages:
    """Pages served on a port of their own: another origin than the daemon's."""

    def __init__(self, pages: dict[str, str]) -> None:
        self.port = free_port()
        served = pages

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = served.get(self.path, "").encode()
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Pages:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture(scope="module")
def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "Chromium is not installed: scripts/setup --all installs it (apt: chromium)"
    return found


def open_page(chromium: str, url: str) -> str:
    """The page's DOM once its script has run (Chromium headless, a profile of its own)."""
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        done = subprocess.run(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", url],
            capture_output=True,
            text=True,
            timeout=WAIT_S,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def setup() -> Iterator[tuple[Http, Pages, Pages]]:
    """The daemon (wav-dir sink), a hostile page's origin, and a friendly one in
    `http.cors_origins`."""
    root = Path(tempfile.mkdtemp(prefix="ttsd-chromium-"))
    port = free_port()
    hostile_pages = {
        "/attack.html": ATTACK % {"port": port, "loud": json.dumps(LOUD)},
        "/form.html": FORM % {"port": port},
    }
    with (
        Broker(root) as broker,
        Pages(hostile_pages) as hostile,
        Pages({"/friend.html": FRIEND % {"port": port}}) as friendly,
    ):
        settings = {
            "uri": f"tcp://127.0.0.1:{port}",
            "cors_origins": [f"http://127.0.0.1:{friendly.port}"],
        }
        audio = {"sink": "wav-dir", "wav_dir": str(root / "wav")}
        daemon = DaemonProcess(root, daemon_config(root, broker.port, audio=audio, http=settings))
        try:
            daemon.start()
            daemon.wait_ready()
            yield Http(daemon, port), hostile, friendly
        finally:
            print(daemon.log()[-6000:])
            daemon.close()


def played(server: Http) -> int:
    return len(list((server.daemon.root / "wav").glob("*.wav")))


def finished(server: Http, request_id: str) -> None:
    status, event = server.json("GET", f"/requests/{request_id}?wait=true&timeout={WAIT_S:g}")
    assert status == 200 and event["event"] == "finished", event


def test_a_hostile_page_in_a_real_browser_cannot_make_the_device_speak(
    chromium: str, setup: tuple[Http, Pages, Pages]
) -> None:
    server, hostile, _ = setup
    before = played(server)
    mark = server.daemon.log_mark()
    dom = open_page(chromium, hostile.url("/attack.html"))
    # The browser sent the simple requests (no preflight), blocked the JSON one at its
    # refused preflight and hid /voices; our server refused every one it got.
    assert "DONE sent,sent,sent,sent,json:blocked,voices:blocked" in dom, dom[-2000:]
    dom = open_page(chromium, hostile.url("/form.html"))
    assert "forbidden_origin" in dom, dom[-2000:]  # the form's navigation shows our 403
    log = server.daemon.log()[mark:]
    refused = log.count(": 403 a request from the web page at")
    assert refused >= 6, log[-3000:]  # 4 fetches, the preflight, /voices (and the form)
    assert "first audio after" not in log  # nothing synthesized
    server.json("POST", "/say", {"text": "Our own.", "id": "after-the-page"})
    finished(server, "after-the-page")
    assert played(server) == before + 1  # only ours: nothing the page sent was queued


def test_a_page_at_a_configured_origin_speaks_with_json(
    chromium: str, setup: tuple[Http, Pages, Pages]
) -> None:
    server, _, friendly = setup
    dom = open_page(chromium, friendly.url("/friend.html"))
    assert "DONE 202 queued" in dom, dom[-2000:]
    finished(server, "from-the-page")
