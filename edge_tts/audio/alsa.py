"""ALSA output through PortAudio: utterances go into a ring that the stream's callback drains.

The callback copies from a preallocated ring (`RingBuffer`) and plays silence when it is
empty; fades and volume are applied on the writer side so the callback does nothing but
copy. Each utterance is a track, a span of ring positions, so the callback can stamp when
its first and last frames were handed to ALSA and count the times a playing one ran dry.
The stream itself, and keeping it open, is audio/device.py's; while there is none,
`begin()` raises `AudioUnavailableError` with the reason.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .device import Device
from .dsp import Shaper, ms_to_frames
from .output import AudioUnavailableError, Utterance, check_rate
from .ringbuffer import RingBuffer

if TYPE_CHECKING:
    from ..config import AudioSettings

_WRITE_SLICE_S = 0.1  # how often a blocked write() re-checks the caller's stop event


@dataclass(eq=False, slots=True)
class _Track:
    """An utterance's span in the ring: positions compared with frames_read by the callback."""

    utterance: Utterance
    start: int
    shaper: Shaper
    end: int | None = None  # set by end() (or interrupt): the utterance's last position
    dry: bool = False  # the ring is empty mid-utterance; counted once per episode
    cancel: threading.Event = field(default_factory=threading.Event)


class AlsaOutput:
    """Plays through one long-lived sounddevice stream; see the module docstring."""

    def __init__(self, settings: AudioSettings, sample_rate: int) -> None:
        self.sample_rate = sample_rate
        self.volume = settings.volume
        self.fade_ms = settings.fade_ms
        capacity = max(settings.block_frames, int(settings.ring_buffer_seconds * sample_rate))
        self._ring = RingBuffer(capacity)
        self._lock = threading.Lock()  # tracks, stream state; the callback holds it to read
        self._tracks: deque[_Track] = deque()
        self._writing: _Track | None = None
        self._underruns = 0
        self._device = Device(settings, sample_rate, self._fill, self._lock, self._drop_all)

    # -- lifecycle and state -----------------------------------------------------------

    def start(self) -> None:
        self._device.start()

    def close(self) -> None:
        self._device.close()

    @property
    def healthy(self) -> bool:
        return self._device.healthy

    @property
    def alive(self) -> bool:
        """The supervisor that keeps (re)opening the device runs: what the watchdog needs.
        A missing card is `degraded`, not dead; restarting the daemon would not help."""
        return self._device.alive

    @property
    def status(self) -> str:
        reason = self._device.reason
        return "ok" if reason is None else f"degraded: {reason}"

    def recover(self) -> None:
        """Nothing to do: the supervisor thread reopens the device by itself."""

    @property
    def underruns(self) -> int:
        return self._underruns

    @property
    def xruns(self) -> int:
        """Output underflows PortAudio reported (the callback itself was late)."""
        return self._device.xruns

    @property
    def callback_errors(self) -> int:
        return self._device.callback_errors

    @property
    def stream_opens(self) -> int:
        """How many times a stream was opened: 1 unless the device was lost or stalled."""
        return self._device.stream_opens

    # -- playback ---------------------------------------------------------------------

    def begin(self, utterance: Utterance) -> None:
        check_rate(utterance, self.sample_rate)
        with self._lock:
            reason = self._device.reason
            if reason is not None:
                raise AudioUnavailableError(reason)
            if self._writing is not None:  # never ended: close its span where it stands
                self._writing.end = self._ring.frames_written
            fade = ms_to_frames(self.fade_ms, self.sample_rate)
            track = _Track(utterance, self._ring.frames_written, Shaper(self.volume, fade))
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
            fade = ms_to_frames(self.fade_ms, self.sample_rate)
            self._ring.fade_tail(fade, floor=track.start)
            track.end = self._ring.frames_written
            if self._ring.frames_read >= track.end:  # already handed out (or nothing written)
                self._tracks.remove(track)
                utterance.finished_at = time.monotonic()
                return True
        return self._wait_finished(track, stop, time.monotonic() + timeout)

    def interrupt(self, fade_ms: int | None = None) -> None:
        """Fade out what is playing within fade_ms and drop everything queued after it."""
        fade = ms_to_frames(self.fade_ms if fade_ms is None else fade_ms, self.sample_rate)
        with self._lock:
            for track in self._tracks:
                track.utterance.interrupted = True
                track.cancel.set()  # before the cut: a blocked write sees it under the lock
            self._ring.cut(fade)
            self._retire_tracks(self._ring.frames_written)

    def set_volume(self, volume: float) -> None:
        with self._lock:
            self.volume = volume
            if self._writing is not None:
                self._writing.shaper.volume = volume

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

    def _drop_all(self) -> None:
        """The stream is gone (called under the lock): what is queued and being written fails
        (its writers and end() return False), and the ring is emptied."""
        for track in self._tracks:
            track.cancel.set()
        if self._writing is not None:
            self._writing.cancel.set()
        self._ring.clear()
        self._tracks.clear()

    # -- the stream's callback (its own thread; allocates no array data) ---------------

    def _fill(self, outdata: Any, frames: int, now: float) -> None:
        out = np.frombuffer(outdata, dtype=np.int16)
        with self._lock:
            n = self._ring.read_into(out)
            self._advance(n, frames, now)
        if n < frames:
            out[n:].fill(0)

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
