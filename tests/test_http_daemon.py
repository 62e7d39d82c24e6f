"""The HTTP server of the real daemon (real voice, wav-dir sink, real sockets) through real
clients: the official `openai` client, the standard library's http.client, raw sockets
for the requests no client would send. Every wait is on a condition, bounded."""

from __future__ import annotations

import io
import json
import socket
import tempfile
import threading
import time
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from edge_tts.audio.dsp import SILENCE_LEVEL

from .support.broker import Broker, Recorder, free_port
from .support.daemon_proc import DaemonProcess, daemon_config
from .support.http_client import WAIT_S, Http, raw, status_of
from .support.soundcard import VirtualSoundCard
from .support.waiting import wait_until

pytestmark = pytest.mark.daemon

READ_TIMEOUT_S = 4.0
WRITE_TIMEOUT_S = 2.0
MAX_CONNECTIONS = 3
POOL_ENTRIES = 2
POOL_TTL_S = 3
ORIGIN = "http://homeassistant.local:8123"
PHRASE = "The garage door is open."
LONG = "The washing machine has finished its cycle, and the dryer will start soon. " * 20


def start(
    root: Path, broker: Broker, env: dict[str, str] | None = None, card: bool = False, **http: Any
) -> Http:
    """A daemon with the HTTP server; it plays into the sound card of `env` (`card`), or
    writes WAV files."""
    port = free_port()
    settings = {
        "uri": f"tcp://127.0.0.1:{port}",
        "read_timeout": READ_TIMEOUT_S,
        "write_timeout": WRITE_TIMEOUT_S,
        "max_connections": MAX_CONNECTIONS,
        "pool_entries": POOL_ENTRIES,
        "pool_ttl": POOL_TTL_S,
        "cors_origins": [ORIGIN],
        **http,
    }
    audio = {} if card else {"sink": "wav-dir", "wav_dir": str(root / "wav")}
    config = daemon_config(root, broker.port, audio=audio, http=settings)
    daemon = DaemonProcess(root, config, env)
    daemon.start()
    daemon.wait_ready()
    return Http(daemon, port)


@pytest.fixture(scope="module")
def server() -> Iterator[Http]:
    """One daemon for the tests that leave it as they found it."""
    root = Path(tempfile.mkdtemp(prefix="ttsd-http-"))
    with Broker(root) as broker:
        made = start(root, broker)
        try:
            yield made
        finally:
            print(made.daemon.log()[-6000:])  # shown when a test fails
            made.daemon.close()


def read_wav(data: bytes) -> tuple[int, int]:
    """(rate, frames) of a WAV, streamed (sizes unknown) or whole."""
    with wave.open(io.BytesIO(data)) as wav:
        assert (wav.getnchannels(), wav.getsampwidth()) == (1, 2)
        return wav.getframerate(), len(wav.readframes(wav.getnframes())) // 2


# --- OpenAI's speech API ------------------------------------------------------------------


def test_the_openai_client_gets_wav_and_pcm(server: Http) -> None:
    with server.openai() as client:  # its connections closed after it
        wav = client.audio.speech.create(model="tts-1", voice="alloy", input=PHRASE)
        rate, frames = read_wav(wav.content)
        pcm = client.audio.speech.with_raw_response.create(
            model="tts-1", voice="default", input=PHRASE, response_format="pcm", speed=1.5
        )
    assert rate == 22050 and frames > rate  # over a second of speech: wav at the voice's rate
    # pcm at 24 kHz, as OpenAI's contract says (clients do not read X-Sample-Rate).
    assert pcm.headers["X-Sample-Rate"] == "24000"
    assert pcm.headers["Content-Type"] == "audio/pcm"
    # 1.5 times as fast: about two thirds of the duration (the pace scales the durations).
    seconds = len(pcm.content) / 2 / 24_000
    assert 0.5 * frames / rate < seconds < 0.85 * frames / rate


