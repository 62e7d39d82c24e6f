"""The phrase cache through the real daemon, broker and voice (wav-dir sink, no fades, so
a WAV holds exactly what the pipeline played): phrases rendered ahead while idle and
served from disk, damaged entries never played, a rebuilt voice never served stale audio,
requests never held up by the pre-renderer, an unwritable cache never stopping speech."""

from __future__ import annotations

import json
import os
import re
import shutil
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edge_tts.cache.entry import read
from edge_tts.cache.serving import replay
from edge_tts.speech.synthesis import render
from edge_tts.voice import files
from edge_tts.voice.base import SpeechOptions
from edge_tts.voice.model import Voice

from .support.broker import Broker, Recorder
from .support.daemon_proc import DaemonProcess, daemon_config
from .support.disk import fill, small_tmpfs
from .support.texts import LONG_TEXTS
from .support.waiting import REQUEST_TIMEOUT_S, wait_until
from .test_reliability import vm_hwm_mb

pytestmark = pytest.mark.daemon

SAY = "edge-tts/testpi/say"
EVENTS = "edge-tts/testpi/events"
TELEMETRY = "edge-tts/testpi/telemetry"
PHRASE = "The garage door is open."  # one chunk
PRERENDERED = r"Phrases pre-rendered: (\d+) of (\d+) chunks cached"
LONG_PHRASES = list(LONG_TEXTS[:3])  # several chunks each: the pre-renderer is busy a while


class Rig:
    def __init__(self, root: Path, broker: Broker) -> None:
        self.root = root
        self.broker = broker
        self.rec = Recorder(broker.port, ["edge-tts/#"])
        self.daemon: DaemonProcess | None = None

    def start(self, **overrides: Any) -> DaemonProcess:
        self.stop()
        base = {"audio": {"sink": "wav-dir", "wav_dir": str(self.wavs), "fade_ms": 0}}
        config = daemon_config(self.root, self.broker.port, **{**base, **overrides})
        self.daemon = DaemonProcess(self.root, config)
        self.daemon.start()
        self.daemon.wait_ready()
        return self.daemon

    def stop(self) -> None:
        if self.daemon is not None:
            if self.daemon.running():
                assert self.daemon.terminate() == 0
            self.daemon.close()
            (self.root / "notify.sock").unlink(missing_ok=True)

    @property
    def wavs(self) -> Path:
        return self.root / "spoken"

    @property
    def cache_dir(self) -> Path:
        return self.root / "state" / "cache"

    def speak(self, request_id: str, text: str, **fields: Any) -> dict[str, Any]:
        self.rec.publish(SAY, json.dumps({"id": request_id, "text": text, **fields}))
        done = self.rec.wait_event(EVENTS, "finished", request_id, timeout=REQUEST_TIMEOUT_S)
        return done

    def wait_log(self, pattern: str, count: int = 1, timeout: float = 600) -> re.Match[str]:
        assert self.daemon is not None
        return self.daemon.wait_log(pattern, timeout=timeout, count=count)

    def telemetry(self) -> dict[str, Any]:
        """The latest telemetry, waiting for the first one: on a fast machine a test gets
        here before the daemon's first publish (one interval after it is ready)."""

        def latest() -> dict[str, Any] | None:
            found = [json.loads(p) for _, t, p, _ in self.rec.messages if t == TELEMETRY]
            return found[-1] if found else None

        return wait_until(latest, 60, "the first telemetry")

    def status_events(self) -> list[dict[str, Any]]:
        return [e for e in self.rec.events(EVENTS) if e["event"] == "status"]

    def close(self) -> None:
        if self.daemon is not None:
            print(self.daemon.log()[-6000:])  # shown when the test fails
        self.stop()
        self.rec.close()


@pytest.fixture()
def rig(workdir: Path, broker: Broker) -> Iterator[Rig]:
    r = Rig(workdir, broker)
    try:
        yield r
    finally:
        r.close()


def wav(path: Path) -> np.ndarray:
    with wave.open(str(path), "rb") as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")


