"""Decoding a Piper voice's latent frames in windows, so the first audio comes before the
sentence is decoded and the decoder's memory stays bounded; or whole, for graphs we cannot cut."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import onnxruntime

from .decoder_cut import SplitModel
from .two_halves import run_in_halves, takes_batches

_LOGGER = logging.getLogger(__name__)

FIRST_WINDOW_FRAMES = 16  # the first sound: ~190 ms of audio, decoded in ~10 ms here
MAX_WINDOW_FRAMES = 144  # bounds the decoder's working memory (~35 MB) whatever the length
DECODE_SHARE = 0.5  # a window may take at most this share of the audio already buffered


class Engine(Protocol):
    def stream(
        self, feeds: dict[str, np.ndarray], first_frames: int | None
    ) -> Iterator[np.ndarray]: ...
    def warm_up(self) -> None: ...
    def run_input(self, feeds: dict[str, np.ndarray]) -> None: ...
    def describe(self) -> str: ...


class WholeEngine:
    """A graph we cannot cut: one run per sentence."""

    def __init__(self, session: onnxruntime.InferenceSession):
        self._session = session

    def stream(
        self, feeds: dict[str, np.ndarray], first_frames: int | None
    ) -> Iterator[np.ndarray]:
        output = self._session.run(None, feeds)[0]
        yield np.asarray(output, dtype=np.float32).reshape(-1)

    def warm_up(self) -> None:
        pass

    def run_input(self, feeds: dict[str, np.ndarray]) -> None:
        self._session.run(None, feeds)

    def describe(self) -> str:
        return "whole-sentence decoding"


@dataclass(frozen=True)
class DecoderStage:
    """One decoder session and what windows of it need (measured by `probe_stages`)."""

    session: onnxruntime.InferenceSession
    input: str  # the tensor it reads: the latent, or the previous stage's output
    context: int  # extra input steps on each side for exact output
    hop: int  # audio samples per input step
    in_halves: bool = False  # a window as a batch of its two halves (two_halves.py)

    def run(self, data: np.ndarray, extra: dict[str, np.ndarray]) -> np.ndarray:
        """The stage's output for a window of its input (`extra`: the voice's own inputs
        the first stage reads)."""
        if self.in_halves:
            return run_in_halves(self.session, self.input, data, self.context)
        feeds = {self.input: np.ascontiguousarray(data), **extra}
        return np.asarray(self.session.run(None, feeds)[0])


class WindowedEngine:
    """Encoder once per sentence, then the decoder stages on windows of latent frames.

    Each stage gets its own receptive field as extra input on both sides (measured at load)
    that is cut off again, so the joined pieces equal whole-sentence decoding. Decoder runs
    are serialized per voice: two at once would double the decoder's memory and slow each
    other down on two cores, while a window is short enough (tens of ms here) that the other
    synthesis hardly waits.
    """

    def __init__(
        self,
        encoder: onnxruntime.InferenceSession,
        stages: list[DecoderStage],
        halves: SplitModel,
        sample_rate: int,
    ):
        self._encoder = encoder
        self._stages = stages
        self._channels = halves.channels
        self._decoder_inputs = halves.decoder_inputs
        self._decode_lock = threading.Lock()
        self.context = stages[0].context  # latent frames
        self.frame_seconds = stages[0].hop / sample_rate

    def describe(self) -> str:
        contexts = " + ".join(
            f"{stage.context}{' (in halves)' if stage.in_halves else ''}" for stage in self._stages
        )
        threads = self._encoder.get_session_options().intra_op_num_threads
        return (
            f"encoder on {threads} thread(s), windowed decoding in {len(self._stages)} "
            f"stage(s), context {contexts} steps"
        )

    def warm_up(self) -> None:
        """Size the decoder's arena for the largest window now, not during a request."""
        frames = MAX_WINDOW_FRAMES + 2 * self.context  # a full window with its context
        latent = np.zeros((1, self._channels, frames), np.float32)
        end = self.context + MAX_WINDOW_FRAMES
        self._decode(latent, self.context, end, speaker_feeds(self._decoder_inputs))

    def run_input(self, feeds: dict[str, np.ndarray]) -> None:
        """The encoder alone: the part whose memory grows with the input's length."""
        self._encoder.run(None, feeds)

    def stream(
        self, feeds: dict[str, np.ndarray], first_frames: int | None
    ) -> Iterator[np.ndarray]:
        latent = self._encoder.run(None, feeds)[0]
        extra = {**speaker_feeds(self._decoder_inputs), **_pick(feeds, self._decoder_inputs)}
        yield from in_windows(
            latent.shape[2],
            first_frames,
            self.context,
            self.frame_seconds,
            lambda start, end: self._decode(latent, start, end, extra),
        )

    def _decode(
        self, latent: np.ndarray, start: int, end: int, extra: dict[str, np.ndarray]
    ) -> tuple[np.ndarray, float]:
        """Audio of latent frames [start, end), and the seconds it took per frame."""
        plan = window_plan(self._stages, latent.shape[2], start, end)
        lo, hi = plan[0][0]
        data = latent[:, :, lo:hi]
        with self._decode_lock:
            began = time.monotonic()
            for stage, (_, (keep_lo, keep_hi)) in zip(self._stages, plan, strict=True):
                data = stage.run(data, extra if stage is self._stages[0] else {})
                data = data[..., keep_lo:keep_hi]
            elapsed = time.monotonic() - began
        audio = np.asarray(data, dtype=np.float32).reshape(-1).copy()
        return audio, elapsed / (end - start)


