"""The PortAudio output stream behind `AlsaOutput`, kept open and supervised.

Opening the device per utterance is what clips first syllables and causes "device busy"
elsewhere, so one stream stays open for the daemon's life. A supervisor thread opens it,
notices when it is missing, lost (the stream stopped) or stalled (no callback for
CALLBACK_STALL_S), and reopens it with exponential back-off; meanwhile `reason` says why
there is no stream. The stream's callback is guarded here (`GuardedCallback`): PortAudio
never calls a callback again once it raised.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..config import AudioSettings

_LOGGER = logging.getLogger(__name__)

BACKOFF_MIN_S = 0.5
BACKOFF_MAX_S = 30.0
CALLBACK_STALL_S = 2.0  # no callback for this long while the stream should run: it is dead
SUPERVISE_INTERVAL_S = 0.2
SUPERVISOR_GRACE_S = 10.0  # beyond the longest back-off: a supervisor this late is hung

# Copies the next `frames` frames into the stream's buffer; `now` is the callback's time.
Fill = Callable[[Any, int, float], None]


class Device:
    """One output stream at `sample_rate`, reopened until close(); see the module docstring.

    `lock` is the player's: the stream state changes under it, and `on_lost` is called
    holding it when the stream is dropped, to fail what was queued for it.
    """

    def __init__(
        self,
        settings: AudioSettings,
        sample_rate: int,
        fill: Fill,
        lock: threading.Lock,
        on_lost: Callable[[], None],
    ) -> None:
        self.name = settings.device
        self.sample_rate = sample_rate
        self.block_frames = settings.block_frames
        self.latency = settings.latency_ms / 1000
        self._callback = GuardedCallback(fill)
        self._lock = lock
        self._on_lost = on_lost
        self._stream: Any = None
        self._reason: str | None = "not started"
        self._stop = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._supervisor_beat = time.monotonic()
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
    def reason(self) -> str | None:
        """Why there is no stream to play into; None while there is one."""
        return self._reason

    @property
    def healthy(self) -> bool:
        with self._lock:
            stream, reason = self._stream, self._reason
        return (
            stream is not None
            and reason is None
            and time.monotonic() - self._callback.last_at < CALLBACK_STALL_S
            and bool(stream.active)
        )

    @property
    def alive(self) -> bool:
        supervisor = self._supervisor
        stuck = time.monotonic() - self._supervisor_beat > BACKOFF_MAX_S + SUPERVISOR_GRACE_S
        return supervisor is not None and supervisor.is_alive() and not stuck

    @property
    def xruns(self) -> int:
        return self._callback.xruns

    @property
    def callback_errors(self) -> int:
        return self._callback.errors

    @property
    def stream_opens(self) -> int:
        return self._stream_opens

    # -- supervision ------------------------------------------------------------------

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
                self._callback.report()
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
        silent = time.monotonic() - self._callback.last_at
        if silent > CALLBACK_STALL_S:
            return f"no audio callback for {silent:.1f} s"
        return None

    def _open(self, reinit: bool) -> bool:
        try:
            stream = self._new_stream(reinit)
        except Exception as err:  # PortAudioError, ValueError (no such device), OSError
            self._degrade(f"cannot open output device {self._display_name()}: {err}")
            return False
        if self._stop.is_set():  # close() ran meanwhile
            _shut(stream, drain=False)
            return False
        with self._lock:
            self._stream = stream
            self._stream_opens += 1
            self._callback.last_at = time.monotonic()
            recovered, self._reason = self._reason, None
        _LOGGER.info(
            "Audio output open: %s at %d Hz, latency %.0f ms (was: %s)",
            self._display_name(),
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
            device=portaudio_device(self.name),
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
        """Forget the stream; what was queued for it fails (see `on_lost`)."""
        with self._lock:
            stream, self._stream = self._stream, None
            self._reason = reason
            self._on_lost()
        return stream

    def _display_name(self) -> str:
        return "default" if self.name is None else repr(self.name)


class GuardedCallback:
    """The stream's callback: `fill`, and what PortAudio does not do for us.

    A callback that raises is never called again, and playback would die silently: an
    exception is counted and answered with a block of silence, and report() (the
    supervisor's tick) logs it. Each call is stamped, so a stalled stream shows, and the
    underflows PortAudio reports (the callback itself was late) are counted.
    """

    def __init__(self, fill: Fill) -> None:
        self.fill = fill
        self.last_at = 0.0  # monotonic time of the last call
        self.xruns = 0
        self.errors = 0
        self._last_error: BaseException | None = None
        self._fault: BaseException | None = None

    def __call__(self, outdata: Any, frames: int, time_info: Any, status: Any) -> None:
        try:
            now = self.last_at = time.monotonic()
            if status.output_underflow:
                self.xruns += 1
            fault = self._fault
            if fault is not None:
                self._fault = None
                raise fault
            self.fill(outdata, frames, now)
        except BaseException as err:  # a callback that raises is never called again
            self.errors += 1
            self._last_error = err
            _silence(outdata)

    def report(self) -> None:
        err = self._last_error
        if err is not None:
            self._last_error = None
            _LOGGER.error(
                "Audio callback failed (%d so far); played silence instead",
                self.errors,
                exc_info=err,
            )

    def inject_error(self, error: BaseException) -> None:
        """Test hook: the next call raises `error` (as a bug in `fill` would)."""
        self._fault = error


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


def portaudio_device(name: str | None) -> str | int | None:
    """The config keeps a device as text; PortAudio takes an index as an int and reads a
    string as a substring of a device name ("2" would match "USB Audio 2", not index 2)."""
    return int(name) if name is not None and name.isdigit() else name