def played_from(entry: Path) -> np.ndarray:
    """What the daemon plays for a one-chunk request served from `entry`: the stored
    audio through render()'s steps (volume 1, no fades)."""
    header, audio = read(entry.read_bytes())
    voice = Voice(files.default_voice())  # for its rate and pause; never loaded
    pieces = render(voice, str(header["text"]), SpeechOptions(), True, None, replay(audio, True))
    return np.concatenate(list(pieces))


def same_audio(got: np.ndarray, expected: np.ndarray) -> bool:
    """The same samples, after any silence the sink puts in front (`audio.lead_in_ms`)."""
    lead = got.size - expected.size
    return lead >= 0 and not got[:lead].any() and np.array_equal(got[lead:], expected)


def test_a_phrase_is_rendered_while_idle_then_served_from_the_cache(rig: Rig) -> None:
    rig.start(cache={"phrases": [PHRASE]})
    rig.wait_log(PRERENDERED)
    (entry,) = rig.cache_dir.glob("*.pcm")
    header, _ = read(entry.read_bytes())
    assert header["build"] == files.PACKAGED_DIGESTS["en_US-joe-medium.onnx"]  # FP32
    done = rig.speak("hit-1", PHRASE)
    assert (done["cached_chunks"], done["chunks"]) == (1, 1)
    assert same_audio(wav(rig.wavs / "hit-1.wav"), played_from(entry))
    inside = rig.speak("hit-2", f"Attention. {PHRASE}")  # a cached sentence in a longer one
    assert (inside["cached_chunks"], inside["chunks"]) == (1, 2)
    fresh = rig.speak("opt-out", PHRASE, cache=False)
    assert fresh["cached_chunks"] == 0 and fresh["synthesis_ms"] > 0
    wait_until(lambda: rig.telemetry()["counters"]["cache_hits"] >= 2, 60, "hits in telemetry")
    cache = rig.telemetry()["cache"]
    assert cache["status"] == "ok" and cache["phrase_entries"] == 1
    assert cache["prerender"]["state"] == "done" and cache["prerender"]["cached"] == 1


def test_a_damaged_entry_is_never_played_and_is_rendered_again(rig: Rig) -> None:
    rig.start(cache={"phrases": [PHRASE]})
    rig.wait_log(PRERENDERED)
    (entry,) = rig.cache_dir.glob("*.pcm")
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the middle of the audio
    entry.write_bytes(bytes(data))
    done = rig.speak("bad-1", PHRASE)
    assert done["cached_chunks"] == 0, "a damaged entry was played"
    rig.wait_log(r"Discarding cache entry .* checksum mismatch")
    assert wav(rig.wavs / "bad-1.wav").size > 0
    rig.wait_log(PRERENDERED, count=2)  # the pre-renderer noticed and rendered it again
    assert rig.speak("bad-2", PHRASE)["cached_chunks"] == 1


def test_a_directory_in_place_of_an_entry_is_set_aside_and_the_chunk_cached_again(
    rig: Rig,
) -> None:
    daemon = rig.start()
    assert rig.speak("dir-1", PHRASE)["cached_chunks"] == 0
    (entry,) = rig.cache_dir.glob("*.pcm")
    entry.unlink()
    entry.mkdir()  # made by hand, with something in it
    (entry / "notes.txt").write_text("not the daemon's")
    assert rig.speak("dir-2", PHRASE)["cached_chunks"] == 0
    rig.wait_log(r"is not a cache entry; moved it to", timeout=60)
    assert rig.speak("dir-3", PHRASE)["cached_chunks"] == 1, "never cached again"
    (aside,) = rig.cache_dir.glob(f".{entry.name}.*.set-aside")
    assert (aside / "notes.txt").read_text() == "not the daemon's"
    assert not rig.status_events() and rig.telemetry()["health"] == "ok"
    assert "Phrase cache: cannot" not in daemon.log()


def test_an_oversized_entry_is_discarded_unread_and_rendered_again(rig: Rig) -> None:
    daemon = rig.start(cache={"phrases": [PHRASE]})
    rig.wait_log(PRERENDERED)
    (entry,) = rig.cache_dir.glob("*.pcm")
    os.truncate(entry, 2**30)  # sparse: a whole read would take 1 GiB
    assert daemon.proc is not None
    before = vm_hwm_mb(daemon.proc.pid)
    assert rig.speak("huge-1", PHRASE)["cached_chunks"] == 0
    rig.wait_log(r"Discarding cache entry .*: \d+ bytes, more than the \d+ it can be")
    assert vm_hwm_mb(daemon.proc.pid) - before < 256, "the entry was read whole"
    rig.wait_log(PRERENDERED, count=2)
    assert rig.speak("huge-2", PHRASE)["cached_chunks"] == 1


