"""Audio output: one PortAudio/ALSA stream for the daemon's whole life, or a WAV per request.

`AlsaOutput` keeps a single output stream open; its callback copies from a preallocated
ring (`RingBuffer`) and plays silence when the ring is empty. Opening the device per
utterance is what clips first syllables and causes "device busy" elsewhere. Fades and volume
are applied on the writer side so the callback does nothing but copy. A supervisor thread
opens the device, notices when it is missing, lost or stalled, and reopens it with
exponential back-off; meanwhile `begin()` raises `AudioUnavailableError` with the reason.

`WavDirOutput` implements the same protocol for boards without a speaker.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import threading
import time
import wave
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .ringbuffer import RingBuffer, as_mono_int16, fade_in_gain, fade_out_gain

_LOGGER = logging.getLogger(__name__)

BACKOFF_MIN_S = 0.5
BACKOFF_MAX_S = 30.0
CALLBACK_STALL_S = 2.0  # no callback for this long while the stream should run: it is dead
SUPERVISE_INTERVAL_S = 0.2
SUPERVISOR_GRACE_S = 10.0  # beyond the longest back-off: a supervisor this late is hung
# PortAudio's suggested latency. "low" (~9 ms) leaves no margin for GIL hand-offs while
# synthesis threads run on a Pi; 100 ms is about two 1024-frame blocks at 22.05 kHz.
DEFAULT_LATENCY_S = 0.1
_WRITE_SLICE_S = 0.1  # how often a blocked write() re-checks the caller's stop event
_PROBE_BYTES = 64 * 1024  # what a recovered WAV directory must take: a few blocks


class AudioUnavailableError(RuntimeError):
    """The output cannot take a request now; the message says why."""


@dataclass(eq=False)
class Utterance:
    """One request's audio passing through the output."""

    request_id: str
    sample_rate: int
    first_sample_at: float | None = None  # monotonic time its first frame went to ALSA
    finished_at: float | None = None
    interrupted: bool = False


class AudioOutput(Protocol):
    def start(self) -> None: ...
    def close(self) -> None: ...
    @property
    def healthy(self) -> bool: ...
    @property
    def alive(self) -> bool: ...
    @property
    def status(self) -> str: ...
    @property
    def underruns(self) -> int: ...
    def begin(self, utterance: Utterance) -> None: ...
    def write(self, utterance: Utterance, pcm: np.ndarray, stop: threading.Event) -> bool: ...
    def end(self, utterance: Utterance, stop: threading.Event, timeout: float) -> bool: ...
    def interrupt(self, fade_ms: int | None = None) -> None: ...
    def recover(self) -> None: ...


def open_output(
    sink: str,
    sample_rate: int,
    device: str | int | None,
    wav_dir: Path | str | None,
    volume: float,
    ring_seconds: float,
    fade_ms: int,
    block_frames: int,
    latency_s: float = DEFAULT_LATENCY_S,
) -> AudioOutput:
    if sink == "alsa":
        return AlsaOutput(
            sample_rate, device, volume, ring_seconds, fade_ms, block_frames, latency_s
        )
    if sink == "wav-dir":
        if wav_dir is None:
            raise ValueError("the wav-dir sink needs a directory (wav_dir)")
        return WavDirOutput(Path(wav_dir), sample_rate, volume, fade_ms)
    raise ValueError(f"unknown audio sink {sink!r} (expected 'alsa' or 'wav-dir')")


class _Shaper:
    """Volume and the fade-in of an utterance's first frames, across several writes."""

    def __init__(self, volume: float, fade_frames: int) -> None:
        self.volume = volume
        self._gain = fade_in_gain(fade_frames)
        self._done = 0

    def __call__(self, pcm: np.ndarray) -> np.ndarray:
        pcm = as_mono_int16(pcm)
        k = min(self._gain.size - self._done, pcm.size)
        if k == 0 and self.volume == 1.0:
            return pcm
        out = pcm.astype(np.float32) * np.float32(self.volume)
        out[:k] *= self._gain[self._done : self._done + k]
        self._done += k
        shaped: np.ndarray = np.clip(out, -32768, 32767).astype(np.int16)
        return shaped