def test_pcm_is_the_same_audio_at_24_khz(server: Http) -> None:
    """Resampled, not relabelled: as long as the wav, and its energy where speech is
    (a 22,050 Hz stream played as 24 kHz would be 9 % short and pitched up)."""
    still = {"input": PHRASE, "voice": "default"}
    status, _, wav = server.request("POST", "/v1/audio/speech", still)
    status_pcm, headers, pcm = server.request(
        "POST", "/v1/audio/speech", {**still, "response_format": "pcm"}
    )
    assert status == status_pcm == 200 and headers["X-Sample-Rate"] == "24000"
    rate, frames = read_wav(wav)
    pcm_seconds = len(pcm) / 2 / 24_000
    # The model's noise varies a sentence's durations a little from run to run.
    assert abs(pcm_seconds - frames / rate) < 0.15 * frames / rate
    samples = np.frombuffer(pcm, "<i2").astype(np.float64)
    spectrum = np.abs(np.fft.rfft(samples)) ** 2
    freqs = np.fft.rfftfreq(samples.size, 1 / 24_000)
    assert spectrum[freqs > 11_025].sum() < 0.01 * spectrum.sum()  # nothing above the voice's


@pytest.mark.parametrize("voice", ["marin", "cedar", "ash", {"id": "default"}, {"id": "alloy"}])
def test_any_openai_voice_name_or_object_is_a_voice(server: Http, voice: Any) -> None:
    status, headers, data = server.request(
        "POST", "/v1/audio/speech", {"input": PHRASE, "voice": voice}
    )
    assert status == 200 and headers["Content-Type"] == "audio/wav", data[:200]


def test_the_openai_client_streams_the_first_audio_before_the_rest_is_made(
    server: Http,
) -> None:
    arrivals: list[tuple[float, int]] = []
    started = time.monotonic()
    with (
        server.openai() as client,
        client.audio.speech.with_streaming_response.create(
            model="tts-1", voice="alloy", input=LONG, response_format="pcm"
        ) as response,
    ):
        for chunk in response.iter_bytes():
            arrivals.append((time.monotonic() - started, len(chunk)))
    total = sum(size for _, size in arrivals)
    assert total // 2 > 22050 * 30  # half a minute of speech and more
    # Streamed: the first audio came in the first part of the time the whole took, not
    # at the end (a buffered answer would be one burst once all is made).
    first_at, last_at = arrivals[0][0], arrivals[-1][0]
    assert first_at < 0.3 * last_at, arrivals[:5]


def test_unsupported_formats_get_a_400_naming_the_supported_ones(server: Http) -> None:
    with server.openai() as client, pytest.raises(openai.BadRequestError) as raised:
        client.audio.speech.create(
            model="tts-1", voice="alloy", input=PHRASE, response_format="mp3"
        )
    error = raised.value.body
    assert isinstance(error, dict) and error["code"] == "unsupported_format"
    assert "wav (at the voice's rate), pcm" in error["message"]
    assert error["param"] == "response_format"


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({"model": "tts-1", "voice": "alloy"}, "missing_text", "input"),
        ({"input": PHRASE, "voice": "de_DE-thorsten-medium"}, "invalid_voice", "voice"),
        ({"input": PHRASE, "voice": "fr"}, "invalid_voice", "voice"),  # a language not here
        ({"input": PHRASE, "voice": {"name": "x"}}, "invalid_voice", "voice"),
        ({"input": PHRASE, "speed": 9}, "invalid_value", "speed"),
        ({"input": PHRASE, "sped": 1}, "unknown_field", "sped"),
        ({"input": "x" * 2001}, "too_long", "input"),
        ({"input": "..."}, "bad_text", "input"),  # nothing speakable: found by the engine
    ],
)
def test_bad_speech_requests_get_json_errors(
    server: Http, body: dict[str, Any], code: str, param: str
) -> None:
    status, error = server.json("POST", "/v1/audio/speech", body)
    assert status == 400 and error["error"]["code"] == code, error
    assert error["error"]["param"] == param


def test_voices_and_health(server: Http) -> None:
    status, listed = server.json("GET", "/voices")
    assert status == 200
    (voice,) = listed["voices"]
    assert voice["name"] == "default" and voice["default"] and voice["sample_rate"] == 22050
    assert voice["language"].startswith("en") and voice["build"]["scheme"]
    assert server.json("GET", "/health") == (200, {"status": "ok", "problems": []})


def test_unknown_routes_and_methods_answer_json(server: Http) -> None:
    status, error = server.json("GET", "/nothing-here")
    assert status == 404 and error["error"]["code"] == "not_found"
    status, _, data = server.request("GET", "/v1/audio/speech")
    assert status == 405 and json.loads(data)["error"]["code"] == "method_not_allowed"


