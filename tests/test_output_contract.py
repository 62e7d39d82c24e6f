"""One contract for every audio output: ALSA, the WAV directory, `say --out`'s file, the fake.

Each test runs against each of them (mopidy's way: a fake that passes the real parts'
suite is a fake the pipeline's tests can trust). The promises are AudioOutput's
(edge_tts/audio/output.py), as the pipeline relies on them. The ALSA output plays into
the real-time virtual sound card from a driver process (tests/support/remote_output.py);
what came out is read back from the card, from the WAV file, or from the fake's record.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pytest

from edge_tts.audio.dsp import fade_in_gain, fade_out_gain
from edge_tts.audio.output import AudioOutput, AudioUnavailableError, Utterance
from edge_tts.audio.wavdir import WavDirOutput, safe_name
from edge_tts.audio.wavfile import WavFileOutput
from edge_tts.config import AudioSettings

from .support.fakes import FakeOutput
from .support.player_driver import tone
from .support.remote_output import RemoteOutput
from .support.soundcard import VirtualSoundCard
from .support.waiting import DEFAULT_TIMEOUT_S, wait_until

RATE = 22050
FADE_MS = 15
FADE = round(FADE_MS * RATE / 1000)
NEVER = threading.Event()
SET = threading.Event()
SET.set()
LONG_S = 30.0  # a write that takes this long to play is still blocked when stop comes


class Rig(Protocol):
    """One output implementation, and a way to hear what came out of it."""

    blocks: bool  # write() waits while the device is behind (a WAV file never is)
    degrades: bool  # a missing device or directory makes it "degraded" until it is back

    def open(self, available: bool = True, **settings: Any) -> AudioOutput:
        """A started output with these AudioSettings fields; unavailable: its device (or
        directory) is missing until plug()."""

    def plug(self) -> None: ...

    def mark(self) -> int:
        """A position in what came out, for heard()."""

    def heard(self, mark: int, utterance: Utterance, seconds: float) -> np.ndarray:
        """What came out for `utterance` (about `seconds` long), from its first non-zero
        sample on, at the output's rate."""

    def close(self) -> None: ...


class AlsaRig:
    blocks = True
    degrades = True

    def __init__(self, logs: Path) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="vcard-"))  # short: a socket path is in it
        server = f'"unix:{self.root / "native"}"'
        (self.root / ".asoundrc").write_text(  # so a driver started before the card finds it
            f"pcm.!default {{ type pulse; server {server} }}\n"
            f"ctl.!default {{ type pulse; server {server} }}\n"
        )
        self.card: VirtualSoundCard | None = None
        self.outputs: list[RemoteOutput] = []
        self.logs = logs

    def open(self, available: bool = True, **settings: Any) -> AudioOutput:
        if available:
            self.plug()
        env = {"HOME": str(self.root), "PULSE_SERVER": f"unix:{self.root / 'native'}"}
        out = RemoteOutput(env, settings, self.logs / f"driver-{len(self.outputs)}.log")
        self.outputs.append(out)
        out.start()
        return out

    def plug(self) -> None:
        if self.card is None:
            self.card = VirtualSoundCard(self.root)
            self.card.start()

    def mark(self) -> int:
        assert self.card is not None
        return self.card.mark()

    def heard(self, mark: int, utterance: Utterance, seconds: float) -> np.ndarray:
        assert self.card is not None
        return from_first_sound(self.card.wait_played(mark, min_sound_s=0.9 * seconds))

    def close(self) -> None:
        try:
            for out in self.outputs:
                out.shutdown()
        finally:
            if self.card is not None:
                self.card.stop()
            shutil.rmtree(self.root, ignore_errors=True)


