"""The audio output, through a real (virtual) sound card, and the WAV-directory sink.

ALSA output runs in a subprocess (tests/support/player_driver.py) whose HOME points at the card's
asoundrc; the card captures what reached it, in real time and bit-exact.
"""

from __future__ import annotations

import contextlib
import json
import queue
import shutil
import tempfile
import threading
import time
import tracemalloc
import wave
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edge_tts.audio import device, wav
from edge_tts.audio.alsa import AlsaOutput
from edge_tts.audio.device import portaudio_device
from edge_tts.audio.dsp import fade_in_gain, fade_out_gain, ms_to_frames
from edge_tts.audio.output import AudioUnavailableError, Utterance
from edge_tts.audio.sinks import open_output
from edge_tts.audio.wavdir import WavDirOutput, safe_name
from edge_tts.config import AudioSettings

from .support.player_driver import tone
from .support.remote_output import spawn_driver
from .support.soundcard import VirtualSoundCard
from .support.waiting import DEFAULT_TIMEOUT_S, wait_until

# Timing-sensitive (docs/development.md): scripts/test runs it outside the parallel workers.
pytestmark = pytest.mark.serial

RATE = 22050
BLOCK = 1024
FADE = round(15 * RATE / 1000)  # the default fade_ms in frames
NEVER = threading.Event()
SET = threading.Event()
SET.set()


# -- helpers ------------------------------------------------------------------------


def drive(
    env: dict[str, str], scenario: str, heard: Callable[[], object] | None = None, **params: Any
) -> tuple[dict[str, Any], str]:
    """Run a driver scenario to completion; its events by name, and its stderr.

    `heard` runs after the scenario's "done" and before the driver closes its stream:
    wait there for the audio to come out of the card (`card.wait_played(...)`)."""
    with tempfile.TemporaryDirectory(prefix="driver-") as tmp:
        driver = LiveDriver(env, scenario, Path(tmp) / "driver.log", **params)
        try:
            driver.expect("done", timeout=90)
            if heard is not None:
                heard()
            stderr = driver.finish()
        finally:
            driver.close()
    return driver.events, stderr


