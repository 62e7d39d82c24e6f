"""Calibration for static INT8 schemes: phoneme id sequences fed with the voice's
inference noise scales and deterministically, from a seeded model.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from importlib.resources import files as package_files

import numpy as np
import onnx
from onnxruntime.quantization import CalibrationDataReader

from ..text import prepare
from ..voice.files import VoiceFiles
from ..voice.model import load_config
from ..voice.phonemize import text_to_ids

CALIBRATION_SEED = 1234.0


def inference_scales(voice: VoiceFiles) -> tuple[float, float, float]:
    """The noise scales the voice speaks with: its config's, read as the daemon reads it
    (Piper's defaults where it names none)."""
    config = load_config(voice)
    return (float(config.noise_scale), float(config.length_scale), float(config.noise_w_scale))


def sentence_ids(voice: VoiceFiles, resource: str) -> list[list[int]]:
    """Phoneme ids of a packaged sentence list, through the same front-end as speech."""
    config = load_config(voice)
    text = package_files("edge_tts.voice").joinpath("data", resource).read_text("utf-8")
    ids: list[list[int]] = []
    for line in filter(None, map(str.strip, text.splitlines())):
        # first_chunk_chars as when the INT8 builds were calibrated: other cuts would
        # change the calibration data, so the model and its recipe fingerprint.
        chunks = prepare(
            line, language=config.espeak_voice, max_chunk_chars=10_000, first_chunk_chars=60
        )
        for chunk in chunks:
            ids.extend(text_to_ids(chunk, config))
    return ids


class PhonemeReader(CalibrationDataReader):  # type: ignore[misc]
    """Feeds ``input``, ``input_lengths`` and ``scales`` for each id sequence and scale set.

    Supports ``__len__``/``set_range`` so the calibrator can be run one sample at a time
    (histogram calibrators cannot stack sequences of different lengths).
    """

    def __init__(
        self, id_sequences: Sequence[Sequence[int]], scale_sets: Sequence[Sequence[float]]
    ) -> None:
        self._feeds: list[dict[str, np.ndarray]] = [
            {
                "input": np.asarray([ids], dtype=np.int64),
                "input_lengths": np.asarray([len(ids)], dtype=np.int64),
                "scales": np.asarray(scales, dtype=np.float32),
            }
            for ids in id_sequences
            for scales in scale_sets
        ]
        self._iter: Iterator[dict[str, np.ndarray]] = iter(self._feeds)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._iter, None)

    def rewind(self) -> None:
        self._iter = iter(self._feeds)

    def set_range(self, start_index: int, end_index: int) -> None:
        self._iter = iter(self._feeds[start_index:end_index])

    def __len__(self) -> int:
        return len(self._feeds)


def set_random_seed(model: onnx.ModelProto, seed: float | None) -> None:
    """Give every RandomNormal(Like) a fixed seed (or remove it again with ``None``)."""
    for node in model.graph.node:
        if node.op_type not in ("RandomNormalLike", "RandomNormal"):
            continue
        kept = [attr for attr in node.attribute if attr.name != "seed"]
        del node.attribute[:]
        node.attribute.extend(kept)
        if seed is not None:
            node.attribute.append(onnx.helper.make_attribute("seed", seed))