# --- Piper's /synthesize, the seed's /invoke and /download ------------------------------


def test_piper_clients_get_a_wav_with_their_scales(server: Http) -> None:
    status, headers, plain = server.request("POST", "/synthesize", {"text": PHRASE})
    assert status == 200 and headers["Content-Type"] == "audio/wav"
    rate, frames = read_wav(plain)
    # Piper's own fields: twice the length scale is about twice the audio; a voice Piper
    # does not know is the default voice, a speaker of a one-speaker voice is ignored.
    slow = {"text": PHRASE, "length_scale": 2.0, "noise_scale": 0.3, "noise_w_scale": 0.5}
    slow |= {"voice": "en_US-lessac-medium", "speaker_id": 3}
    status, _, data = server.request("POST", "/synthesize", slow)
    assert status == 200
    slow_rate, slow_frames = read_wav(data)
    assert slow_rate == rate and 1.6 * frames < slow_frames < 2.4 * frames
    status, _, data = server.request("POST", "/synthesize", {"text": ""})
    assert status == 400 and json.loads(data)["error"]["param"] == "text"


def test_piper_1_3_clients_post_to_the_root_and_read_info(server: Http) -> None:
    """Piper 1.3/1.4's documented `curl -X POST -H 'Content-Type: application/json' -d
    '{"text": ...}' localhost:5000`, its /info, and its scales written as strings."""
    status, headers, data = server.request("POST", "/", {"text": PHRASE})
    assert status == 200 and headers["Content-Type"] == "audio/wav"
    _, frames = read_wav(data)
    status, _, slow = server.request("POST", "/", {"text": PHRASE, "length_scale": "2.0"})
    assert status == 200 and 1.6 * frames < read_wav(slow)[1] < 2.4 * frames
    status, _, data = server.request("POST", "/", {"text": PHRASE, "length_scale": "fast"})
    assert status == 400 and json.loads(data)["error"]["param"] == "length_scale"
    status, info = server.json("GET", "/info")
    assert status == 200 and info["voice"]["num_speakers"] == 1 and info["last"] is None
    assert info["voice"]["language"].startswith("en") and info["voice"]["name"]


def test_synthesize_and_invoke_read_ssml_and_refuse_bad_markup(server: Http) -> None:
    """The HTTP door gets SSML as every door does: a break is the pause at its place, in
    the WAV, and markup that does not parse is a 400 that says where, never spoken as
    tags."""
    marked = {"text": f'<speak>{PHRASE}<break time="700ms"/></speak>', "text_format": "ssml"}
    status, _, data = server.request("POST", "/synthesize", marked)
    assert status == 200
    with wave.open(io.BytesIO(data)) as wav:
        rate, samples = wav.getframerate(), np.frombuffer(wav.readframes(-1), "<i2")
    speech_ends = np.flatnonzero(np.abs(samples) / 32768 > SILENCE_LEVEL)[-1]
    assert abs((samples.size - 1 - speech_ends) / rate - 0.7) <= 0.05  # the pause at the end
    for path, field in (
        ("/synthesize", "text"),
        ("/invoke", "text"),
        ("/v1/audio/speech", "input"),
    ):
        status, _, data = server.request("POST", path, {field: "<speak><s>Open</speak>"})
        error = json.loads(data)["error"]
        assert status == 400 and error["code"] == "invalid_ssml", (path, error)
        assert "line 1" in error["message"] and error["param"] == field


def metric(server: Http, name: str, labels: dict[str, str] | None = None) -> float | None:
    """One sample of the daemon's /metrics, read by Prometheus' own parser."""
    _, _, data = server.request("GET", "/metrics")
    for family in text_string_to_metric_families(data.decode()):
        for sample in family.samples:
            if sample.name == name and all(
                sample.labels.get(k) == v for k, v in (labels or {}).items()
            ):
                return float(sample.value)
    return None