class LiveDriver:
    """A driver scenario the test interacts with while it runs (start/stop the card).

    The driver holds its stream open after "done" until finish() closes its stdin."""

    def __init__(self, env: dict[str, str], scenario: str, log: Path, **params: Any) -> None:
        self._log = log
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue()
        self.events: dict[str, Any] = {}  # every event so far by name (the last of a name)
        self._proc = spawn_driver(scenario, params, env, log)
        self._reader = threading.Thread(target=self._read, name="driver-stdout", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            event = json.loads(line)
            self.events[event["event"]] = {k: v for k, v in event.items() if k != "event"}
            self._queue.put(event)

    def expect(self, name: str, timeout: float) -> dict[str, Any]:
        """The next event called `name` (skipping others), within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                event = self._queue.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                if self._proc.poll() is not None and self._queue.empty():
                    self._reader.join(timeout=5)  # what it printed last is queued by now
                    if self._queue.empty():
                        break  # exited: nothing more will come
                continue
            if event.pop("event") == name:
                return event
        raise AssertionError(
            f"no {name!r} event within {timeout:g} s (driver exit status "
            f"{self._proc.poll()}): {self.stderr()}"
        )

    def finish(self, timeout: float = DEFAULT_TIMEOUT_S) -> str:
        """Let the driver close its stream and exit; its stderr."""
        self._close_stdin()
        assert self._proc.wait(timeout=timeout) == 0, self.stderr()
        return self.stderr()

    def stderr(self) -> str:
        return self._log.read_text(errors="replace")

    def _close_stdin(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):  # it exited already
                self._proc.stdin.close()

    def close(self) -> None:
        self._close_stdin()
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait(timeout=DEFAULT_TIMEOUT_S)
        if self._reader.is_alive():
            self._reader.join(timeout=5)
        assert self._proc.stdout is not None
        self._proc.stdout.close()


def segments(audio: np.ndarray, gap: int = 2000, threshold: int = 0) -> list[np.ndarray]:
    """The sounding stretches of `audio`, split where it is silent for `gap` samples."""
    loud = np.flatnonzero(np.abs(audio.astype(np.int32)) > threshold)
    if not loud.size:
        return []
    breaks = np.flatnonzero(np.diff(loud) > gap)
    starts = [loud[0], *loud[breaks + 1]]
    ends = [*loud[breaks], loud[-1]]
    return [audio[s : e + 1] for s, e in zip(starts, ends, strict=True)]


def as_played(pcm: np.ndarray, fade: int) -> np.ndarray:
    """`pcm` with the player's fades (same float32 arithmetic), trimmed to its sounding part."""
    shaped = pcm.astype(np.float32)
    shaped[:fade] *= fade_in_gain(fade)
    out = shaped.astype(np.int16)
    out[-fade:] = (out[-fade:] * fade_out_gain(fade)).astype(np.int16)
    sounding = np.flatnonzero(out)
    return out[sounding[0] : sounding[-1] + 1]


def dominant_hz(audio: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(audio.astype(np.float64) * np.hanning(audio.size)))
    return float(np.argmax(spectrum) * RATE / audio.size)


def peak(audio: np.ndarray) -> int:
    return int(np.abs(audio.astype(np.int32)).max())


def has_sound_card() -> bool:
    cards = Path("/proc/asound/cards")
    return cards.exists() and "no soundcards" not in cards.read_text()


@pytest.fixture()
def card_root() -> Iterator[Path]:
    """A card directory with its asoundrc written up front, and no sound server yet."""
    root = Path(tempfile.mkdtemp(prefix="vcard-"))
    server = f'"unix:{root / "native"}"'
    (root / ".asoundrc").write_text(
        f"pcm.!default {{ type pulse; server {server} }}\n"
        f"ctl.!default {{ type pulse; server {server} }}\n"
    )
    yield root
    shutil.rmtree(root, ignore_errors=True)


def card_env(root: Path) -> dict[str, str]:
    return {"HOME": str(root), "PULSE_SERVER": f"unix:{root / 'native'}"}


def start_card(root: Path) -> VirtualSoundCard:
    for stale in ("cap.fifo", "native"):  # left by a card that ran here before
        (root / stale).unlink(missing_ok=True)
    card = VirtualSoundCard(root)
    card.start()
    return card


# -- through the sound card ---------------------------------------------------------


@pytest.mark.daemon
def test_a_tone_plays_in_real_time_and_arrives_intact(sound_card: VirtualSoundCard) -> None:
    mark = sound_card.mark()
    heard_all = lambda: sound_card.wait_played(mark, min_sound_s=0.9)  # noqa: E731
    events, _ = drive(sound_card.env, "tone", heard_all, idle=0.3, writes=5)
    played, done = events["played"], events["done"]
    assert played["writes_ok"] == [True] * 5 and played["end_ok"] is True
    # end() waits for the last frame to reach ALSA: one second of audio takes one second,
    # never less (the card is paced). The upper bounds only catch a hang: a busy machine
    # delays the callback thread, and latency is measured in bench/, not here.
    assert played["begun"] <= played["first_sample_at"] < played["begun"] + 5
    assert 0.85 < played["end_returned"] - played["first_sample_at"] < 1.0 + 5
    assert played["first_sample_at"] < played["finished_at"] <= played["end_returned"]
    heard = sound_card.first_sound_time(mark)
    assert heard is not None and 0 <= heard - played["first_sample_at"] < 5
    assert done == {
        "status": "ok",
        "healthy": True,
        "underruns": 0,  # the idle silence before it is not an underrun
        "stream_opens": 1,
        "callback_errors": 0,
    }
    [sound] = segments(sound_card.captured(mark))
    assert dominant_hz(sound) == pytest.approx(440, abs=2)
    # The card received exactly what was written, faded in and out.
    np.testing.assert_array_equal(sound, as_played(tone(440.0, 1.0), FADE))


@pytest.mark.daemon
@pytest.mark.parametrize("fade_ms", [15, 0])
def test_fade_in_ramps_the_first_samples(sound_card: VirtualSoundCard, fade_ms: int) -> None:
    mark = sound_card.mark()
    # A cosine starts at full amplitude: without a fade its first sample is a click.
    heard = lambda: sound_card.wait_played(mark, min_sound_s=0.25)  # noqa: E731
    drive(sound_card.env, "tone", heard, fade_ms=fade_ms, phase=np.pi / 2, seconds=0.3)
    audio = sound_card.captured(mark)
    onset = np.flatnonzero(audio)[0]
    first_ms = peak(audio[onset : onset + RATE // 1000])
    if fade_ms:
        assert first_ms < 0.1 * 12000
        fade = round(fade_ms * RATE / 1000)
        envelope = [peak(audio[onset + i : onset + i + 50]) for i in range(0, fade, 50)]
        assert envelope == sorted(envelope), f"not a ramp: {envelope}"
        assert peak(audio[onset + fade : onset + fade + 100]) > 0.95 * 12000
    else:
        assert first_ms > 0.95 * 12000


@pytest.mark.daemon
def test_utterances_back_to_back_share_one_stream(sound_card: VirtualSoundCard) -> None:
    mark = sound_card.mark()
    heard = lambda: sound_card.wait_played(mark, min_sound_s=0.9)  # noqa: E731
    events, _ = drive(sound_card.env, "back_to_back", heard)
    first, second = events["played"]["first"], events["played"]["second"]
    assert events["played"]["same_stream"] and events["done"]["stream_opens"] == 1
    assert first["end_ok"] and second["end_ok"] and events["done"]["underruns"] == 0
    # No reopen between them: the next utterance goes into the running stream. How soon
    # depends on when the driver's thread gets a core, so the bound only catches a hang.
    assert second["first_sample_at"] - first["finished_at"] < 2
    sounds = segments(sound_card.captured(mark), gap=RATE // 10)
    assert sum(s.size for s in sounds) == pytest.approx(RATE, abs=RATE * 0.1)
    assert dominant_hz(sounds[0][: RATE * 4 // 10]) == pytest.approx(440, abs=3)
    assert dominant_hz(sounds[-1][-RATE * 4 // 10 :]) == pytest.approx(660, abs=3)


@pytest.mark.daemon
def test_an_underrun_is_counted_and_playback_completes(sound_card: VirtualSoundCard) -> None:
    mark = sound_card.mark()
    # 0.5 s of tone, the ring runs dry until the writer is back at 0.8 s, then 0.5 s more:
    # a span over 1.05 s means the second half is coming out.
    heard = lambda: sound_card.wait_played(mark, min_sound_s=1.05)  # noqa: E731
    events, _ = drive(sound_card.env, "tone", heard, writes=4, pause=0.8)
    assert events["played"]["end_ok"] and events["done"]["underruns"] == 1
    halves = segments(sound_card.captured(mark))
    assert len(halves) == 2  # the ring ran dry: silence, then the rest
    assert sum(h.size for h in halves) == pytest.approx(RATE, abs=100)


@pytest.mark.daemon
def test_interrupt_fades_out_within_fade_ms_and_a_block(sound_card: VirtualSoundCard) -> None:
    mark = sound_card.mark()
    # ~0.5 s of the tone, a 0.5 s gap, 0.3 s of another: a span over 1.1 s is the second.
    heard = lambda: sound_card.wait_played(mark, min_sound_s=1.1)  # noqa: E731
    events, _ = drive(sound_card.env, "interrupt", heard, after=0.5)
    cut = events["interrupted"]
    assert cut["write_ok"] is False and cut["end_ok"] is False and cut["flag"] is True
    # The blocked writer woke up, rather than waiting for the 3-s tone to drain (a busy
    # machine may take a while to give it a core, hence the loose bound).
    assert cut["write_returned"] - cut["interrupted_at"] < 2
    interrupted, following = segments(sound_card.captured(mark))
    # Everything after what had been handed to ALSA: the fade, and a block at most.
    extra = interrupted.size - cut["handed"]
    assert -50 < extra <= FADE + BLOCK, extra
    assert peak(interrupted[-50:]) < 0.2 * peak(interrupted), "stopped without a fade"
    assert interrupted.size < 3 * RATE // 2  # the rest of the 3-s tone was dropped
    assert events["played"]["end_ok"] and dominant_hz(following) == pytest.approx(660, abs=5)
    assert events["done"]["underruns"] == 0


@pytest.mark.daemon
def test_a_callback_exception_is_counted_and_audio_continues(
    sound_card: VirtualSoundCard,
) -> None:
    mark = sound_card.mark()
    heard = lambda: sound_card.wait_played(mark, min_sound_s=0.9)  # noqa: E731
    events, stderr = drive(sound_card.env, "callback_error", heard)
    assert events["played"]["end_ok"]
    assert events["done"]["callback_errors"] == 1 and events["done"]["stream_opens"] == 1
    assert events["done"]["status"] == "ok" and "boom from the test" in stderr
    sound = sound_card.captured(mark)
    # One block of silence instead of the failed callback's audio; nothing lost.
    assert sum(s.size for s in segments(sound, gap=200)) == pytest.approx(RATE, abs=100)


@pytest.mark.daemon
def test_a_dead_stream_is_reopened(sound_card: VirtualSoundCard) -> None:
    mark = sound_card.mark()
    heard = lambda: sound_card.wait_played(mark, min_sound_s=0.45)  # noqa: E731
    events, stderr = drive(sound_card.env, "dead_stream", heard)
    assert events["reopened"]["ok"] and events["done"]["stream_opens"] == 2
    assert events["played"]["end_ok"] and "reopening" in stderr
    [sound] = segments(sound_card.captured(mark))
    assert dominant_hz(sound) == pytest.approx(440, abs=3)


@pytest.mark.daemon
def test_an_unknown_device_degrades_with_a_reason(sound_card: VirtualSoundCard) -> None:
    events, stderr = drive(sound_card.env, "missing", device="no-such-device", retries=2)
    status = events["done"]["status"]
    assert status.startswith("degraded: ") and "no-such-device" in status
    assert events["state"]["begin_error"] == status.removeprefix("degraded: ")
    assert events["state"]["opens_tried"] >= 3
    assert events["done"]["healthy"] is False and events["done"]["stream_opens"] == 0
    # Retried (after 0.5 s, 1 s) without an exception, and said so once, not per retry.
    assert "Traceback" not in stderr and stderr.count("degraded") == 1


@pytest.mark.daemon
@pytest.mark.skipif(has_sound_card(), reason="this machine has a real sound card")
def test_no_sound_card_degrades_with_a_reason(tmp_path: Path) -> None:
    # HOME without an asoundrc: ALSA sees only the (absent) hardware, like a bare board.
    events, stderr = drive({"HOME": str(tmp_path), "PULSE_SERVER": ""}, "missing")
    assert events["done"]["status"].startswith("degraded: cannot open output device default")
    assert events["state"]["begin_error"] and "Traceback" not in stderr


@pytest.mark.daemon
def test_recovers_when_the_device_appears(card_root: Path, tmp_path: Path) -> None:
    driver = LiveDriver(
        card_env(card_root), "recover", tmp_path / "driver.log", timeout=60, await_retry=True
    )
    card = None
    try:
        assert driver.expect("waiting", timeout=60)["status"].startswith("degraded: ")
        retried = driver.expect("retried", timeout=60)  # a retry fails first
        assert retried["status"].startswith("degraded: ")
        card = start_card(card_root)
        mark = card.mark()
        # The back-off doubles from 0.5 s: the next retry or the one after finds the card.
        assert driver.expect("recovered", timeout=90)["ok"]
        assert driver.expect("played", timeout=60)["end_ok"]
        card.wait_played(mark, min_sound_s=0.45)
        assert "Audio output open" in driver.finish()
        [sound] = segments(card.captured(mark))
        assert dominant_hz(sound) == pytest.approx(440, abs=3)
    finally:
        driver.close()
        if card is not None:
            card.stop()


@pytest.mark.daemon
def test_a_lost_device_fails_playback_then_recovers(card_root: Path, tmp_path: Path) -> None:
    card = start_card(card_root)
    driver = LiveDriver(card_env(card_root), "lost_device", tmp_path / "driver.log")
    try:
        driver.expect("playing", timeout=60)
        card.stop()
        lost = driver.expect("degraded", timeout=60)
        assert lost["ok"] and lost["status"].startswith("degraded: ")
        # The writer blocked on a ring that no longer drains is released with a failure.
        assert lost["writer_done"] and lost["write_ok"] is False and lost["end_ok"] is False
        card = start_card(card_root)
        mark = card.mark()
        assert driver.expect("recovered", timeout=90)["ok"]
        assert driver.expect("played", timeout=60)["end_ok"]
        card.wait_played(mark, min_sound_s=0.45)
        driver.finish()
        [sound] = segments(card.captured(mark))
        assert dominant_hz(sound) == pytest.approx(440, abs=3)
    finally:
        driver.close()
        card.stop()


# -- the callback's bookkeeping, in process (no device) -----------------------------


class _Flags:
    output_underflow = False


def fake_callback(out: AlsaOutput, frames: int = BLOCK) -> np.ndarray:
    buffer = bytearray(frames * 2)
    out._device._callback(buffer, frames, None, _Flags())
    return np.frombuffer(buffer, dtype=np.int16)


@pytest.fixture()
def offline() -> AlsaOutput:
    """An AlsaOutput whose callback the test calls itself, as PortAudio would."""
    out = AlsaOutput(AudioSettings(ring_buffer_seconds=1.0, fade_ms=0), RATE)
    out._device._reason = None  # as if the stream were open
    return out


@pytest.mark.unit
def test_callback_stamps_utterances_and_counts_underruns_once(offline: AlsaOutput) -> None:
    u = Utterance("u", RATE)
    fake_callback(offline)  # idle: silence, not an underrun
    offline.begin(u)
    offline.write(u, np.full(1500, 1000, dtype=np.int16), NEVER)
    assert (fake_callback(offline) == 1000).all() and u.first_sample_at is not None
    block = fake_callback(offline)
    assert (block[:476] == 1000).all() and (block[476:] == 0).all()
    fake_callback(offline)  # still dry: the same underrun
    assert offline.underruns == 1
    offline.write(u, np.full(100, 7, dtype=np.int16), NEVER)
    fake_callback(offline)
    fake_callback(offline)
    assert offline.underruns == 2
    assert offline.end(u, NEVER, timeout=0.2) is True  # everything was already handed out
    assert u.finished_at is not None


@pytest.mark.unit
def test_end_returns_once_the_last_frame_is_handed_out(offline: AlsaOutput) -> None:
    u = Utterance("u", RATE)
    offline.begin(u)
    assert offline.write(u, np.full(3000, 5, dtype=np.int16), NEVER)
    result: list[bool] = []
    ender = threading.Thread(target=lambda: result.append(offline.end(u, NEVER, 30)))
    ender.start()
    for _ in range(3):
        # The behaviour under test: end() does not return while frames are still unread
        # (a short look; a slow machine can only make this pass, never fail wrongly).
        time.sleep(0.05)
        assert not result
        fake_callback(offline)
    ender.join(timeout=DEFAULT_TIMEOUT_S)
    assert result == [True] and u.finished_at is not None and offline.underruns == 0


@pytest.mark.unit
def test_callback_exception_plays_silence(offline: AlsaOutput) -> None:
    u = Utterance("u", RATE)
    offline.begin(u)
    offline.write(u, np.full(BLOCK, 9, dtype=np.int16), NEVER)
    offline._device._callback.inject_error(ValueError("bug"))
    assert (fake_callback(offline) == 0).all() and offline.callback_errors == 1
    assert (fake_callback(offline) == 9).all()  # called again, and nothing was lost


@pytest.mark.unit
def test_callback_allocates_nothing_per_call(offline: AlsaOutput) -> None:
    u = Utterance("u", RATE)
    offline.begin(u)
    offline.write(u, np.ones(RATE // 2, dtype=np.int16), NEVER)
    buffer, flags = bytearray(BLOCK * 2), _Flags()
    for _ in range(3):  # warm up lazily created state
        offline._device._callback(buffer, BLOCK, None, flags)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for _ in range(200):  # reads the ring dry and on: both paths
            offline._device._callback(buffer, BLOCK, None, flags)
        after, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 1024 and peak_bytes - before < BLOCK  # a block would be 2 KiB


@pytest.mark.unit
def test_interrupt_releases_a_blocked_writer(offline: AlsaOutput) -> None:
    u = Utterance("u", RATE)
    offline.begin(u)
    result: list[bool] = []
    writer = threading.Thread(
        target=lambda: result.append(offline.write(u, np.ones(2 * RATE, np.int16), NEVER))
    )
    writer.start()
    # The ring holds 1 s: the writer fills it, then waits for the callback.
    wait_until(lambda: offline._ring.free() == 0, what="the writer to fill the ring")
    assert not result
    fake_callback(offline)
    offline.interrupt()
    writer.join(timeout=DEFAULT_TIMEOUT_S)
    assert result == [False] and u.interrupted
    assert offline._ring.available() <= FADE
    assert offline.write(u, np.ones(10, np.int16), NEVER) is False
    assert offline.end(u, NEVER, timeout=1) is False


@pytest.mark.unit
def test_begin_refuses_while_degraded_and_checks_the_rate() -> None:
    out = AlsaOutput(AudioSettings(), RATE)
    with pytest.raises(AudioUnavailableError, match="not started"):
        out.begin(Utterance("u", RATE))
    assert out.status == "degraded: not started" and not out.healthy
    with pytest.raises(ValueError, match="resample"):
        out.begin(Utterance("u", 16000))
    out.close()
    out.close()  # idempotent


class FakeStream:
    """Stands in for a sounddevice stream in supervisor tests."""

    latency = 0.1

    def __init__(self) -> None:
        self.active = False
        self.closed = False

    def start(self) -> None:
        self.active = True

    def stop(self) -> None:
        self.active = False

    abort = stop

    def close(self) -> None:
        self.closed = True


class RecordingEvent(threading.Event):
    """A stop event that records how long each wait() was asked to wait."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.timeouts.append(timeout)
        return super().wait(timeout)


@pytest.mark.unit
def test_supervisor_backs_off_exponentially_then_recovers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(device, "BACKOFF_MIN_S", 0.02)
    monkeypatch.setattr(device, "BACKOFF_MAX_S", 0.1)
    out = AlsaOutput(AudioSettings(), RATE)
    stop = RecordingEvent()
    monkeypatch.setattr(out._device, "_stop", stop)
    attempts: list[float] = []

    def open_stream(reinit: bool) -> FakeStream:
        attempts.append(time.monotonic())
        if len(attempts) < 6:
            raise ValueError("No output device matching 'usb'")
        stream = FakeStream()
        stream.start()
        return stream

    monkeypatch.setattr(out._device, "_new_stream", open_stream)
    out.start()  # the first attempt fails here, without raising
    try:
        assert (
            out.status
            == "degraded: cannot open output device default: No output device matching 'usb'"
        )
        wait_until(lambda: out.status == "ok", what="the supervisor to open the stream")
        assert out.stream_opens == 1 and len(attempts) == 6
        # The delays it asked for (exact), and that it really waited at least that long;
        # how much longer depends on the machine's load, so that is not asserted.
        assert stop.timeouts[:5] == pytest.approx([0.02, 0.04, 0.08, 0.1, 0.1])
        asked = [t for t in stop.timeouts[:5] if t is not None]
        assert all(gap >= t - 0.005 for gap, t in zip(np.diff(attempts), asked, strict=True))
    finally:
        out.close()


@pytest.mark.unit
def test_supervisor_reopens_a_stream_whose_callback_stalled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(device, "CALLBACK_STALL_S", 0.3)
    out = AlsaOutput(AudioSettings(), RATE)
    streams: list[FakeStream] = []

    def open_stream(reinit: bool) -> FakeStream:
        streams.append(FakeStream())
        streams[-1].start()
        if len(streams) == 2:  # the new stream is fine: never taken for stalled, however slow
            monkeypatch.setattr(device, "CALLBACK_STALL_S", 3600.0)
        return streams[-1]

    monkeypatch.setattr(out._device, "_new_stream", open_stream)
    out.start()
    try:
        assert out.status == "ok" and out.healthy
        u = Utterance("u", RATE)
        out.begin(u)
        assert out.write(u, np.ones(100, np.int16), NEVER)
        # Active, but PortAudio never calls back: no frame is handed out, ever.
        assert out.end(u, NEVER, timeout=30) is False  # failed when the stream was dropped
        wait_until(lambda: out.stream_opens >= 2, what="the supervisor to reopen the stream")
        assert out.stream_opens == 2 and streams[0].closed and out.status == "ok"
    finally:
        out.close()
    assert streams[1].closed and out.status == "degraded: closed"


# -- WAV directory sink -------------------------------------------------------------


def wav_output(directory: Path, **fields: Any) -> WavDirOutput:
    return WavDirOutput(AudioSettings(sink="wav-dir", wav_dir=directory, **fields), RATE)


def read_wav(path: Path) -> tuple[int, int, int, np.ndarray]:
    with wave.open(str(path), "rb") as wav:
        frames = np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")
        return wav.getframerate(), wav.getnchannels(), wav.getsampwidth(), frames


@pytest.mark.unit
def test_wav_dir_writes_one_exact_wav_per_utterance(tmp_path: Path) -> None:
    out = wav_output(tmp_path / "out", fade_ms=0)
    out.start()
    assert out.status == "ok" and out.healthy and out.underruns == 0
    pcm = tone(440.0, 0.5)
    u = Utterance("req-1", RATE)
    out.begin(u)
    for piece in np.array_split(pcm, 4):
        assert out.write(u, piece, NEVER)
    assert out.end(u, NEVER, timeout=1)
    assert u.first_sample_at is not None and u.finished_at is not None
    assert u.first_sample_at <= u.finished_at
    rate, channels, width, frames = read_wav(tmp_path / "out" / "req-1.wav")
    assert (rate, channels, width) == (RATE, 1, 2)
    lead_in = ms_to_frames(AudioSettings().lead_in_ms, RATE)  # for a player that wakes late
    assert lead_in > 0 and not frames[:lead_in].any()
    np.testing.assert_array_equal(frames[lead_in:], pcm)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["req-1.wav"]


@pytest.mark.unit
def test_wav_dir_appears_only_when_complete(tmp_path: Path) -> None:
    out = wav_output(tmp_path)
    out.start()
    u = Utterance("atomic", RATE)
    out.begin(u)
    out.write(u, tone(440.0, 0.2), NEVER)
    assert list(tmp_path.glob("*.wav")) == []  # a reader never sees half a file
    assert len(list(tmp_path.glob(".atomic.*.part"))) == 1
    out.end(u, NEVER, timeout=1)
    assert [p.name for p in tmp_path.iterdir()] == ["atomic.wav"]


@pytest.mark.unit
def test_wav_dir_applies_fades_and_volume(tmp_path: Path) -> None:
    out = wav_output(tmp_path, volume=0.5, fade_ms=15, lead_in_ms=0)
    out.start()
    u = Utterance("faded", RATE)
    out.begin(u)
    out.write(u, np.full(100, 10000, np.int16), NEVER)  # shorter than the fade: it spans writes
    out.write(u, np.full(RATE, 10000, np.int16), NEVER)
    out.end(u, NEVER, timeout=1)
    frames = read_wav(tmp_path / "faded.wav")[3]
    assert frames.size == RATE + 100
    assert frames[0] < 100 and np.all(np.diff(frames[:FADE].astype(np.int32)) >= 0)
    assert (frames[FADE:-FADE] == 5000).all()
    assert frames[-1] < 100 and np.all(np.diff(frames[-FADE:].astype(np.int32)) <= 0)


@pytest.mark.unit
def test_wav_dir_interrupt_and_stop_leave_no_file(tmp_path: Path) -> None:
    out = wav_output(tmp_path)
    out.start()
    u = Utterance("cut", RATE)
    out.begin(u)
    assert out.write(u, tone(440.0, 0.1), NEVER)
    out.interrupt()
    assert u.interrupted
    assert out.write(u, tone(440.0, 0.1), NEVER) is False
    assert out.end(u, NEVER, timeout=1) is False
    v = Utterance("stopped", RATE)
    out.begin(v)
    assert out.write(v, tone(440.0, 0.1), SET) is False
    assert out.end(v, SET, timeout=1) is False
    assert list(tmp_path.iterdir()) == []


@pytest.mark.unit
def test_wav_dir_names_stay_inside_the_directory(tmp_path: Path) -> None:
    assert safe_name("../../etc/passwd") == "_.._etc_passwd"
    assert safe_name("...") == "utterance" and safe_name("a b/c") == "a_b_c"
    out = wav_output(tmp_path / "d")
    out.start()
    u = Utterance("../escape", RATE)
    out.begin(u)
    out.write(u, tone(440.0, 0.05), NEVER)
    out.end(u, NEVER, timeout=1)
    assert [p.parent for p in (tmp_path / "d").iterdir()] == [tmp_path / "d"]
    assert not (tmp_path / "escape.wav").exists()


@pytest.mark.unit
def test_wav_dir_that_cannot_be_created_is_degraded(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    out = wav_output(blocker / "wavs")
    out.start()
    assert out.status.startswith("degraded: cannot create") and not out.healthy
    with pytest.raises(AudioUnavailableError, match="cannot create"):
        out.begin(Utterance("u", RATE))
    blocker.unlink()  # the directory can be made now: the next begin() recovers
    out.begin(Utterance("u", RATE))
    assert out.status == "ok"
    out.close()  # discards the unfinished file
    assert list((blocker / "wavs").iterdir()) == []


@pytest.mark.unit
def test_open_output_picks_the_sink_from_the_settings(tmp_path: Path) -> None:
    wav = open_output(AudioSettings(sink="wav-dir", wav_dir=tmp_path, fade_ms=10), RATE)
    assert isinstance(wav, WavDirOutput) and wav.directory == tmp_path and wav.fade_ms == 10
    settings = AudioSettings(device="hw:0", volume=0.8, latency_ms=30, block_frames=256)
    alsa = open_output(settings, RATE)
    assert isinstance(alsa, AlsaOutput) and alsa.volume == 0.8 and alsa.sample_rate == RATE
    stream = alsa._device
    assert (stream.name, stream.latency, stream.block_frames) == ("hw:0", 0.03, 256)
    with pytest.raises(ValueError, match="wav_dir"):
        WavDirOutput(AudioSettings(), RATE)


@pytest.mark.unit
def test_wav_dir_write_failure_degrades_until_a_file_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = wav_output(tmp_path / "out", fade_ms=0)
    out.start()
    u = Utterance("full", RATE)
    out.begin(u)

    def disk_full(*_: object) -> bool:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(wav.WavWriter, "write", disk_full)
    with pytest.raises(AudioUnavailableError, match="No space left on device"):
        out.write(u, tone(440.0, 0.1), NEVER)
    assert list((tmp_path / "out").iterdir()) == []  # the partial file is gone
    assert out.status.startswith("degraded: cannot write into")
    monkeypatch.undo()
    out.recover()  # the probe has room, but that says nothing about the next WAV's size
    assert out.status.startswith("degraded: cannot write into") and not out.healthy
    assert list((tmp_path / "out").iterdir()) == []
    again = Utterance("again", RATE)
    out.begin(again)  # still tried for real while degraded
    assert out.write(again, tone(440.0, 0.1), NEVER) and out.end(again, NEVER, 5)
    assert out.status == "ok"  # a whole file was written
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["again.wav"]


@pytest.mark.unit
def test_a_device_given_as_digits_is_an_index_for_portaudio() -> None:
    assert portaudio_device("2") == 2
    assert portaudio_device("hw:1,0") == "hw:1,0"
    assert portaudio_device("USB Audio 2") == "USB Audio 2"
    assert portaudio_device(None) is None