Span = tuple[int, int]
Decode = Callable[[int, int], tuple[np.ndarray, float]]  # frames [start, end) -> audio, s/frame


def in_windows(
    total: int,
    first_frames: int | None,
    context: int,
    frame_seconds: float,
    decode: Decode,
    smallest: int = 1,
) -> Iterator[np.ndarray]:
    """Audio of `total` frames in windows, in order: a first window of `first_frames` when
    asked (its size is about latency), then even windows as large as the audio already
    made allows (`next_window`), and at least `smallest` (and the first window's size).
    The Piper decoder and the two-stage vocoder both go by it. `decode` says how long a
    frame took: timed there, not across the yield, which also counts the time the
    consumer spends with a piece."""
    if not first_frames or total <= 2 * (first_frames + context):
        first_frames = None  # none asked, or short enough that one window is as quick
    start, size = 0, min(first_frames or MAX_WINDOW_FRAMES, MAX_WINDOW_FRAMES)
    made_s, first_at = 0.0, 0.0
    while start < total:
        opening = start == 0 and first_frames is not None
        end = min(total, start + size) if opening else start + even_step(total - start, size)
        audio, seconds_per_frame = decode(start, end)
        yield audio
        first_at = first_at or time.monotonic()
        made_s += (end - start) * frame_seconds
        buffered_s = made_s - (time.monotonic() - first_at)
        size = next_window(buffered_s, seconds_per_frame, max(first_frames or 1, smallest))
        start = end