def test_invoke_and_download_once_through_a_bounded_pool(server: Http) -> None:
    busy = metric(server, "edge_tts_http_busy_total")
    made = [server.json("POST", "/invoke", {"text": PHRASE, "speed": 1.0}) for _ in range(2)]
    assert [status for status, _ in made] == [200, 200]
    first, second = (answer["audio_id"] for _, answer in made)
    status, headers, data = server.request("POST", "/invoke", {"text": PHRASE})
    assert status == 503 and json.loads(data)["error"]["code"] == "pool_full"
    assert 1 <= int(headers["Retry-After"]) <= POOL_TTL_S
    status, headers, wav = server.request("GET", f"/download?audio_id={first}")
    assert status == 200 and headers["Content-Type"] == "audio/wav"
    rate, frames = read_wav(wav)
    assert rate == 22050 and abs(frames - made[0][1]["audio_ms"] * rate / 1000) <= rate / 1000
    status, _, data = server.request("GET", f"/download?audio_id={first}")
    assert status == 404 and json.loads(data)["error"]["code"] == "unknown_audio_id"
    # The other one is never taken: it expires, and the pool is empty again.
    wait_until(lambda: metric(server, "edge_tts_http_pool_entries") == 0, WAIT_S, "expiry")
    assert server.request("GET", f"/download?audio_id={second}")[0] == 404
    assert metric(server, "edge_tts_http_busy_total") == (busy or 0) + 1


def test_cors_only_for_the_configured_origin(server: Http) -> None:
    preflight = {"Origin": ORIGIN, "Access-Control-Request-Method": "POST"}
    status, headers, _ = server.request("OPTIONS", "/v1/audio/speech", headers=preflight)
    assert status == 204 and headers["Access-Control-Allow-Origin"] == ORIGIN
    body = json.dumps({"input": PHRASE}).encode()
    json_type = {"Content-Type": "application/json"}
    status, headers, _ = server.request(
        "POST", "/v1/audio/speech", body, headers={"Origin": ORIGIN, **json_type}
    )
    assert status == 200 and headers["Access-Control-Allow-Origin"] == ORIGIN  # streamed
    other = {"Origin": "http://evil.example", **json_type}
    status, headers, data = server.request("POST", "/v1/audio/speech", body, headers=other)
    assert status == 403 and "Access-Control-Allow-Origin" not in headers
    assert json.loads(data)["error"]["code"] == "forbidden_origin"


# --- bounds ---------------------------------------------------------------------------


def test_oversized_headers_and_bodies_are_refused(server: Http) -> None:
    big_header = b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * 10_000 + b"\r\n\r\n"
    answer = raw(server.port, big_header)
    assert status_of(answer) == 400 and b'"error"' in answer, answer[:100]
    body = json.dumps({"input": "x" * 40_000}).encode()
    status, _, data = server.request("POST", "/v1/audio/speech", body)
    assert status == 413 and json.loads(data)["error"]["code"] == "too_large"


def test_half_sent_requests_are_closed(server: Http) -> None:
    started = time.monotonic()
    head = (
        b"POST /v1/audio/speech HTTP/1.1\r\nHost: localhost\r\n"
        b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
    )
    answer = raw(server.port, head)  # the body never completes
    assert status_of(answer) == 408, answer[:100]
    assert raw(server.port, b"GET /health HTTP/1.1\r\nHost:") == b""  # headers never end
    assert time.monotonic() - started < WAIT_S