class WavDirRig:
    blocks = False
    degrades = True

    def __init__(self, tmp: Path) -> None:
        self.blocker = tmp / "not-a-directory"
        self.directory = tmp / "wavs"
        self.outputs: list[WavDirOutput] = []

    def open(self, available: bool = True, **settings: Any) -> AudioOutput:
        if not available:  # a file where a parent directory should be
            self.blocker.write_text("")
            self.directory = self.blocker / "wavs"
        out = WavDirOutput(AudioSettings(sink="wav-dir", wav_dir=self.directory, **settings), RATE)
        self.outputs.append(out)
        out.start()
        return out

    def plug(self) -> None:
        self.blocker.unlink(missing_ok=True)

    def mark(self) -> int:
        return 0

    def heard(self, mark: int, utterance: Utterance, seconds: float) -> np.ndarray:
        return self.read(self.directory / f"{safe_name(utterance.request_id)}.wav")

    @staticmethod
    def read(path: Path) -> np.ndarray:
        with wave.open(str(path)) as wav:
            assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (RATE, 1, 2)
            return from_first_sound(np.frombuffer(wav.readframes(wav.getnframes()), "<i2"))

    def close(self) -> None:
        for out in self.outputs:  # an unfinished file is closed and removed
            out.close()


class WavFileRig:
    blocks = False
    degrades = False  # an unwritable path fails its one request: nothing to recover

    def __init__(self, tmp: Path) -> None:
        self.path = tmp / "said.wav"
        self.outputs: list[WavFileOutput] = []

    def open(self, available: bool = True, **settings: Any) -> AudioOutput:
        out = WavFileOutput(self.path, AudioSettings(**settings), RATE)
        self.outputs.append(out)
        out.start()
        return out

    def plug(self) -> None: ...

    def mark(self) -> int:
        return 0

    def heard(self, mark: int, utterance: Utterance, seconds: float) -> np.ndarray:
        return WavDirRig.read(self.path)

    def close(self) -> None:
        for out in self.outputs:
            out.close()


class FakeRig:
    blocks = True
    degrades = True

    def __init__(self) -> None:
        self.out: FakeOutput | None = None

    def open(self, available: bool = True, **settings: Any) -> AudioOutput:
        # 10 times real time: LONG_S takes seconds, so it is still playing when stopped.
        self.out = FakeOutput(
            speedup=10.0, available=available, settings=AudioSettings(**settings), sample_rate=RATE
        )
        self.out.start()
        return self.out

    def plug(self) -> None:
        assert self.out is not None
        self.out.available = True

    def mark(self) -> int:
        return 0

    def heard(self, mark: int, utterance: Utterance, seconds: float) -> np.ndarray:
        assert self.out is not None
        return from_first_sound(self.out.recorded[utterance.request_id])

    def close(self) -> None:
        if self.out is not None:
            self.out.close()


# The tier is the output's: the ALSA one plays on the virtual sound card (PulseAudio and a
# player process), the others are files and memory.
@pytest.fixture(
    params=[
        pytest.param("alsa", marks=pytest.mark.daemon),
        pytest.param("wav-dir", marks=pytest.mark.unit),
        pytest.param("wav-file", marks=pytest.mark.unit),
        pytest.param("fake", marks=pytest.mark.unit),
    ]
)
def rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    made: Rig
    if request.param == "alsa":
        made = AlsaRig(tmp_path)
    elif request.param == "wav-dir":
        made = WavDirRig(tmp_path)
    elif request.param == "wav-file":
        made = WavFileRig(tmp_path)
    else:
        made = FakeRig()
    try:
        yield made
    finally:
        made.close()


# -- helpers --------------------------------------------------------------------------


def from_first_sound(audio: np.ndarray) -> np.ndarray:
    sound = np.flatnonzero(audio)
    return audio[sound[0] :] if sound.size else audio[:0]


def sounding(audio: np.ndarray) -> np.ndarray:
    sound = np.flatnonzero(audio)
    return audio[sound[0] : sound[-1] + 1] if sound.size else audio[:0]


def shaped(pcm: np.ndarray, volume: float, fade: int) -> np.ndarray:
    """`pcm` as an output should play it: volume, then a fade in and out over `fade`."""
    out = pcm.astype(np.float32) * np.float32(volume)
    out[:fade] *= fade_in_gain(fade)
    result: np.ndarray = np.clip(out, -32768, 32767).astype(np.int16)
    if fade:
        result[-fade:] = (result[-fade:] * fade_out_gain(fade)).astype(np.int16)
    return result


def dominant_hz(audio: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(audio.astype(np.float64) * np.hanning(audio.size)))
    return float(np.argmax(spectrum) * RATE / audio.size)


def play(out: AudioOutput, utterance: Utterance, *pieces: np.ndarray) -> None:
    out.begin(utterance)
    for piece in pieces:
        assert out.write(utterance, piece, NEVER) is True
    assert out.end(utterance, NEVER, timeout=DEFAULT_TIMEOUT_S) is True