def window_plan(
    stages: list[DecoderStage], frames: int, start: int, end: int
) -> list[tuple[Span, Span]]:
    """Per stage, (input steps to feed, slice of its output to keep) so the last stage's
    kept output is the audio of latent frames [start, end) of `frames`, exactly.

    Worked backwards: each stage needs the steps under the output wanted from it plus
    its context, clipped to the sentence (the graph pads the ends as the whole run does).
    """
    want = (start * stages[0].hop, end * stages[0].hop)  # audio samples
    plan: list[tuple[Span, Span]] = []
    hops = [stage.hop for stage in stages] + [1]  # the last stage's output is audio
    for index in reversed(range(len(stages))):
        stage = stages[index]
        ratio = hops[index] // hops[index + 1]  # output steps per input step
        length = frames * (hops[0] // stage.hop)  # this stage's input steps
        lo = max(0, want[0] // ratio - stage.context)
        hi = min(length, -(-want[1] // ratio) + stage.context)
        plan.append(((lo, hi), (want[0] - lo * ratio, want[1] - lo * ratio)))
        want = (lo, hi)
    return plan[::-1]


def next_window(buffered_s: float, seconds_per_frame: float, smallest: int) -> int:
    """Frames in the next window: as many as can be decoded in DECODE_SHARE of the audio not
    yet played (assuming it plays in real time), so a slow board gets small windows and a
    fast one few large ones; at least `smallest`, at most MAX_WINDOW_FRAMES."""
    affordable = int(DECODE_SHARE * buffered_s / max(seconds_per_frame, 1e-6))
    return max(smallest, min(MAX_WINDOW_FRAMES, affordable))


def even_step(remaining: int, cap: int) -> int:
    """The next window when `remaining` frames go in as few windows of at most `cap` as
    possible, all about the same size: no tiny last window that costs more context than
    it decodes, and no window larger than it must be (the arena sizes for the largest)."""
    windows = -(-remaining // max(1, cap))
    return -(-remaining // windows)


def _pick(feeds: dict[str, np.ndarray], names: tuple[str, ...]) -> dict[str, np.ndarray]:
    return {name: feeds[name] for name in names if name in feeds}


def speaker_feeds(names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Placeholder speaker ids for decoder runs that are not a request's (probe, warm-up)."""
    return {name: np.zeros(1, dtype=np.int64) for name in names}


PROBE_FRAMES = 96
INFLUENCE_FLOOR = 1e-3


def probe_stages(
    sessions: list[onnxruntime.InferenceSession], halves: SplitModel, split_windows: bool
) -> list[DecoderStage] | None:
    """The decoder stages with their context and hop, measured: nudge the first step of a
    stage's input and see how far into the audio the change reaches. None if it reaches
    (nearly) everywhere, or the steps do not map to whole numbers of samples. With
    `split_windows` (where onnxruntime has NCHWc kernels: two_halves.py) a later stage that
    takes a batch runs its windows in two halves.

    Beyond the samples where the nudge moves the audio by more than INFLUENCE_FLOOR of
    full scale, cutting the context changes real speech by less than float rounding
    (joe-medium: 11 latent frames, then 9 steps of the 8x stage; joined windows: SNR > 77 dB).
    """
    extra = speaker_feeds(halves.decoder_inputs)

    def run_from(first: int, data: np.ndarray) -> list[np.ndarray]:
        """The outputs of stages `first`..last (the last is the audio) for `data`."""
        outputs = []
        for index in range(first, len(sessions)):
            feeds = {halves.stage_inputs[index]: data, **(extra if index == 0 else {})}
            data = sessions[index].run(None, feeds)[0]
            outputs.append(data)
        return outputs

    rng = np.random.default_rng(0)
    latent = rng.standard_normal((1, halves.channels, PROBE_FRAMES)).astype(np.float32)
    outputs = run_from(0, latent)
    inputs = [latent, *outputs[:-1]]  # every stage's input on that latent
    base = np.asarray(outputs[-1]).reshape(-1)
    floor = INFLUENCE_FLOOR * max(1e-3, float(np.abs(base).max()))
    stages = []
    for index, data in enumerate(inputs):
        nudged = data.copy()
        nudged[..., 0] += 1.0
        changed = np.asarray(run_from(index, nudged)[-1]).reshape(-1)
        steps = data.shape[-1]
        hop = base.size // steps
        if hop < 1 or base.size != hop * steps:
            return None
        reach = np.flatnonzero(np.abs(changed - base) > floor)
        context = -(-(int(reach[-1]) + 1) // hop) if reach.size else 1
        if context > steps // 2:
            _LOGGER.info("Decoder's receptive field is %d steps or more: whole sentences", context)
            return None
        # Later stages read nothing but the stage before's output (the cut), so a batch of
        # two is only their input's; the first also reads the voice's speaker input.
        # Checked on a short piece: the probe's full length in a batch of two would grow
        # the arena while the load's bytes are still held (a higher peak).
        piece = data[..., : 8 * context]
        split = (
            split_windows
            and index > 0
            and takes_batches(sessions[index], halves.stage_inputs[index], piece)
        )
        stage = DecoderStage(sessions[index], halves.stage_inputs[index], context, hop, split)
        stages.append(stage)
    if any(stages[0].hop % stage.hop for stage in stages):
        return None  # a stage's steps are not whole fractions of a frame: no window plan
    return stages