def test_connections_beyond_the_limit_get_a_503_until_one_closes(server: Http) -> None:
    held = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(MAX_CONNECTIONS)]
    try:
        wait_until(lambda: server.connections() >= MAX_CONNECTIONS, WAIT_S, "the connections")
        answer = raw(server.port, b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert status_of(answer) == 503, answer[:100]
        assert b"Retry-After: 1" in answer and b"too_many_connections" in answer
    finally:
        for sock in held:
            sock.close()
    wait_until(lambda: server.request("GET", "/health")[0] == 200, WAIT_S, "room again")


def test_a_client_that_reads_nothing_is_dropped(server: Http) -> None:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fills at once
    sock.connect(("127.0.0.1", server.port))
    body = json.dumps({"input": LONG, "response_format": "pcm"}).encode()
    head = (
        "POST /v1/audio/speech HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    try:
        sock.sendall(head.encode() + body)
        # Not reading: the daemon's writes back up, then it lets go of the connection.
        wait_until(lambda: server.connections() == 0, WAIT_S, "the drop")
    finally:
        sock.close()
    assert server.json("GET", "/health")[0] == 200


# --- /say: played here, through the same queue as MQTT ----------------------------------

SAY_LONG = (
    "The kitchen lights were turned off after ten minutes without movement. "
    "The washing machine has finished its cycle, and the dryer will start soon. "
    "Please remember to take your keys and close the garage before you leave."
)


@pytest.fixture()
def on_card(workdir: Path, broker: Broker, sound_card: VirtualSoundCard) -> Iterator[Http]:
    """A daemon playing into a (virtual) sound card in real time."""
    made = start(workdir, broker, env=sound_card.env, card=True)
    try:
        yield made
    finally:
        print(made.daemon.log()[-6000:])
        made.daemon.close()


def say(server: Http, body: dict[str, Any], expect: int = 202) -> dict[str, Any]:
    status, headers, data = server.request("POST", "/say", body)
    answer: dict[str, Any] = json.loads(data)
    assert status == expect, answer
    if status == 202:
        assert headers["Location"] == f"/requests/{body['id']}"
    return answer


def final(server: Http, request_id: str) -> dict[str, Any]:
    status, event = server.json("GET", f"/requests/{request_id}?wait=true&timeout={WAIT_S:g}")
    assert status == 200 and event["final"], event
    return dict(event)


def reached(server: Http, request_id: str, kind: str) -> None:
    def found() -> bool:
        status, event = server.json("GET", f"/requests/{request_id}")
        return status == 200 and event["event"] == kind

    wait_until(found, WAIT_S, f"{request_id} {kind}")


def test_say_plays_here_in_priority_order_interrupts_and_dedupes(
    on_card: Http, sound_card: VirtualSoundCard
) -> None:
    server = on_card
    assert say(server, {"text": SAY_LONG, "id": "long"})["event"] == "queued"
    reached(server, "long", "started")
    say(server, {"text": "Low priority note.", "id": "low", "priority": "low"})
    say(server, {"text": "High priority note.", "id": "high", "priority": "high"})
    done = {name: final(server, name) for name in ("low", "high", "long")}
    assert all(event["event"] == "finished" for event in done.values()), done
    assert done["long"]["ts"] <= done["high"]["ts"] <= done["low"]["ts"]
    assert done["high"]["audio_ms"] > 500 and done["high"]["priority"] == "high"

    mark = sound_card.mark()
    say(server, {"text": SAY_LONG, "id": "long2"})
    reached(server, "long2", "started")
    sound_card.wait_sound(mark)
    say(server, {"text": "Smoke detected in the kitchen!", "id": "fire", "priority": "critical"})
    interrupted = final(server, "long2")
    assert interrupted["event"] == "interrupted" and interrupted["by"] == "fire"
    assert final(server, "fire")["event"] == "finished"
    # The same id and text again: played already, answered, not played twice.
    again = say(server, {"text": "Smoke detected in the kitchen!", "id": "fire"}, expect=200)
    assert again["event"] == "duplicate"
    status, error = server.json("POST", "/say", {"text": "Hi.", "priority": "urgent"})
    assert status == 400 and "priority" in error["error"]["message"]
    assert server.json("GET", "/requests/nobody")[0] == 404


def test_mqtt_requests_play_first_while_http_clients_stream_long_texts(
    on_card: Http, broker: Broker
) -> None:
    server = on_card
    rec = Recorder(broker.port, ["edge-tts/testpi/events"])
    ends: list[float] = []
    firsts: list[threading.Event] = []

    def stream() -> None:
        first = threading.Event()
        firsts.append(first)
        with (
            server.openai() as client,
            client.audio.speech.with_streaming_response.create(
                model="tts-1", voice="alloy", input=LONG, response_format="pcm"
            ) as response,
        ):
            for _ in response.iter_bytes():
                first.set()
        ends.append(time.monotonic())

    clients = [threading.Thread(target=stream) for _ in range(MAX_CONNECTIONS - 1)]
    try:
        for client in clients:
            client.start()
        wait_until(lambda: len(firsts) == len(clients) and all(f.is_set() for f in firsts), WAIT_S)
        sent = time.monotonic()
        rec.publish("edge-tts/testpi/say", json.dumps({"text": PHRASE, "id": "local"}))
        done = rec.wait_event("edge-tts/testpi/events", "finished", "local", timeout=WAIT_S)
    finally:
        for client in clients:
            client.join(WAIT_S)
        rec.close()
    # Its first audio was ready while every HTTP stream was still being made.
    first_audio = sent + done["stages_ms"]["first_audio"] / 1000
    assert first_audio < min(ends), (first_audio - sent, [end - sent for end in ends])


def test_health_turns_503_when_the_card_is_lost(
    on_card: Http, sound_card: VirtualSoundCard
) -> None:
    assert on_card.json("GET", "/health")[0] == 200
    sound_card.stop()
    say(on_card, {"text": PHRASE, "id": "nocard"})  # the output finds the card gone

    def degraded() -> dict[str, Any] | None:
        status, body = on_card.json("GET", "/health")
        return body if status == 503 else None

    body = wait_until(degraded, WAIT_S, "503 from /health")
    assert body["status"] == "degraded" and any("audio" in p for p in body["problems"])


# --- /metrics --------------------------------------------------------------------------


def test_metrics_carry_the_telemetry_for_prometheus(server: Http) -> None:
    with server.openai() as client:
        client.audio.speech.create(model="tts-1", voice="alloy", input=PHRASE)
    _, headers, data = server.request("GET", "/metrics")
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(data.decode())}
    assert families["edge_tts_http_requests"].type == "counter"
    ttfa = families["edge_tts_time_to_first_audio_seconds"]
    assert ttfa.type == "histogram"
    counts = {s.labels["door"]: s.value for s in ttfa.samples if s.name.endswith("_count")}
    assert counts["http"] >= 1 and set(counts) == {"mqtt", "wyoming", "http", "http_say"}
    samples = {s.name: s.value for f in families.values() for s in f.samples if not s.labels}
    assert samples["edge_tts_healthy"] == 1 and samples["edge_tts_queue_depth"] == 0
    assert samples["process_resident_memory_bytes"] > 50e6
    assert samples["edge_tts_http_requests_total"] >= 2
    voices = [s.labels for s in families["edge_tts_voice_info"].samples]
    assert voices[0]["voice"] == "default" and voices[0]["loaded"] == "True"


# --- the token ------------------------------------------------------------------------


def test_beyond_loopback_without_a_token_the_daemon_refuses_to_start(
    workdir: Path, broker: Broker
) -> None:
    config = daemon_config(workdir, broker.port, http={"uri": f"tcp://0.0.0.0:{free_port()}"})
    daemon = DaemonProcess(workdir, config, env={"CREDENTIALS_DIRECTORY": ""})
    try:
        daemon.start()
        assert daemon.wait_exit(WAIT_S) == 78  # EX_CONFIG: systemd does not restart it
        assert "Refusing to start" in daemon.log() and "bearer token" in daemon.log()
    finally:
        daemon.close()


def test_a_token_from_the_systemd_credential_guards_every_route_but_health(
    workdir: Path, broker: Broker
) -> None:
    token = "a-token-of-thirty-two-characters"
    credentials = workdir / "credentials"
    credentials.mkdir()
    (credentials / "http-token").write_text(token + "\n")
    server = start(
        workdir,
        broker,
        env={"CREDENTIALS_DIRECTORY": str(credentials)},
        uri=f"tcp://0.0.0.0:{(port := free_port())}",  # every interface: a token is a must
    )
    server.port = port
    try:
        for wrong in (None, "Bearer nope", f"Basic {token}", f"Bearer {token}x"):
            headers = {"Authorization": wrong} if wrong else {}
            status, headers_back, data = server.request("GET", "/voices", headers=headers)
            assert status == 401, wrong
            assert json.loads(data)["error"]["code"] == "invalid_token"
            assert headers_back["WWW-Authenticate"].startswith("Bearer")
        with server.openai() as client, pytest.raises(openai.AuthenticationError):
            client.audio.speech.create(model="tts-1", voice="alloy", input=PHRASE)
        assert server.request("GET", "/health")[0] == 200  # what a load balancer polls
        server.token = token
        with server.openai() as client:
            assert client.audio.speech.create(model="tts-1", voice="alloy", input=PHRASE).content
        assert server.request("GET", "/voices")[0] == 200
    finally:
        print(server.daemon.log()[-6000:])
        server.daemon.close()