@dataclass(eq=False, slots=True)
class _Track:
    """An utterance's span in the ring: positions compared with frames_read by the callback."""

    utterance: Utterance
    start: int
    shaper: _Shaper
    end: int | None = None  # set by end() (or interrupt): the utterance's last position
    dry: bool = False  # the ring is empty mid-utterance; counted once per episode
    cancel: threading.Event = field(default_factory=threading.Event)


class AlsaOutput:
    """Plays through one long-lived sounddevice stream; see the module docstring."""

    def __init__(
        self,
        sample_rate: int,
        device: str | int | None = None,
        volume: float = 1.0,
        ring_seconds: float = 2.0,
        fade_ms: int = 15,
        block_frames: int = 1024,
        latency: float | str = DEFAULT_LATENCY_S,
    ) -> None:
        _check_volume(volume)
        self.sample_rate = sample_rate
        self.device = device
        self.volume = volume
        self.fade_ms = fade_ms
        self.block_frames = block_frames
        self.latency = latency
        self._ring = RingBuffer(max(block_frames, int(ring_seconds * sample_rate)))
        self._lock = threading.Lock()  # tracks, stream state; callback holds it to read
        self._tracks: deque[_Track] = deque()
        self._writing: _Track | None = None
        self._stream: Any = None
        self._reason: str | None = "not started"
        self._stop = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._supervisor_beat = time.monotonic()
        self._last_callback_at = 0.0
        self._underruns = 0
        self._xruns = 0
        self._callback_errors = 0
        self._last_callback_error: BaseException | None = None
        self._callback_fault: BaseException | None = None
        self._stream_opens = 0
        self._closed = False

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        if self._supervisor is not None or self._closed:
            return
        self._open(reinit=False)
        self._supervisor = threading.Thread(
            target=self._supervise, name="audio-supervisor", daemon=True
        )
        self._supervisor.start()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._supervisor is not None:
            self._supervisor.join(timeout=10)
        stream = self._detach("closed")
        if stream is not None:
            _shut(stream, drain=True)

    # -- state ------------------------------------------------------------------------

    @property
    def healthy(self) -> bool:
        with self._lock:
            stream, reason = self._stream, self._reason
        return (
            stream is not None
            and reason is None
            and time.monotonic() - self._last_callback_at < CALLBACK_STALL_S
            and bool(stream.active)
        )

    @property
    def alive(self) -> bool:
        """The supervisor that keeps (re)opening the device runs: what the watchdog needs.
        A missing card is `degraded`, not dead; restarting the daemon would not help."""
        supervisor = self._supervisor
        stuck = time.monotonic() - self._supervisor_beat > BACKOFF_MAX_S + SUPERVISOR_GRACE_S
        return supervisor is not None and supervisor.is_alive() and not stuck

    @property
    def status(self) -> str:
        reason = self._reason
        return "ok" if reason is None else f"degraded: {reason}"

    def recover(self) -> None:
        """Nothing to do: the supervisor thread reopens the device by itself."""

    @property
    def underruns(self) -> int:
        return self._underruns

    @property
    def xruns(self) -> int:
        """Output underflows PortAudio reported (the callback itself was late)."""
        return self._xruns

    @property
    def callback_errors(self) -> int:
        return self._callback_errors

    @property
    def stream_opens(self) -> int:
        """How many times a stream was opened: 1 unless the device was lost or stalled."""
        return self._stream_opens

    # -- playback ---------------------------------------------------------------------

    def begin(self, utterance: Utterance) -> None:
        _check_rate(utterance, self.sample_rate)
        with self._lock:
            if self._reason is not None:
                raise AudioUnavailableError(self._reason)
            if self._writing is not None:  # never ended: close its span where it stands
                self._writing.end = self._ring.frames_written
            fade = _frames(self.fade_ms, self.sample_rate)
            track = _Track(utterance, self._ring.frames_written, _Shaper(self.volume, fade))
            self._tracks.append(track)
            self._writing = track

    def write(self, utterance: Utterance, pcm: np.ndarray, stop: threading.Event) -> bool:
        track = self._writing_track(utterance)
        data = track.shaper(pcm)
        done = 0
        while done < data.size:
            if stop.is_set() or track.cancel.is_set():
                return False
            # The track's own cancel is what interrupt() sets under the ring lock; the
            # caller's stop event is polled between slices.
            done += self._ring.write(data[done:], track.cancel, timeout=_WRITE_SLICE_S)
        return not track.cancel.is_set()

    def end(self, utterance: Utterance, stop: threading.Event, timeout: float) -> bool:
        """Fade out the last frames, then wait until the last one was handed to ALSA."""
        track = self._writing_track(utterance)
        with self._lock:
            self._writing = None
            if track.cancel.is_set():
                return False
            fade = _frames(self.fade_ms, self.sample_rate)
            self._ring.fade_tail(fade, floor=track.start)
            track.end = self._ring.frames_written
            if self._ring.frames_read >= track.end:  # already handed out (or nothing written)
                self._tracks.remove(track)
                utterance.finished_at = time.monotonic()
                return True
        return self._wait_finished(track, stop, time.monotonic() + timeout)

    def interrupt(self, fade_ms: int | None = None) -> None:
        """Fade out what is playing within fade_ms and drop everything queued after it."""
        fade = _frames(self.fade_ms if fade_ms is None else fade_ms, self.sample_rate)
        with self._lock:
            for track in self._tracks:
                track.utterance.interrupted = True
                track.cancel.set()  # before the cut: a blocked write sees it under the lock
            self._ring.cut(fade)
            self._retire_tracks(self._ring.frames_written)

    def _writing_track(self, utterance: Utterance) -> _Track:
        track = self._writing
        if track is None or track.utterance is not utterance:
            raise RuntimeError(f"write/end for {utterance.request_id!r} without begin()")
        return track

    def _wait_finished(self, track: _Track, stop: threading.Event, deadline: float) -> bool:
        assert track.end is not None
        while not (stop.is_set() or track.cancel.is_set()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if self._ring.wait_until_read(track.end, min(remaining, _WRITE_SLICE_S)):
                # frames_read only moves under self._lock, where the callback also stamps
                # finished_at: holding the lock, it is set unless the track was cancelled.
                with self._lock:
                    return track.utterance.finished_at is not None and not track.cancel.is_set()
        return False

    def _retire_tracks(self, end: int) -> None:
        """After a cut or a loss: started tracks end at `end`, unstarted ones are dropped."""
        for track in list(self._tracks):
            if track.utterance.first_sample_at is None:
                self._tracks.remove(track)
            else:
                track.end = end

    # -- the PortAudio callback (its own thread; allocates no array data) --------------

    def _callback(self, outdata: Any, frames: int, time_info: Any, status: Any) -> None:
        try:
            now = self._last_callback_at = time.monotonic()
            if status.output_underflow:
                self._xruns += 1
            fault = self._callback_fault
            if fault is not None:
                self._callback_fault = None
                raise fault
            out = np.frombuffer(outdata, dtype=np.int16)
            with self._lock:
                n = self._ring.read_into(out)
                self._advance(n, frames, now)
            if n < frames:
                out[n:].fill(0)
        except BaseException as err:  # a callback that raises is never called again
            self._callback_errors += 1
            self._last_callback_error = err
            _silence(outdata)

    def _advance(self, read: int, frames: int, now: float) -> None:
        """Stamp first/last frames handed out; count each time a playing utterance runs dry."""
        position = self._ring.frames_read
        tracks = self._tracks
        while tracks:
            track = tracks[0]
            utterance = track.utterance
            if utterance.first_sample_at is None:
                if position <= track.start:
                    return
                utterance.first_sample_at = now
            if track.end is not None and position >= track.end:
                utterance.finished_at = now
                tracks.popleft()
                continue
            dry = read < frames
            # A new episode unless it was already dry last time and nothing came since.
            if dry and track.end is None and (read or not track.dry):
                self._underruns += 1
            track.dry = dry
            return

    def _inject_callback_error(self, error: BaseException) -> None:
        """Test hook: the next callback raises `error` (as a bug in it would)."""
        self._callback_fault = error

    # -- device management ------------------------------------------------------------

    def _supervise(self) -> None:
        delay = BACKOFF_MIN_S
        while not self._stop.wait(delay if self._stream is None else SUPERVISE_INTERVAL_S):
            self._supervisor_beat = time.monotonic()
            try:
                if self._stream is None and not self._open(reinit=True):
                    delay = min(delay * 2, BACKOFF_MAX_S)
                    continue
                delay = BACKOFF_MIN_S
                self._check_stream()
                self._report_callback_errors()
            except Exception:  # the supervisor is what keeps audio alive: it must not die
                _LOGGER.exception("Audio supervisor error")

    def _check_stream(self) -> None:
        problem = self._stream_problem()
        if problem is None:
            return
        _LOGGER.warning("Audio stream lost (%s); reopening", problem)
        stream = self._detach(problem)
        if stream is not None:
            _shut(stream, drain=False)
        self._open(reinit=True)

    def _stream_problem(self) -> str | None:
        stream = self._stream
        if stream is None:
            return None
        if not stream.active:
            return "output stream stopped"
        silent = time.monotonic() - self._last_callback_at
        if silent > CALLBACK_STALL_S:
            return f"no audio callback for {silent:.1f} s"
        return None

    def _open(self, reinit: bool) -> bool:
        try:
            stream = self._new_stream(reinit)
        except Exception as err:  # PortAudioError, ValueError (no such device), OSError
            self._degrade(f"cannot open output device {self._device_name()}: {err}")
            return False
        if self._stop.is_set():  # close() ran meanwhile
            _shut(stream, drain=False)
            return False
        with self._lock:
            self._stream = stream
            self._stream_opens += 1
            self._last_callback_at = time.monotonic()
            recovered, self._reason = self._reason, None
        _LOGGER.info(
            "Audio output open: %s at %d Hz, latency %.0f ms (was: %s)",
            self._device_name(),
            self.sample_rate,
            stream.latency * 1000,
            recovered,
        )
        return True

    def _new_stream(self, reinit: bool) -> Any:
        import sounddevice as sd  # here, not at import: the wav-dir sink needs no PortAudio

        if reinit:
            # PortAudio lists devices once, at initialization: a card that appeared since
            # (USB DAC plugged in, sound server started) is only seen after a re-init.
            # Safe here because this process has no other stream open.
            if sd._initialized:  # a failed initialization leaves nothing to terminate
                sd._terminate()
            sd._initialize()
        stream = sd.RawOutputStream(
            samplerate=self.sample_rate,
            blocksize=self.block_frames,
            device=self.device,
            channels=1,
            dtype="int16",
            latency=self.latency,
            callback=self._callback,
        )
        try:
            stream.start()
        except Exception:
            stream.close()
            raise
        return stream

    def _degrade(self, reason: str) -> None:
        with self._lock:
            changed = self._reason != reason
            self._reason = reason
        if changed:
            _LOGGER.warning("Audio output degraded: %s", reason)

    def _detach(self, reason: str) -> Any:
        """Forget the stream, fail what is queued (its writers and end() return False)."""
        with self._lock:
            stream, self._stream = self._stream, None
            self._reason = reason
            for track in self._tracks:
                track.cancel.set()
            if self._writing is not None:
                self._writing.cancel.set()
            self._ring.clear()
            self._tracks.clear()
        return stream

    def _report_callback_errors(self) -> None:
        err = self._last_callback_error
        if err is not None:
            self._last_callback_error = None
            _LOGGER.error(
                "Audio callback failed (%d so far); played silence instead",
                self._callback_errors,
                exc_info=err,
            )

    def _device_name(self) -> str:
        return "default" if self.device is None else repr(self.device)


class WavDirOutput:
    """Writes <directory>/<request id>.wav per utterance; a file appears only when complete."""

    def __init__(self, directory: Path, sample_rate: int, volume: float = 1.0, fade_ms: int = 15):
        _check_volume(volume)
        self.directory = Path(directory)
        self.sample_rate = sample_rate
        self.volume = volume
        self.fade_ms = fade_ms
        self._lock = threading.Lock()
        self._reason: str | None = "not started"
        self._current: _WavFile | None = None

    def start(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            reason = f"cannot create {self.directory}: {err}"
            if reason != self._reason:
                _LOGGER.warning("WAV output degraded: %s", reason)
            self._reason = reason
            return
        self._reason = None

    def close(self) -> None:
        with self._lock:
            current, self._current = self._current, None
        if current is not None:
            current.discard()
        self._reason = "closed"

    @property
    def healthy(self) -> bool:
        return self._reason is None and os.access(self.directory, os.W_OK | os.X_OK)

    @property
    def alive(self) -> bool:
        return True  # nothing runs in the background: begin() retries the directory itself

    @property
    def status(self) -> str:
        return "ok" if self._reason is None else f"degraded: {self._reason}"

    @property
    def underruns(self) -> int:
        return 0

    def begin(self, utterance: Utterance) -> None:
        _check_rate(utterance, self.sample_rate)
        if self._reason is not None and self._reason != "closed":
            self.start()  # the directory may be writable again
        if self._reason is not None:
            raise AudioUnavailableError(self._reason)
        shaper = _Shaper(self.volume, _frames(self.fade_ms, self.sample_rate))
        fade_out = _frames(self.fade_ms, self.sample_rate)
        final = self.directory / f"{safe_name(utterance.request_id)}.wav"
        try:
            wav = _WavFile(utterance, final, self.sample_rate, shaper, fade_out)
        except OSError as err:
            self._reason = f"cannot write into {self.directory}: {err}"
            raise AudioUnavailableError(self._reason) from err
        with self._lock:
            previous, self._current = self._current, wav
        if previous is not None:
            previous.discard()

    def write(self, utterance: Utterance, pcm: np.ndarray, stop: threading.Event) -> bool:
        with self._lock:
            wav = self._current_for(utterance)
            if stop.is_set() or wav is None:
                return False
            try:
                return wav.write(pcm)
            except OSError as err:
                self._current = None
                raise self._write_failed(wav, err) from err

    def end(self, utterance: Utterance, stop: threading.Event, timeout: float) -> bool:
        with self._lock:
            wav = self._current_for(utterance)
            self._current = None
        if wav is None:
            return False
        if stop.is_set():
            wav.discard()
            return False
        try:
            wav.commit()
        except OSError as err:
            raise self._write_failed(wav, err) from err
        self._reason = None  # a whole file was written: the directory works again
        return True

    def recover(self) -> None:
        """While degraded, probe the directory (a full disk still lets an empty file be
        created, so the probe writes data), so the status clears without a request."""
        if self._reason is None or self._reason == "closed":
            return
        probe = self.directory / f".probe.{secrets.token_hex(4)}"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with probe.open("wb") as file:
                file.write(bytes(_PROBE_BYTES))
                file.flush()
                os.fsync(file.fileno())
        except OSError:
            return
        finally:
            with contextlib.suppress(OSError):
                probe.unlink(missing_ok=True)
        _LOGGER.info("WAV output recovered: %s is writable again", self.directory)
        self._reason = None

    def _write_failed(self, wav: _WavFile, err: OSError) -> AudioUnavailableError:
        wav.discard()  # no partial file is left behind
        reason = f"cannot write into {self.directory}: {err.strerror or err}"
        if reason != self._reason:
            _LOGGER.warning("WAV output degraded: %s", reason)
        self._reason = reason
        return AudioUnavailableError(reason)

    def interrupt(self, fade_ms: int | None = None) -> None:
        """Nothing is audible to fade: the partial file is dropped, write/end return False."""
        with self._lock:
            current, self._current = self._current, None
        if current is not None:
            current.utterance.interrupted = True
            current.discard()

    def _current_for(self, utterance: Utterance) -> _WavFile | None:
        current = self._current
        if current is not None and current.utterance is utterance:
            return current
        if utterance.interrupted:
            return None
        raise RuntimeError(f"write/end for {utterance.request_id!r} without begin()")


class _WavFile:
    """One utterance's WAV under a hidden temporary name until commit() renames it."""

    def __init__(
        self, utterance: Utterance, final: Path, rate: int, shaper: _Shaper, fade_out: int
    ) -> None:
        self.utterance = utterance
        self.final = final
        self.temp = final.with_name(f".{final.stem}.{secrets.token_hex(4)}.part")
        self._shaper = shaper
        self._fade_out = fade_out
        self._tail = np.zeros(0, dtype=np.int16)  # held back until end() to fade it out
        fd = os.open(self.temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        self._file = os.fdopen(fd, "wb")
        self._wav = wave.open(self._file, "wb")  # noqa: SIM115 - closed in commit/discard
        self._wav.setnchannels(1)
        self._wav.setsampwidth(2)
        self._wav.setframerate(rate)

    def write(self, pcm: np.ndarray) -> bool:
        data = np.concatenate((self._tail, self._shaper(pcm)))
        cut = max(0, data.size - self._fade_out)
        self._tail = data[cut:]
        if cut:
            self._wav.writeframes(data[:cut].astype("<i2").tobytes())
            if self.utterance.first_sample_at is None:
                self.utterance.first_sample_at = time.monotonic()
        return True

    def commit(self) -> None:
        tail = (self._tail * fade_out_gain(self._tail.size)).astype("<i2")
        self._wav.writeframes(tail.tobytes())
        if self.utterance.first_sample_at is None:
            self.utterance.first_sample_at = time.monotonic()
        self._wav.close()
        self._file.close()  # flushes: a full disk shows here at the latest
        os.replace(self.temp, self.final)  # a reader sees no file or the whole file
        self.utterance.finished_at = time.monotonic()

    def discard(self) -> None:
        # Closing rewrites the header and flushes, which fails again on a full disk.
        with contextlib.suppress(OSError):
            self._wav.close()
        with contextlib.suppress(OSError):
            self._file.close()
        with contextlib.suppress(OSError):
            self.temp.unlink(missing_ok=True)


def safe_name(request_id: str) -> str:
    """A file name from a request id: no path separators, no leading dot, bounded length."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", request_id).lstrip(".")[:120]
    return name or "utterance"


def _frames(ms: float, rate: int) -> int:
    return max(0, round(ms * rate / 1000))


def _check_rate(utterance: Utterance, rate: int) -> None:
    if utterance.sample_rate != rate:
        raise ValueError(
            f"utterance {utterance.request_id!r} is at {utterance.sample_rate} Hz, the output "
            f"at {rate} Hz: resample before playing"
        )


def _check_volume(volume: float) -> None:
    if not 0.0 <= volume <= 2.0:
        raise ValueError(f"volume must be between 0 and 2, not {volume}")


def _silence(outdata: Any) -> None:
    with contextlib.suppress(BaseException):  # nothing more can be done inside the callback
        np.frombuffer(outdata, dtype=np.uint8).fill(0)


def _shut(stream: Any, drain: bool) -> None:
    """Stop and close a stream; a broken device may refuse, which must not propagate."""
    try:
        if drain:
            stream.stop()
        else:
            stream.abort()
    except Exception as err:
        _LOGGER.debug("Stopping the audio stream failed: %s", err)
    try:
        stream.close()
    except Exception as err:
        _LOGGER.debug("Closing the audio stream failed: %s", err)