def start_writer(
    out: AudioOutput, utterance: Utterance, stop: threading.Event
) -> tuple[threading.Thread, list[bool]]:
    """Write LONG_S of tone from another thread; returns once it plays: (thread, [result])."""
    result: list[bool] = []
    writer = threading.Thread(
        target=lambda: result.append(out.write(utterance, tone(440.0, LONG_S), stop)),
        name="writer",
        daemon=True,
    )
    writer.start()
    wait_until(lambda: utterance.first_sample_at is not None, what="the first sample out")
    return writer, result


def plays_afterwards(rig: Rig, out: AudioOutput) -> None:
    """The output takes the next utterance as if nothing had happened. (What the ALSA
    output still had to play of the last one comes first: the ring of 0.2 s, and the
    device's buffer, much shorter than this utterance.)"""
    mark = rig.mark()
    after = Utterance("after", RATE)
    play(out, after, tone(660.0, 1.0))
    heard = sounding(rig.heard(mark, after, 1.0))
    assert dominant_hz(heard[-RATE // 2 :]) == pytest.approx(660, abs=5)


# -- the contract ---------------------------------------------------------------------


def test_plays_every_frame_it_was_given_at_its_rate(rig: Rig) -> None:
    out = rig.open(fade_ms=0)
    assert out.status == "ok" and out.healthy and out.alive
    pcm = tone(440.0, 1.0, phase=0.5)
    mark = rig.mark()
    utterance = Utterance("every-frame", RATE)
    # Most of it first: the ring of the ALSA output must not run dry between the writes.
    play(out, utterance, *np.split(pcm, [int(0.7 * RATE), int(0.85 * RATE)]))
    ended = time.monotonic()
    assert utterance.first_sample_at is not None and utterance.finished_at is not None
    assert utterance.first_sample_at <= utterance.finished_at <= ended
    assert not utterance.interrupted and out.underruns == 0
    heard = rig.heard(mark, utterance, 1.0)
    np.testing.assert_array_equal(heard[: pcm.size], pcm)
    assert not heard[pcm.size :].any()  # nothing after it


def test_applies_volume_and_fades_in_and_out(rig: Rig) -> None:
    out = rig.open(volume=0.5, fade_ms=FADE_MS)
    pcm = tone(440.0, 1.0, phase=np.pi / 2)  # full amplitude at once: a click unless faded
    mark = rig.mark()
    utterance = Utterance("shaped", RATE)
    play(out, utterance, *np.split(pcm, [RATE // 2, RATE // 2 + 100]))
    expected = shaped(pcm, 0.5, FADE)
    heard = rig.heard(mark, utterance, 1.0)[: pcm.size]
    assert heard.size == pcm.size
    np.testing.assert_array_equal(heard[:-FADE], expected[:-FADE])
    # The fade out covers what was not yet played when end() came: at most FADE frames.
    assert (np.abs(heard[-FADE:]) <= np.abs(shaped(pcm, 0.5, 0)[-FADE:])).all()
    assert abs(int(heard[-1])) < 0.05 * 6000 and abs(int(heard[0])) < 0.05 * 6000


def test_a_volume_change_applies_to_what_is_written_next(rig: Rig) -> None:
    out = rig.open(fade_ms=0)
    pcm = tone(440.0, 1.0, phase=0.5)
    half = pcm.size // 2
    mark = rig.mark()
    utterance = Utterance("softer", RATE)
    out.begin(utterance)
    assert out.write(utterance, pcm[:half], NEVER)
    out.set_volume(0.5)  # mid-utterance, as Home Assistant's slider does it
    assert out.write(utterance, pcm[half:], NEVER)
    assert out.end(utterance, NEVER, timeout=DEFAULT_TIMEOUT_S)
    heard = rig.heard(mark, utterance, 1.0)[: pcm.size]
    np.testing.assert_array_equal(heard[:half], pcm[:half])
    np.testing.assert_array_equal(heard[half:], shaped(pcm[half:], 0.5, 0))
    mark = rig.mark()
    after = Utterance("after", RATE)
    play(out, after, pcm)
    np.testing.assert_array_equal(rig.heard(mark, after, 1.0)[: pcm.size], shaped(pcm, 0.5, 0))


def test_refuses_audio_at_another_rate(rig: Rig) -> None:
    out = rig.open()
    with pytest.raises(ValueError, match="resample"):
        out.begin(Utterance("16k", 16000))
    assert out.status == "ok"


def test_refuses_pcm_that_is_not_int16_mono(rig: Rig) -> None:
    out = rig.open()
    utterance = Utterance("float", RATE)
    out.begin(utterance)
    with pytest.raises(TypeError, match="int16"):
        out.write(utterance, np.zeros(100, np.float32), NEVER)
    with pytest.raises(ValueError, match="mono"):
        out.write(utterance, np.zeros((100, 2), np.int16), NEVER)


def test_write_and_end_need_begin(rig: Rig) -> None:
    out = rig.open()
    stray = Utterance("stray", RATE)
    with pytest.raises(RuntimeError, match="without begin"):
        out.write(stray, tone(440.0, 0.1), NEVER)
    with pytest.raises(RuntimeError, match="without begin"):
        out.end(stray, NEVER, timeout=1)


def test_a_set_stop_event_writes_nothing(rig: Rig) -> None:
    out = rig.open()
    utterance = Utterance("stopped", RATE)
    out.begin(utterance)
    assert out.write(utterance, tone(440.0, 0.5), SET) is False
    assert utterance.first_sample_at is None and not utterance.interrupted
    plays_afterwards(rig, out)


def test_stop_releases_a_write_and_end_fails(rig: Rig) -> None:
    out = rig.open(ring_buffer_seconds=0.2)
    utterance, stop = Utterance("long", RATE), threading.Event()
    out.begin(utterance)
    writer, result = start_writer(out, utterance, stop)
    stop.set()
    writer.join(timeout=DEFAULT_TIMEOUT_S)
    assert not writer.is_alive()
    if rig.blocks:  # the writer was still blocked: it returns at once, not when played
        assert result == [False]
    assert out.end(utterance, stop, timeout=DEFAULT_TIMEOUT_S) is False
    assert not utterance.interrupted  # stopping is the caller's; it cuts nothing short
    plays_afterwards(rig, out)


def test_interrupt_releases_a_write_and_drops_the_utterance(rig: Rig) -> None:
    out = rig.open(ring_buffer_seconds=0.2)
    utterance = Utterance("interrupted", RATE)
    out.begin(utterance)
    writer, result = start_writer(out, utterance, NEVER)
    out.interrupt()
    writer.join(timeout=DEFAULT_TIMEOUT_S)
    assert not writer.is_alive() and utterance.interrupted
    if rig.blocks:
        assert result == [False]
    assert out.write(utterance, tone(440.0, 0.1), NEVER) is False
    assert out.end(utterance, NEVER, timeout=DEFAULT_TIMEOUT_S) is False
    plays_afterwards(rig, out)


def test_an_unavailable_output_refuses_with_its_reason_then_recovers(rig: Rig) -> None:
    if not rig.degrades:
        pytest.skip("it has no device or directory that could be missing")
    out = rig.open(available=False, fade_ms=0)
    before = out.status
    assert before.startswith("degraded: ") and not out.healthy
    assert out.alive  # degraded, not dead: restarting the daemon would not help
    with pytest.raises(AudioUnavailableError) as refused:
        out.begin(Utterance("refused", RATE))
    assert f"degraded: {refused.value}" in (before, out.status)  # a retry may say it anew
    rig.plug()

    def recovered() -> bool:
        out.recover()  # as the daemon's health tick does, periodically
        return out.status == "ok"

    wait_until(recovered, timeout=90, what="the output to recover")
    mark = rig.mark()
    utterance = Utterance("recovered", RATE)
    pcm = tone(440.0, 0.5, phase=0.5)
    play(out, utterance, pcm)
    np.testing.assert_array_equal(rig.heard(mark, utterance, 0.5)[: pcm.size], pcm)


def test_close_is_idempotent_and_refuses_what_comes_after(rig: Rig) -> None:
    out = rig.open()
    out.close()
    out.close()
    assert out.status == "degraded: closed" and not out.healthy
    with pytest.raises(AudioUnavailableError, match="closed"):
        out.begin(Utterance("late", RATE))
