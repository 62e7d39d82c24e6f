"""The daemon end to end: a real Mosquitto, the real voice, a real-time virtual sound
card, a fake NOTIFY_SOCKET; the daemon runs as a subprocess like under systemd."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from .support.broker import Broker, Recorder, make_tls_material
from .support.daemon_proc import (
    REPO,
    DaemonProcess,
    NotifySocket,
    daemon_config,
    wait_ready,
    wait_working,
)
from .support.soundcard import VirtualSoundCard
from .support.waiting import REQUEST_TIMEOUT_S, stop_process

pytestmark = pytest.mark.daemon

SAY = "edge-tts/testpi/say"
EVENTS = "edge-tts/testpi/events"
TELEMETRY = "edge-tts/testpi/telemetry"
LONG = (
    "The kitchen lights were turned off after ten minutes without movement. "
    "The washing machine has finished its cycle, and the dryer will start soon. "
    "Please remember to take your keys and close the garage before you leave."
)


@pytest.fixture()
def recorder(broker: Broker) -> Iterator[Recorder]:
    r = Recorder(broker.port, ["edge-tts/#", "hermes/#", "replies/#"])
    yield r
    r.close()


class Rig:
    def __init__(self, workdir: Path, broker: Broker, card: VirtualSoundCard, rec: Recorder):
        self.workdir, self.broker, self.card, self.rec = workdir, broker, card, rec
        self.daemon: DaemonProcess | None = None

    def start(self, **overrides: Any) -> DaemonProcess:
        config = daemon_config(self.workdir, self.broker.port, **overrides)
        self.daemon = DaemonProcess(self.workdir, config, env=self.card.env)
        self.daemon.start()
        self.daemon.wait_ready()
        return self.daemon

    def restart(self) -> DaemonProcess:
        assert self.daemon is not None
        self.daemon.close()  # kills it if it still runs
        (self.workdir / "notify.sock").unlink()
        config = yaml_load(self.daemon.config_path)
        self.daemon = DaemonProcess(self.workdir, config, env=self.card.env)
        self.daemon.start()
        self.daemon.wait_ready()
        return self.daemon

    def say(self, payload: str | bytes | dict[str, Any], topic: str = SAY, **kw: Any) -> float:
        data = json.dumps(payload) if isinstance(payload, dict) else payload
        return self.rec.publish(topic, data, **kw)

    def kinds(self, request_id: str) -> list[str]:
        return [e["event"] for e in self.rec.events(EVENTS) if e.get("id") == request_id]

    def availability(self) -> list[tuple[bytes, bool]]:
        return [(p, r) for _, t, p, r in self.rec.messages if t == "edge-tts/testpi/availability"]

    def finished_order(self) -> list[str]:
        return [e["id"] for e in self.rec.events(EVENTS) if e["event"] == "finished"]

    def telemetry_after(self, kind: str, request_id: str) -> dict[str, Any]:
        """The telemetry snapshot taken after the `kind` event of `request_id` arrived:
        the second one published after it (the first may have been taken before it)."""
        at = next(
            t
            for t, topic, p, _ in self.rec.messages
            if topic == EVENTS
            and json.loads(p).get("id") == request_id
            and json.loads(p).get("event") == kind
        )

        def later() -> list[bytes]:
            return [p for t, topic, p, _ in self.rec.messages if topic == TELEMETRY and t > at]

        self.rec.wait_for(lambda: len(later()) >= 2, 60, f"telemetry after {kind} {request_id}")
        snapshot: dict[str, Any] = json.loads(later()[-1])
        return snapshot

    def wait_playing(self, mark: int) -> None:
        """Until the card plays something that began after `mark`: mid-playback."""
        self.card.wait_sound(mark)

    def drain(self) -> None:
        """Until every request sent so far is done: a probe sent now finishes after them
        (the broker redelivers unacknowledged requests first, in order), so a duplicate
        that was going to play has played by then."""
        probe = f"probe-{len(self.rec.messages)}"
        self.say({"text": "Probe.", "id": probe})
        self.rec.wait_event(EVENTS, "finished", probe, timeout=REQUEST_TIMEOUT_S)


def yaml_load(path: Path) -> dict[str, Any]:
    import yaml

    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict)
    return data


@pytest.fixture()
def rig(
    workdir: Path, broker: Broker, sound_card: VirtualSoundCard, recorder: Recorder
) -> Iterator[Rig]:
    r = Rig(workdir, broker, sound_card, recorder)
    try:
        yield r
    finally:
        if r.rec is not recorder:  # a test replaced it (after a broker restart)
            r.rec.close()
        if r.daemon is not None:
            log = r.daemon.log()
            r.daemon.close()
            print(log[-6000:])  # shown when the test fails


def test_plain_text_is_spoken_with_events_in_order(rig: Rig) -> None:
    daemon = rig.start()
    rig.rec.wait_for(lambda: rig.availability()[-1:] == [(b"online", False)], 30, "online")
    late = Recorder(rig.broker.port, ["edge-tts/testpi/availability"])  # sees retained only
    try:
        late.wait_for(lambda: [m[2:] for m in late.messages] == [(b"online", True)], 30, "retained")
    finally:
        late.close()
    mark = rig.card.mark()
    sent = rig.say("Package delivered to the front porch by UPS at 2:15 PM.")
    done = rig.rec.wait_event(EVENTS, "finished", timeout=REQUEST_TIMEOUT_S)
    request_id = done["id"]
    assert rig.kinds(request_id) == ["queued", "started", "finished"]
    # Plausible, not fast: latency and real-time factor are measured in bench/.
    assert 0 < done["time_to_first_audio_ms"] < 30_000
    assert done["audio_ms"] > 2000 and done["real_time_factor"] > 0
    seconds = done["audio_ms"] / 1000
    # Until the last of it has come out of the sound server (the pipe sink lags a little).
    played = rig.card.wait_played(mark, min_sound_s=seconds - 0.7)
    audio = played.astype(np.float32) / 32768
    loud = np.flatnonzero(np.abs(audio) > 0.01)
    assert loud.size
    span = (loud[-1] - loud[0]) / 22050
    underruns = rig.telemetry_after("finished", request_id)["counters"]["underruns"]
    if underruns == 0:
        assert span == pytest.approx(seconds, abs=0.7)
    else:  # a machine too busy to synthesize in real time: silence while it catches up
        assert span >= seconds - 0.7, f"{underruns} underrun(s), yet audio is missing"
    first = rig.card.first_sound_time(mark)
    assert first is not None and first - sent < 30
    daemon.notify.wait_for("WATCHDOG=1", timeout=60)
    assert any(line.startswith("STATUS=") for line in daemon.notify.lines())


def test_json_request_with_response_topic_and_correlation(rig: Rig) -> None:
    rig.start()
    props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    props.ResponseTopic = "replies/me"
    props.CorrelationData = b"abc-123"
    rig.say(
        {"text": "The mail has arrived.", "id": "mail-1", "priority": "high", "volume": 0.5},
        properties=props,
    )
    rig.rec.wait_event(EVENTS, "finished", "mail-1")
    reply = rig.rec.wait_event("replies/me", "finished", "mail-1")
    assert reply["priority"] == "high"


def test_priority_order_and_critical_interrupt(rig: Rig) -> None:
    rig.start()
    rig.say({"text": LONG, "id": "long"})
    rig.rec.wait_event(EVENTS, "started", "long")
    rig.say({"text": "Low priority note.", "id": "low", "priority": "low"})
    rig.say({"text": "High priority note.", "id": "high", "priority": "high"})
    rig.rec.wait_event(EVENTS, "finished", "low", timeout=2 * REQUEST_TIMEOUT_S)
    assert rig.finished_order() == ["long", "high", "low"]

    mark = rig.card.mark()
    rig.say({"text": LONG, "id": "long2"})
    rig.rec.wait_event(EVENTS, "started", "long2")
    rig.wait_playing(mark)
    rig.say({"text": "Smoke detected in the kitchen!", "id": "fire", "priority": "critical"})
    interrupted = rig.rec.wait_event(EVENTS, "interrupted", "long2")
    assert interrupted["by"] == "fire"
    rig.rec.wait_event(EVENTS, "finished", "fire")
    assert "finished" not in rig.kinds("long2")


def test_queue_full_is_rejected_not_blocking(rig: Rig) -> None:
    rig.start(queue={"size": 1})
    rig.say({"text": LONG, "id": "playing"})
    rig.rec.wait_event(EVENTS, "started", "playing")
    rig.say({"text": "Waiting.", "id": "waiting"})
    rig.say({"text": "No room.", "id": "no-room"})
    rejected = rig.rec.wait_event(EVENTS, "rejected", "no-room")
    assert "queue full" in rejected["reason"]
    rig.rec.wait_event(EVENTS, "finished", "waiting", timeout=REQUEST_TIMEOUT_S)


MALFORMED = [
    (b"\xff\xfe\xfa", "UTF-8"),
    (b'{"text": "unterminated', "malformed JSON"),
    (b'{"text": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested"),
    (b"", "non-empty"),
    (b"   ", "non-empty"),
    (b"x" * 5000, "limit"),
    (b'{"text": 42}', "'text'"),
    (b'{"text": "hi", "priority": "urgent"}', "'priority'"),
    (b'{"text": "hi", "speed": "fast"}', "'speed'"),
    (b'{"text": "..."}', "speakable"),
    (b'{"text": "hi", "voice": "klingon"}', "unknown voice"),
    (b"[1, 2]", "object"),
]


@pytest.fixture(scope="module")
def serving() -> Iterator[Rig]:
    """One daemon for the tests that send it only what it must refuse, then a probe: a
    daemon each took 40 s apiece on a busy machine."""
    root = Path(tempfile.mkdtemp(prefix="ttsd-"))  # short: unix socket paths are limited
    card = VirtualSoundCard(Path(tempfile.mkdtemp(prefix="vcard-")))
    with Broker(root) as broker:
        rec = Recorder(broker.port, ["edge-tts/#"])
        rig = Rig(root, broker, card, rec)
        try:
            card.start()
            rig.start()
            yield rig
        finally:
            if rig.daemon is not None:
                print(rig.daemon.log()[-4000:])  # shown when a test fails
                rig.daemon.close()
            rec.close()
            card.stop()
            shutil.rmtree(card.root, ignore_errors=True)
            shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize(("payload", "reason"), MALFORMED)
def test_malformed_payloads_are_rejected_and_daemon_keeps_serving(
    serving: Rig, payload: bytes, reason: str
) -> None:
    def rejected() -> list[dict[str, Any]]:
        return [e for e in serving.rec.events(EVENTS) if e["event"] == "rejected"]

    before = len(rejected())
    serving.say(payload)
    serving.rec.wait_for(lambda: len(rejected()) > before, 30, "rejected")
    got = rejected()
    assert len(got) == before + 1, got[before:]  # one final event per message
    assert reason.lower() in got[-1]["reason"].lower(), got[-1]
    probe = "after-" + hashlib.sha256(payload).hexdigest()[:8]
    serving.say({"text": "Still here.", "id": probe})
    serving.rec.wait_event(EVENTS, "finished", probe)
    assert serving.daemon is not None and serving.daemon.running()


def test_chinese_text_without_a_mandarin_voice_is_rejected_not_spoken(rig: Rig) -> None:
    """An English voice read it as "Chinese letter, Chinese letter..." and said `finished`."""
    daemon = rig.start()
    mark = rig.card.mark()
    rig.say({"text": "前方路口请左转。", "id": "zh-1"})
    rejected = rig.rec.wait_event(EVENTS, "rejected", "zh-1")
    assert rejected["reason"].startswith("no voice for Mandarin (zh) text")
    kinds = [e["event"] for e in rig.rec.events(EVENTS) if e.get("id") == "zh-1"]
    assert "started" not in kinds and "finished" not in kinds and kinds.count("rejected") == 1
    assert "Rejected zh-1: no voice for Mandarin (zh) text" in daemon.log()
    assert rig.card.first_sound_time(mark) is None  # refused before any synthesis
    rig.say({"text": "Still here.", "id": "after-zh"})
    rig.rec.wait_event(EVENTS, "finished", "after-zh")


def _with_mandarin(voice_dir: Path) -> dict[str, Any]:
    return {"voices": {"default": {}, "mandarin": {"path": str(voice_dir)}}}


def test_mandarin_is_spoken_by_the_imported_voice(rig: Rig, mandarin_voice: Path) -> None:
    daemon = rig.start(**_with_mandarin(mandarin_voice))
    assert "Loaded voice zh-baker" in daemon.log()  # preloaded, not on the first request
    mark = rig.card.mark()
    rig.say({"text": "前方路口请左转。", "id": "zh-1"})
    done = rig.rec.wait_event(EVENTS, "finished", "zh-1", timeout=REQUEST_TIMEOUT_S)
    assert done["voices"] == ["zh-baker"]
    # Seven syllables: Mandarin speech runs at 3-7 a second, then the 0.2 s sentence pause.
    seconds = done["audio_ms"] / 1000
    assert 7 / 7 + 0.2 <= seconds <= 7 / 3 + 0.2 + 0.5
    played = rig.card.wait_played(mark, min_sound_s=seconds - 0.7)
    audio = played.astype(np.float32) / 32768
    loud = np.flatnonzero(np.abs(audio) > 0.02)
    assert loud.size and (loud[-1] - loud[0]) / 22050 > 0.8  # speech, not a click


def test_mixed_text_is_spoken_by_both_voices_in_order(rig: Rig, mandarin_voice: Path) -> None:
    rig.start(**_with_mandarin(mandarin_voice))
    rig.say({"text": "GPS信号丢失，请在3号门等候。", "id": "mix-1"})
    done = rig.rec.wait_event(EVENTS, "finished", "mix-1", timeout=REQUEST_TIMEOUT_S)
    assert done["voices"] == ["en_US-joe-medium", "zh-baker"]
    rig.say({"text": "你好", "id": "lang-1", "language": "zh"})
    assert rig.rec.wait_event(EVENTS, "finished", "lang-1")["voices"] == ["zh-baker"]
    rig.say({"text": "Bonjour", "id": "lang-2", "language": "fr"})
    reason = rig.rec.wait_event(EVENTS, "rejected", "lang-2")["reason"]
    assert reason == "no voice for language 'fr' (configured: en, zh)"


def test_hermes_round_trip_and_other_sites_ignored(rig: Rig) -> None:
    rig.start()
    other = {"text": "Not for us.", "siteId": "garage", "id": "h0", "sessionId": "s0"}
    rig.say(other, topic="hermes/tts/say")
    mine = {
        "text": "Hello from Rhasspy.",
        "siteId": "testpi",
        "id": "h1",
        "lang": "en",
        "sessionId": "s1",
    }
    rig.say(mine, topic="hermes/tts/say")
    rig.rec.wait_event(EVENTS, "finished", "h1")
    rig.rec.wait_for(lambda: bool(rig.rec.events("hermes/tts/sayFinished")), 30, "sayFinished")
    assert rig.rec.events("hermes/tts/sayFinished") == [
        {"id": "h1", "siteId": "testpi", "sessionId": "s1"}
    ]
    assert "h0" not in [e.get("id") for e in rig.rec.events(EVENTS)]
    rig.say({"text": "", "siteId": "testpi", "id": "h2", "sessionId": "s2"}, topic="hermes/tts/say")
    rig.rec.wait_for(lambda: bool(rig.rec.events("hermes/error/tts")), 30, "hermes error")
    error = rig.rec.events("hermes/error/tts")[0]
    assert error["siteId"] == "testpi" and error["sessionId"] == "s2" and error["error"]


def test_sigterm_fades_out_and_leaves_request_for_restart(rig: Rig) -> None:
    daemon = rig.start()
    mark = rig.card.mark()
    rig.say({"text": LONG, "id": "cut-short"})
    rig.rec.wait_event(EVENTS, "started", "cut-short")
    rig.wait_playing(mark)
    started = time.monotonic()
    assert daemon.terminate(timeout=30) == 0
    # Bounded: within systemd's TimeoutStopSec=30 (the daemon drains for 5 s at most), with
    # room for a machine busy with something else.
    assert time.monotonic() - started < 25
    lines = daemon.notify.lines()
    assert "STOPPING=1" in lines and "READY=1" in lines
    assert rig.availability()[-1] == (b"offline", False)
    assert "finished" not in rig.kinds("cut-short")
    # Not acknowledged, so the broker hands it to the next start, which plays it once.
    rig.restart()
    rig.rec.wait_event(EVENTS, "finished", "cut-short", timeout=REQUEST_TIMEOUT_S)
    rig.drain()
    assert rig.kinds("cut-short").count("finished") == 1


def test_sigkill_mid_playback_redelivers_and_plays_once(rig: Rig) -> None:
    daemon = rig.start()
    mark = rig.card.mark()
    rig.say("The freezer door has been open for five minutes. Please close it soon.")
    first = rig.rec.wait_event(EVENTS, "started")
    rig.wait_playing(mark)
    daemon.kill()
    assert "finished" not in rig.kinds(first["id"])
    rig.restart()
    rig.rec.wait_event(EVENTS, "finished", first["id"], timeout=REQUEST_TIMEOUT_S)
    rig.say({"text": "Next one.", "id": "next"})
    rig.rec.wait_event(EVENTS, "finished", "next")
    assert rig.kinds(first["id"]).count("finished") == 1


def test_broker_restart_reconnects_and_plays_missed_requests_once(rig: Rig) -> None:
    daemon = rig.start()
    rig.say({"text": "Before the outage.", "id": "before"})
    rig.rec.wait_event(EVENTS, "finished", "before")
    rig.rec.close()
    mark = daemon.log_mark()
    rig.broker.stop()
    daemon.wait_log("Disconnected from the broker", after=mark)  # it noticed the lost link
    rig.broker.start()  # same port, persistent: the daemon's session and subscriptions survive
    rec = Recorder(rig.broker.port, ["edge-tts/#"])
    rig.rec = rec
    for i in range(3):  # published while the daemon is (most likely) still backing off
        rec.publish(SAY, json.dumps({"text": f"Missed number {i + 1}.", "id": f"missed-{i}"}))
    for i in range(3):
        rec.wait_event(EVENTS, "finished", f"missed-{i}", timeout=2 * REQUEST_TIMEOUT_S)
    rig.drain()
    finished = [e["id"] for e in rec.events(EVENTS) if e["event"] == "finished"]
    assert sorted(i for i in finished if i.startswith("missed")) == [
        "missed-0",
        "missed-1",
        "missed-2",
    ]
    rec.wait_for(
        lambda: any(
            json.loads(p).get("counters", {}).get("reconnects", 0) >= 1
            for _, t, p, _ in rec.messages
            if t == "edge-tts/testpi/telemetry"
        ),
        30,
        "telemetry with reconnects",
    )
    assert daemon.running()


def test_missing_sound_card_rejects_with_reason_and_keeps_running(
    workdir: Path, broker: Broker, recorder: Recorder
) -> None:
    config = daemon_config(workdir, broker.port)
    daemon = DaemonProcess(workdir, config, env={"HOME": str(workdir)})  # no asoundrc, no card
    try:
        daemon.start()
        daemon.wait_ready()
        recorder.publish(SAY, json.dumps({"text": "Anyone there?", "id": "nocard"}))
        rejected = recorder.wait_event(EVENTS, "rejected", "nocard")
        assert "audio output unavailable" in rejected["reason"]
        # Degraded, not dead: the watchdog keeps being fed so systemd does not restart-loop.
        mark = len(daemon.notify.lines())
        daemon.notify.wait_for("WATCHDOG=1", timeout=60, after=mark)
        assert any("degraded" in line for line in daemon.notify.lines() if "STATUS=" in line)
        assert daemon.running()
    finally:
        daemon.close()


def test_wav_dir_sink_writes_one_wav_per_request(
    workdir: Path, broker: Broker, recorder: Recorder
) -> None:
    out = workdir / "wavs"
    config = daemon_config(workdir, broker.port, audio={"sink": "wav-dir", "wav_dir": str(out)})
    daemon = DaemonProcess(workdir, config, env={"HOME": str(workdir)})
    try:
        daemon.start()
        daemon.wait_ready()
        recorder.publish(SAY, json.dumps({"text": "Written to disk.", "id": "disk-1"}))
        recorder.wait_event(EVENTS, "finished", "disk-1")
        with wave.open(str(out / "disk-1.wav"), "rb") as wav:
            assert wav.getframerate() == 22050 and wav.getnframes() > 22050 // 2
    finally:
        daemon.close()


def test_tampered_model_refuses_to_start_with_exit_78(
    workdir: Path, broker: Broker, fp32_files: Any
) -> None:
    config = daemon_config(
        workdir,
        broker.port,
        voices={"default": {"path": str(fp32_files.model), "sha256": "0" * 64}},
    )
    daemon = DaemonProcess(workdir, config)
    try:
        daemon.start()
        assert daemon.proc is not None
        assert daemon.proc.wait(120) == 78
        assert "SHA-256 mismatch" in daemon.log()
        assert "READY=1" not in daemon.notify.lines()
    finally:
        daemon.close()


def test_mqtt_311_session_works_too(rig: Rig) -> None:
    daemon = rig.start(broker={"protocol": "3.1.1"})
    rig.say({"text": "Old broker, same service.", "id": "v311"})
    rig.rec.wait_event(EVENTS, "finished", "v311")
    # What was negotiated, seen from both ends: Mosquitto logs the protocol level of each
    # client ("p2": 3.1.1, "p5": 5), the daemon the version it connected with.
    connects = re.findall(r"as edge-tts-testpi \((p\d)", rig.broker.log())
    assert connects and set(connects) == {"p2"}, rig.broker.log()
    assert "(MQTT 3.1.1, session present" in daemon.log()


def test_default_config_file_runs_the_daemon(
    workdir: Path, broker: Broker, recorder: Recorder
) -> None:
    """What `scripts/run` does on a machine without a sound card."""
    notify = NotifySocket(workdir / "notify.sock")
    wavs = workdir / "spoken"
    env = {
        **os.environ,
        "NOTIFY_SOCKET": str(notify.path),
        "HOME": str(workdir),
        "XDG_STATE_HOME": str(workdir / "state"),
    }
    args = [
        sys.executable,
        "-m",
        "edge_tts",
        "run",
        "--config",
        "config/edge-tts.yaml",
        "--set",
        f"broker.port={broker.port}",
        "--set",
        "device_id=fresh",
        "--set",
        "audio.sink=wav-dir",
        "--set",
        f"audio.wav_dir={wavs}",
    ]
    try:
        with (workdir / "daemon.log").open("wb") as log:
            proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_ready(notify, proc, log=(workdir / "daemon.log").read_text)
            recorder.publish("edge-tts/fresh/say", "Hello from a fresh install.")
            done = recorder.wait_event(
                "edge-tts/fresh/events", "finished", timeout=REQUEST_TIMEOUT_S
            )
            assert (wavs / f"{done['id']}.wav").stat().st_size > 44
        finally:
            stop_process(proc, timeout=30)
    finally:
        notify.close()


def test_credentials_from_systemd_and_refused_login_is_not_ready(
    workdir: Path, request: pytest.FixtureRequest
) -> None:
    passwd = workdir / "passwd"
    subprocess.run(["mosquitto_passwd", "-b", "-c", str(passwd), "pi", "s3cret"], check=True)
    broker = Broker(workdir, password_file=passwd)
    request.addfinalizer(broker.stop)  # also when the test fails before its end
    broker.start()
    creds = workdir / "creds"
    creds.mkdir()
    config = daemon_config(
        workdir,
        broker.port,
        broker={"username": "pi"},
        audio={"sink": "wav-dir", "wav_dir": str(workdir / "wavs")},
    )
    env = {"HOME": str(workdir), "CREDENTIALS_DIRECTORY": str(creds)}

    def attempt(password: str) -> DaemonProcess:
        (creds / "mqtt-password").write_text(password + "\n")
        (workdir / "notify.sock").unlink(missing_ok=True)
        daemon = DaemonProcess(workdir, config, env=env)
        request.addfinalizer(daemon.close)
        daemon.start()
        return daemon

    rec = Recorder(broker.port, ["edge-tts/#"], auth=("pi", "s3cret"))
    request.addfinalizer(rec.close)
    refused = attempt("wrong")
    # Refused CONNACKs are retried, never taken for "connected": a second refusal proves the
    # retry, and READY=1 never came in between.
    assert refused.proc is not None
    wait_working(  # after loading the voice, however long that takes on this machine
        refused.proc,
        lambda: refused.log().count("refused the connection") >= 2,
        "two refused logins",
        log=refused.log,
    )
    assert refused.running() and "READY=1" not in refused.notify.lines()
    refused.close()
    daemon = attempt("s3cret")
    daemon.wait_ready()
    rec.publish(SAY, json.dumps({"text": "Logged in.", "id": "auth"}))
    rec.wait_event(EVENTS, "finished", "auth", timeout=REQUEST_TIMEOUT_S)


def test_tls_broker_with_pinned_ca(workdir: Path) -> None:
    ca, cert, key = make_tls_material(workdir)
    with contextlib.ExitStack() as stack:
        broker = stack.enter_context(Broker(workdir, tls=(cert, key)))  # started, then stopped
        config = daemon_config(
            workdir,
            broker.port,
            broker={"tls": {"ca_file": str(ca)}},
            audio={"sink": "wav-dir", "wav_dir": str(workdir / "wavs")},
        )
        daemon = stack.enter_context(DaemonProcess(workdir, config, env={"HOME": str(workdir)}))
        rec = Recorder(broker.port, ["edge-tts/#"], ca=ca)
        stack.callback(rec.close)
        daemon.start()
        daemon.wait_ready()
        rec.publish(SAY, json.dumps({"text": "Encrypted.", "id": "tls"}))
        rec.wait_event(EVENTS, "finished", "tls", timeout=REQUEST_TIMEOUT_S)


def test_a_stale_retained_request_is_not_played_at_start(rig: Rig) -> None:
    # Retained before the daemon's first subscription: no session held it for us, and
    # the broker's stored copy is not a request (test_reliability covers the rest).
    rig.say("Stale retained announcement.", retain=True)
    rig.start()
    rig.say({"text": "Fresh.", "id": "fresh"})
    rig.rec.wait_event(EVENTS, "finished", "fresh")
    assert rig.finished_order() == ["fresh"]
    assert [e for e in rig.rec.events(EVENTS) if e["event"] == "rejected"] == []
