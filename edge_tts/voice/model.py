"""One Piper voice: its config, verified model and onnxruntime sessions, created lazily."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import onnxruntime
from piper.config import PhonemeType, PiperConfig

from .base import BuildInfo, SynthesisParams
from .files import FP32, IMPORTED, VoiceFiles, scheme_of
from .integrity import read_pinned
from .kernels import nchwc_convolutions
from .model_check import check_and_split
from .phonemize import phonemes_to_ids, phonemize, text_to_ids
from .windowed import Engine, WholeEngine, WindowedEngine, probe_stages

_LOGGER = logging.getLogger(__name__)


class VoiceConfigError(ValueError):
    """The voice's .onnx.json is missing fields or is not JSON."""


def load_config(files: VoiceFiles) -> PiperConfig:
    try:
        raw = json.loads(files.config.read_text(encoding="utf-8"))
        return PiperConfig.from_dict(raw)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise VoiceConfigError(f"bad voice config {files.config}: {err!r}") from err


def session_options(threads: int, nchwc: bool = True) -> onnxruntime.SessionOptions:
    """Our session options. `nchwc=False` leaves out ORT_ENABLE_ALL's NCHWc layout, which
    puts a reorder before and after each convolution: the Multi-band MelGAN vocoder (1-D
    convolutions as 2-D ones of height 1) runs 11 % faster without it; Piper's graphs and
    the acoustic model run the same either way (docs/synthesis.md)."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    level = onnxruntime.GraphOptimizationLevel
    options.graph_optimization_level = level.ORT_ENABLE_ALL if nchwc else level.ORT_ENABLE_EXTENDED
    # Memory patterns are planned per input shape, and every sentence has a new length:
    # with them on, peak RSS over the corpus was ~40 MB higher at no measurable speed gain.
    options.enable_mem_pattern = False
    # Idle workers that spin keep a core busy that another session, the audio callback or
    # MQTT could use (first decoder window after the encoder: 23 ms spinning, 9 ms not).
    # So every session has its own pool with spinning off: onnxruntime's global pool, shared
    # by all sessions, spins ~50 ms on a core after every run and Python cannot stop that;
    # it cost 1.4-1.6x the CPU time and 1.2-1.4x the wall time per sentence
    # (bench.spin_cpu, docs/benchmarks.md).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # onnxruntime's warnings about unused initializers are noise
    if _shared_arena:
        options.add_session_config_entry("session.use_env_allocators", "1")
    return options


_runtime_lock = threading.Lock()
_shared_arena = False  # whether sessions allocate from the process's one registered arena


def share_runtime() -> bool:
    """Make every later onnxruntime session of this process allocate from one memory arena,
    for processes that own all their sessions (the daemon, `say`). A voice is two or three
    sessions and there may be several voices: with an arena each, each keeps its own peak
    (shared: 14 MB less). Thread pools stay per session (`session_options`: spinning off),
    which idle cost nothing."""
    global _shared_arena
    with _runtime_lock:
        if _shared_arena:
            return True
        try:
            memory = onnxruntime.OrtMemoryInfo(
                "Cpu",
                onnxruntime.OrtAllocatorType.ORT_ARENA_ALLOCATOR,
                0,
                onnxruntime.OrtMemType.DEFAULT,
            )
            onnxruntime.create_and_register_allocator(memory, onnxruntime.OrtArenaCfg({}))
        except (AttributeError, RuntimeError) as err:
            _LOGGER.warning("onnxruntime sessions keep their own arenas: %s", err)
            return False
        _shared_arena = True
        return True


# About as long as the longest piece the daemon synthesizes at once (max_chunk_chars 200).
WARM_UP_TEXT = (
    "This sentence warms the voice up before the first request: it is about as long as "
    "the longest piece of text that is synthesized in one go, two hundred characters."
)

# A quantized encoder half (text encoder, duration predictor, flow: ~1,300 mostly small
# ops per run) runs on one thread. Alone, a second one saves it 1-19 % of its wall time
# (longer inputs more) for 1.2-1.3x its CPU; on the engine's path the decoder windows after
# it then run ~5 % slower, so a request gains no wall time and pays ~8 % more CPU. The FP32
# encoder's float kernels do split well (one thread: 9 % slower). The decoder keeps the
# configured threads. `bench.engine_profile --encoder-threads`; docs/benchmarks.md.
QUANTIZED_ENCODER_THREADS = 1


def encoder_threads(scheme: str, threads: int) -> int:
    """Intra-op threads for the encoder half of a `scheme` build configured for `threads`."""
    if scheme in (FP32, IMPORTED):
        return threads
    return min(threads, QUANTIZED_ENCODER_THREADS)


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
        self._engine: Engine | None = None
        self.sha256: str | None = None
        self.load_seconds: float | None = None
        self.build = BuildInfo(scheme_of(files.model), threads)

    @property
    def name(self) -> str:
        return self.files.name

    @property
    def language(self) -> str:
        return self.config.espeak_voice

    @property
    def sample_rate(self) -> int:
        return self.config.sample_rate

    @property
    def length_scale(self) -> float:
        return self.config.length_scale

    @property
    def sentence_silence_s(self) -> float:
        return 0.0  # VITS ends each sentence with its own pause

    @property
    def alphabet(self) -> str:
        return "ipa" if self.config.phoneme_type == PhonemeType.ESPEAK else ""

    @property
    def speakers(self) -> list[str]:
        if self.config.num_speakers <= 1:
            return []
        names = {number: name for name, number in self.config.speaker_id_map.items()}
        return [names.get(number, str(number)) for number in range(self.config.num_speakers)]

    @property
    def engine_description(self) -> str | None:
        """How it runs, once loaded."""
        return self._engine.describe() if self._engine is not None else None

    @property
    def loaded(self) -> bool:
        return self._engine is not None

    @property
    def windowed(self) -> bool:
        """Whether the decoder runs on windows (first audio before the sentence is done)."""
        return isinstance(self._get_engine(), WindowedEngine)

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
        run_at_once(lambda: engine.run_input(feeds), concurrent)
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

    def _get_engine(self) -> Engine:
        engine = self._engine
        if engine is not None:
            return engine
        with self._lock:
            if self._engine is None:
                self._engine = self._create_engine()
            return self._engine

    def _create_engine(self) -> Engine:
        started = time.monotonic()
        verified = read_pinned(
            self.files.model, pinned=self._pinned, builtin=self.files.builtin_digest
        )
        self.sha256 = verified.sha256
        # Checked and cut in a child process, from the very bytes that were hashed.
        data, halves = verified.data, check_and_split(verified.path, verified.data)
        del verified
        stages = [self._session(stage) for stage in halves.decoder] if halves else []
        split = nchwc_convolutions()  # the halves pay on those kernels only (two_halves.py)
        probed = probe_stages(stages, halves, split) if stages and halves else None
        engine: Engine
        if halves is None or probed is None:
            del stages
            engine = WholeEngine(self._session(data))
        else:
            data = b""  # not needed any more: a lower peak while the encoder session loads
            encoder = new_session(halves.encoder, encoder_threads(self.build.scheme, self._threads))
            engine = WindowedEngine(encoder, probed, halves, self.sample_rate)
        del data, halves
        release_free_memory()  # parsed graphs and byte strings are garbage now
        self.load_seconds = time.monotonic() - started
        _LOGGER.info(
            "Loaded voice %s in %.2f s (%s)", self.name, self.load_seconds, engine.describe()
        )
        return engine

    def _session(self, data: bytes) -> onnxruntime.InferenceSession:
        return new_session(data, self._threads)

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


def new_session(data: bytes, threads: int, nchwc: bool = True) -> onnxruntime.InferenceSession:
    """An onnxruntime session on the CPU from verified model bytes, with our options."""
    session = onnxruntime.InferenceSession(
        data, sess_options=session_options(threads, nchwc), providers=["CPUExecutionProvider"]
    )
    # onnxruntime's Python wrapper keeps the model bytes for as long as the session lives,
    # to build it again on a fallback provider (its own TODO says it holds the memory
    # indefinitely). On the CPU alone there is no fallback; kept, they cost a second copy
    # of every graph: 56 MB for the FP32 encoder the pre-renderer loads, 15 MB for INT8's.
    if getattr(session, "_model_bytes", None) is not None:
        session._model_bytes = None
    return session


def run_at_once(work: Callable[[], object], times: int) -> None:
    """Run `work` in `times` threads at once and wait for them all: a warm-up reaches the
    memory the daemon's concurrent workers would need together."""
    workers = [threading.Thread(target=work, name=f"warm-up-{n + 1}") for n in range(times)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def release_free_memory() -> None:
    """Hand freed heap back to the OS (glibc keeps it otherwise; RSS would stay high)."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)
