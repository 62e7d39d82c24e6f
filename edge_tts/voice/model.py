"""One Piper voice: its config and its onnxruntime sessions (encoder, decoder), created lazily."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import onnxruntime
from piper.config import PiperConfig

from .files import VoiceFiles
from .integrity import read_pinned
from .phonemize import phonemes_to_ids, phonemize, text_to_ids
from .split import SplitModel, check_and_split

_LOGGER = logging.getLogger(__name__)

# Headroom below full scale so a peak never lands on the int16 rail; the limiter is linear
# up to the knee (VITS speech rarely goes above it at volume 1).
_PEAK = 0.98
_KNEE = 0.8


class VoiceConfigError(ValueError):
    """The voice's .onnx.json is missing fields or is not JSON."""


@dataclass(frozen=True)
class SynthesisParams:
    """Per-request knobs; None means the voice's own default from its .onnx.json."""

    speaker: int | str | None = None
    length_scale: float | None = None
    noise_scale: float | None = None
    noise_w: float | None = None


def load_config(files: VoiceFiles) -> PiperConfig:
    try:
        raw = json.loads(files.config.read_text(encoding="utf-8"))
        return PiperConfig.from_dict(raw)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise VoiceConfigError(f"bad voice config {files.config}: {err!r}") from err


def session_options(threads: int) -> onnxruntime.SessionOptions:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Memory patterns are planned per input shape, and every sentence has a new length:
    # with them on, peak RSS over the corpus was ~40 MB higher at no measurable speed gain.
    options.enable_mem_pattern = False
    # Idle workers that spin keep a core busy that another session, the audio callback or
    # MQTT could use (first decoder window after the encoder: 23 ms spinning, 9 ms not).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # onnxruntime's warnings about unused initializers are noise
    if _shared_threads:
        options.use_per_session_threads = False
        options.intra_op_num_threads = 0  # the shared pool's size counts; 0 = no warning
        options.inter_op_num_threads = 0
        options.add_session_config_entry("session.use_env_allocators", "1")
    return options


_runtime_lock = threading.Lock()
_shared_threads = 0  # size of the process's one intra-op pool; 0 = a pool per session


def share_runtime(threads: int) -> bool:
    """Make every later onnxruntime session of this process share one thread pool and one
    memory arena. For processes that own all their sessions (the daemon, `say`): once on,
    onnxruntime refuses sessions with pools of their own (e.g. the quantizer's calibration).

    A voice is two sessions (encoder, decoder), and there may be several voices. With a pool
    each, their workers compete for the two cores (the corpus synthesized ~1.3x slower in
    separate runs); with an arena each, each keeps its own peak (shared: 14 MB less).
    """
    global _shared_threads
    with _runtime_lock:
        if _shared_threads:
            return True
        try:
            onnxruntime.capi._pybind_state.set_global_thread_pool_sizes(threads, 1)
            memory = onnxruntime.OrtMemoryInfo(
                "Cpu",
                onnxruntime.OrtAllocatorType.ORT_ARENA_ALLOCATOR,
                0,
                onnxruntime.OrtMemType.DEFAULT,
            )
            onnxruntime.create_and_register_allocator(memory, onnxruntime.OrtArenaCfg({}))
        except (AttributeError, RuntimeError) as err:
            _LOGGER.warning("onnxruntime sessions keep their own pools: %s", err)
            return False
        _shared_threads = threads
        return True


# About as long as the longest piece the daemon synthesizes at once (max_chunk_chars 200).
WARM_UP_TEXT = (
    "This sentence warms the voice up before the first request: it is about as long as "
    "the longest piece of text that is synthesized in one go, two hundred characters."
)

# Decoder windows (latent frames; 256 samples = 11.6 ms each for the usual voices).
FIRST_WINDOW_FRAMES = 16  # the first sound: ~190 ms of audio, decoded in ~10 ms here
MAX_WINDOW_FRAMES = 144  # bounds the decoder's working memory (~35 MB) whatever the length
DECODE_SHARE = 0.5  # a window may take at most this share of the audio already buffered