def rebuilt(model: Path) -> None:
    """A new build with the same weights and another digest: the ONNX ModelProto gets a
    doc_string (field 6) appended, which a protobuf parser takes as the field's value."""
    note = b"rebuilt for the cache test"
    with model.open("ab") as file:
        file.write(bytes([6 << 3 | 2, len(note)]) + note)


def test_a_rebuilt_voice_is_never_served_the_old_builds_audio(rig: Rig) -> None:
    source = files.packaged_fp32()
    model = rig.root / "voice" / "joe-copy.onnx"
    model.parent.mkdir()
    shutil.copyfile(source.model, model)
    shutil.copyfile(source.config, model.with_name(model.name + ".json"))
    voices = {"default": {"path": str(model)}}
    rig.start(voices=voices, cache={"phrases": [PHRASE]})
    rig.wait_log(PRERENDERED)
    assert rig.speak("old-build", PHRASE)["cached_chunks"] == 1
    old_digest = rig.telemetry()["voices"]["default"]["sha256"]
    rig.stop()
    rebuilt(model)
    rig.start(voices=voices)  # no phrases: nothing is rendered ahead for the new build
    done = rig.speak("new-build", PHRASE)
    assert done["cached_chunks"] == 0, "the old build's audio was played"
    # The old daemon's last snapshot stays the latest until the new one publishes.
    wait_until(
        lambda: rig.telemetry()["voices"]["default"]["sha256"] != old_digest,
        60,
        "telemetry with the new build's digest",
    )
    assert rig.speak("new-build-again", PHRASE)["cached_chunks"] == 1  # its own entry now


def test_a_request_during_pre_rendering_waits_for_at_most_one_window(rig: Rig) -> None:
    rig.start(cache={"phrases": LONG_PHRASES})
    rig.wait_log(r"Loaded voice en_US-joe-medium .*", count=2)  # the FP32 build, loaded
    done = rig.speak("now", "Someone is at the front door.")
    assert done["cached_chunks"] == 0
    paused = rig.wait_log(r"Pre-render paused for a request: (\d+) window\(s\) overlapped it")
    assert int(paused.group(1)) <= 1
    rig.wait_log(PRERENDERED)
    wait_until(
        lambda: rig.telemetry()["cache"]["prerender"]["state"] == "done", 60, "telemetry: done"
    )
    progress = rig.telemetry()["cache"]["prerender"]
    assert progress["pauses"] >= 1 and progress["max_overlap_windows"] <= 1
    assert progress["cached"] == progress["chunks"] >= len(LONG_PHRASES)


@pytest.fixture()
def tmpfs(workdir: Path) -> Iterator[Path]:
    """A 1 MB tmpfs we can fill up."""
    yield from small_tmpfs(workdir / "small")


def test_a_full_cache_disk_degrades_and_speech_goes_on(rig: Rig, tmpfs: Path) -> None:
    daemon = rig.start(state_dir=str(tmpfs / "state"))
    filler = fill(tmpfs, 16 * 1024)
    done = rig.speak("full-1", "The cache cannot keep this one.")
    assert done["cached_chunks"] == 0 and (rig.wavs / "full-1.wav").exists()
    rig.rec.wait_for(lambda: any(e["status"] == "degraded" for e in rig.status_events()), 60)
    problems = rig.status_events()[-1]["problems"]
    assert any(p.startswith("cache ") and "No space left" in p for p in problems), problems
    daemon.notify.wait_match(lambda line: line.startswith("STATUS=degraded"), 60)
    wait_until(lambda: rig.telemetry()["cache"]["status"].startswith("degraded"), 60)
    filler.unlink()
    rig.speak("full-2", "The cache keeps this one.")  # the stored entry clears the problem
    rig.rec.wait_for(lambda: rig.status_events()[-1]["status"] == "ok", 60, "recovery")
    assert rig.speak("full-3", "The cache keeps this one.")["cached_chunks"] == 1