class Voice:
    """Thread-safe: `synthesize` and `stream` may be called from several workers at once."""

    def __init__(
        self,
        files: VoiceFiles,
        pinned_sha256: str | None = None,
        threads: int = 2,
        max_phonemes: int | None = None,
    ):
        self.files = files
        self.config = load_config(files)
        self.max_phonemes = max_phonemes  # per encoder run: bounds its memory (None: no bound)
        self._pinned = pinned_sha256
        self._threads = threads
        self._lock = threading.Lock()
        self._engine: _Engine | None = None
        self.sha256: str | None = None
        self.load_seconds: float | None = None

    @property
    def name(self) -> str:
        return self.files.name

    @property
    def sample_rate(self) -> int:
        return self.config.sample_rate

    @property
    def loaded(self) -> bool:
        return self._engine is not None

    @property
    def windowed(self) -> bool:
        """Whether the decoder runs on windows (first audio before the sentence is done)."""
        return isinstance(self._get_engine(), _WindowedEngine)

    def load(self) -> None:
        """Verify and create the sessions once; later calls return at once."""
        self._get_engine()

    def warm_up(self, concurrent: int = 1) -> None:
        """Size onnxruntime's arena before the first request, not during one: the largest
        decoder window, and `concurrent` long sentences at once (the daemon's workers).
        Otherwise RSS creeps up in steps for hundreds of requests, as rare coincidences of
        two long encoder runs extend the arena."""
        engine = self._get_engine()
        engine.warm_up()
        feeds = self._feeds(self._warm_up_ids(), None)
        # Only what grows with the input runs at full length (the encoder; the decoder
        # works in bounded windows, sized just above): about a tenth of a whole synthesis.
        workers = [
            threading.Thread(target=engine.run_input, args=(feeds,), name=f"warm-up-{n + 1}")
            for n in range(concurrent)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        release_free_memory()

    def ids(self, text: str) -> list[list[int]]:
        """Normalized text → phoneme id sequences, none longer than `max_phonemes` allows."""
        return text_to_ids(text, self.config, self.max_phonemes)

    def _warm_up_ids(self) -> list[int]:
        """The longest input a request can bring (`max_phonemes`), so the arena reaches its
        high-water mark now and RSS stays flat afterwards, whatever the requests."""
        if self.max_phonemes is None:
            return text_to_ids(WARM_UP_TEXT, self.config)[0]
        text = ", ".join([WARM_UP_TEXT.rstrip(".")] * (2 + self.max_phonemes // 100)) + "."
        # Exactly the cap, not the last word gap before it: a request's piece can be that long.
        phonemes = phonemize(text, self.config)[0][: self.max_phonemes]
        return phonemes_to_ids(phonemes, self.config.phoneme_id_map)

    def _get_engine(self) -> _Engine:
        engine = self._engine
        if engine is not None:
            return engine
        with self._lock:
            if self._engine is None:
                self._engine = self._create_engine()
            return self._engine

    def _create_engine(self) -> _Engine:
        started = time.monotonic()
        verified = read_pinned(
            self.files.model, pinned=self._pinned, builtin=self.files.builtin_digest
        )
        self.sha256 = verified.sha256
        # Checked and cut in a child process, from the very bytes that were hashed.
        data, halves = verified.data, check_and_split(verified.path, verified.data)
        del verified
        stages = [self._session(stage) for stage in halves.decoder] if halves else []
        probed = probe_stages(stages, halves) if stages and halves else None
        engine: _Engine
        if halves is None or probed is None:
            del stages
            engine = _WholeEngine(self._session(data))
        else:
            data = b""  # not needed any more: a lower peak while the encoder session loads
            encoder = self._session(halves.encoder)
            engine = _WindowedEngine(encoder, probed, halves, self.sample_rate)
        del data, halves
        release_free_memory()  # parsed graphs and byte strings are garbage now
        self.load_seconds = time.monotonic() - started
        _LOGGER.info(
            "Loaded voice %s in %.2f s (%s)", self.name, self.load_seconds, engine.describe()
        )
        return engine

    def _session(self, data: bytes) -> onnxruntime.InferenceSession:
        return onnxruntime.InferenceSession(
            data,
            sess_options=session_options(self._threads),
            providers=["CPUExecutionProvider"],
        )

    def speaker_id(self, speaker: int | str | None) -> int | None:
        """Map a speaker name or number to the model's speaker id (None for one-speaker voices)."""
        if self.config.num_speakers <= 1:
            if speaker not in (None, 0, "0", ""):
                raise ValueError(f"voice {self.name} has one speaker; got speaker {speaker!r}")
            return None
        if speaker is None or speaker == "":
            return self.config.default_speaker_id
        if isinstance(speaker, str) and speaker in self.config.speaker_id_map:
            return self.config.speaker_id_map[speaker]
        if isinstance(speaker, int) or speaker.isdigit():
            number = int(speaker)
            if 0 <= number < self.config.num_speakers:
                return number
        known = ", ".join(sorted(self.config.speaker_id_map)[:10])
        raise ValueError(f"voice {self.name} has no speaker {speaker!r} (known: {known})")

    def stream(
        self, ids: list[int], params: SynthesisParams | None = None, first_frames: int | None = None
    ) -> Iterator[np.ndarray]:
        """Phoneme ids → float32 audio pieces at `sample_rate`, in order.

        With `first_frames` the first piece is that many latent frames, decoded alone, so
        a player can start while the rest is decoded; later pieces are as large as the
        audio already made allows. Concatenated, the pieces equal whole-sentence output.
        """
        return self._get_engine().stream(self._feeds(ids, params), first_frames)

    def synthesize(self, ids: list[int], params: SynthesisParams | None = None) -> np.ndarray:
        """Phoneme ids → float32 audio at `sample_rate`."""
        pieces = list(self.stream(ids, params))
        return np.concatenate(pieces) if len(pieces) > 1 else pieces[0]

    def _feeds(self, ids: list[int], params: SynthesisParams | None) -> dict[str, np.ndarray]:
        params = params or SynthesisParams()
        cfg = self.config
        scales = np.array(
            [
                cfg.noise_scale if params.noise_scale is None else params.noise_scale,
                cfg.length_scale if params.length_scale is None else params.length_scale,
                cfg.noise_w_scale if params.noise_w is None else params.noise_w,
            ],
            dtype=np.float32,
        )
        feeds: dict[str, np.ndarray] = {
            "input": np.array([ids], dtype=np.int64),
            "input_lengths": np.array([len(ids)], dtype=np.int64),
            "scales": scales,
        }
        sid = self.speaker_id(params.speaker)
        if sid is not None:
            feeds["sid"] = np.array([sid], dtype=np.int64)
        return feeds


class _Engine(Protocol):
    def stream(
        self, feeds: dict[str, np.ndarray], first_frames: int | None
    ) -> Iterator[np.ndarray]: ...
    def warm_up(self) -> None: ...
    def run_input(self, feeds: dict[str, np.ndarray]) -> None: ...
    def describe(self) -> str: ...


class _WholeEngine:
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


class _WindowedEngine:
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
        contexts = " + ".join(str(stage.context) for stage in self._stages)
        return f"windowed decoding in {len(self._stages)} stage(s), context {contexts} steps"

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
        total = latent.shape[2]
        if not first_frames or total <= 2 * (first_frames + self.context):
            first_frames = None  # none asked, or short enough that one window is as quick
        start, size = 0, min(first_frames or MAX_WINDOW_FRAMES, MAX_WINDOW_FRAMES)
        made_s, first_at = 0.0, 0.0
        while start < total:
            opening = start == 0 and first_frames is not None  # its size is about latency
            end = min(total, start + size) if opening else start + even_step(total - start, size)
            audio, seconds_per_frame = self._decode(latent, start, end, extra)
            yield audio
            first_at = first_at or time.monotonic()
            made_s += (end - start) * self.frame_seconds
            buffered_s = made_s - (time.monotonic() - first_at)
            size = next_window(buffered_s, seconds_per_frame, first_frames or 1)
            start = end

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
                feeds = {stage.input: np.ascontiguousarray(data)}
                if stage is self._stages[0]:
                    feeds.update(extra)
                data = stage.session.run(None, feeds)[0][..., keep_lo:keep_hi]
            elapsed = time.monotonic() - began
        audio = np.asarray(data, dtype=np.float32).reshape(-1).copy()
        return audio, elapsed / (end - start)


Span = tuple[int, int]


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
    sessions: list[onnxruntime.InferenceSession], halves: SplitModel
) -> list[DecoderStage] | None:
    """The decoder stages with their context and hop, measured: nudge the first step of a
    stage's input and see how far into the audio the change reaches. None if it reaches
    (nearly) everywhere, or the steps do not map to whole numbers of samples.

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
        stages.append(DecoderStage(sessions[index], halves.stage_inputs[index], context, hop))
    if any(stages[0].hop % stage.hop for stage in stages):
        return None  # a stage's steps are not whole fractions of a frame: no window plan
    return stages


def release_free_memory() -> None:
    """Hand freed heap back to the OS (glibc keeps it otherwise; RSS would stay high)."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def to_pcm16(audio: np.ndarray, volume: float = 1.0) -> np.ndarray:
    """float32 → int16; peaks above the knee are bent smoothly below full scale, never clipped.

    Memoryless on purpose: the pieces of one sentence arrive separately, and a gain chosen
    per piece would pump between them.
    """
    scaled = np.asarray(audio, dtype=np.float32) * np.float32(volume)
    magnitude = np.abs(scaled)
    over = magnitude > _KNEE
    if np.any(over):
        room = _PEAK - _KNEE
        bent = _KNEE + room * np.tanh((magnitude[over] - _KNEE) / room)
        scaled[over] = np.sign(scaled[over]) * bent
    pcm: np.ndarray = np.rint(scaled * 32767.0).astype(np.int16)
    return pcm
