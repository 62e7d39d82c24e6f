"""The arm64 install, proved under emulation: the role converges a Debian bookworm arm64
root, and there the aarch64 onnxruntime speaks as the x86 one does.

What it proves: the real playbook and role, with tests/test_deploy.py's inputs (less the
Mandarin voice; the INT8 build from the controller's artifacts in the CI cache), converge a
freshly debootstrapped bookworm **arm64** root through Ansible's chroot connection, its
programs run by qemu-user (tests/support/arm64.py installs qemu-user-static and registers
qemu-aarch64 with binfmt_misc when needed, and fails saying why if it cannot). The root
is aarch64; the installed venv (aarch64 wheels, systemd-python built in the root) imports
the package and onnxruntime; and the installed venv's python synthesizes a fixed sentence
in the root, deterministically (`edge_tts.voicebuild.quality.synthesize`, noise scales 0),
with the INT8 default the role installed and with the FP32 original, on qemu's models of
a Pi 4's CPU (Cortex-A72: no int8 dot product) and a Pi 5's (A76: sdot/udot), which
decide onnxruntime's int8 kernels. The host compares each build with the quantizer's
spectral distance (`edge_tts.voicebuild.quality.compare`) to the same build synthesized on
x86: in this process, and (INT8) by the same onnxruntime on an x86 CPU model without
AVX2 (the oldest of qemu's that runs this python; when none does, that one comparison is
skipped, saying why). Each build is also spoken as the daemon loads it there (rewritten
in the model checker's child, cut at the decoder, windowed: the load path's code on ARM's
kernels) and compared with its own whole graph on the same CPU model. The thresholds, and
the measurements they come from, are in test_arm64_speaks_like_x86.

The device's pip gets no index: aarch64 wheels of every dependency, downloaded on the host
at the versions the controller pins, and systemd-python's sdist (tests/support/arm64.py).
Cached in /var/cache/edge-tts-ci ($EDGE_TTS_CI_CACHE): the arm64 root as a tarball
(50 MB), those wheels (140 MB), apt's arm64 .deb files, pip's cache (with the
systemd-python wheel built in the root). Measured on the 2-vCPU x86_64 development
machine: 14 min cold (qemu-user-static installed, debootstrap under emulation 2 min, the
wheels downloaded, systemd-python compiled in the root; the machine half busy), 9.5 min
warm on an idle machine, 16 min warm while other jobs kept it busy (load average 5-7).
Warm, the converge is 8-12 min of that (apt in the root 4-5 min, python3's bootstrap
1-2 min, pip 1 min, the other tasks 5-10 s each) and the speech 2.5-4 min; the quick
`edge-ttsd tune` adds ~7 min (warm, load 3: 18 min 38 s for the module); the fp16 stage
2's check ~9 min more (a build on the host, two sentences on each CPU model; 2026-12-03,
load 3-7: 35 min for the converge and it alone, the converge 24 min of it). In the root,
/proc/cpuinfo is the host's (qemu-user does not emulate it), so the record names the
host's CPU model beside "aarch64", and the CPU features that decide onnxruntime's kernels
are read from the aux vector (qemu-user answers it for the CPU it emulates).

Timings under emulation mean nothing about a Pi: qemu-user translates every aarch64
instruction, so synthesis runs 15-45x slower than real time here where a Pi 4 runs
this voice faster than real time, and a CPU model is not a board (no caches, no clock,
no memory bandwidth). Nothing measured here is a Pi figure; the speech check compares
sound, not speed. `edge-ttsd tune` on a real board measures speed.

Needs root, network (Debian and PyPI) or the warm cache, and what tests/support/rootfs.py
needs. `EDGE_TTS_CI_KEEP=1` keeps the root and the logs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
import yaml

from edge_tts.voice import files
from edge_tts.voice.kernels import nchwc_convolutions
from edge_tts.voice.model import load_config
from edge_tts.voicebuild.quality import (
    GATE_MAX_DISTANCE,
    GATE_MAX_DURATION_DEVIATION,
    Comparison,
    compare,
)

from .support import arm64_speech
from .support.arm64 import (
    EXACT_INT8_X86_MODELS,
    INSIDE_WHEELHOUSE,
    arm64_wheelhouse,
    build_wheel,
    copy_into,
    in_root,
    require_emulation,
    require_qemu_x86,
    speak_on_x86_model,
    stop_processes_in,
)
from .support.rootfs import (
    CACHE,
    VENV,
    SecureBroker,
    attach_caches,
    cached_root_tarball,
    playbook,
    require_root_and_tools,
    snapshot_sources,
    umount_all,
    unpack_root,
    venv_reports,
    write_inventory,
)

pytestmark = pytest.mark.system

INT8 = "/var/lib/edge-tts/voices/en_US-joe-medium.int8.onnx"
# Short on purpose: 1.1 s of speech, which takes 15-50 s per build emulated.
SENTENCE = "Front door open."
# qemu's models of the fleet's CPUs: onnxruntime picks its int8 kernels by what the CPU
# has, and the Pi 4's Cortex-A72 has no int8 dot product where the Pi 5's A76 has.
BOARDS = {"pi4": "cortex-a72", "pi5": "cortex-a76"}
ENGINE_SUFFIX = "-engine"  # a build as the daemon runs it (arm64_speech.speak_through_engine)


@dataclass
class Arm64Root:
    work: Path
    root: Path
    converge: tuple[float, str]  # (seconds, output) of the playbook run


@pytest.fixture(scope="module")
def arm64_root() -> Iterator[Arm64Root]:
    require_root_and_tools()
    require_emulation()
    work = Path(tempfile.mkdtemp(prefix="ettsarm-"))
    root = work / "root"
    root.mkdir()
    broker = SecureBroker(work)  # the inventory's TLS material; nothing connects in a chroot
    try:
        start = time.monotonic()
        tarball = cached_root_tarball("arm64")
        source = snapshot_sources(work / "src")
        wheels = arm64_wheelhouse(*build_wheel(source))  # the wheel the play will find built
        unpack_root(tarball, root)
        attach_caches(root, "arm64", wheels)
        broker.start()
        inventory = write_inventory(work, root, broker, source)
        _for_emulation(inventory)
        prepared = time.monotonic() - start
        converge = playbook(inventory, work / "ansible.log")
        print(f"\narm64: root and wheels {prepared:.0f} s, converge {converge[0]:.0f} s")
        yield Arm64Root(work, root, converge)
    finally:
        stopped = stop_processes_in(root)
        broker.stop()
        umount_all(root)
        if stopped:
            print(f"arm64: killed {stopped} left running in the root")
        if os.environ.get("EDGE_TTS_CI_KEEP"):  # for a post-mortem: logs and the target root
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _for_emulation(inventory: Path) -> None:
    """tests/test_deploy.py's inventory with three changes: the device's pip installs from
    the aarch64 wheelhouse only (the role's edge_tts_pip_extra_args, as for an offline
    fleet); the role's handler does not run `edge-ttsd tune` (a full tune, at least one
    round of every build at every thread count on the evaluation sentences, would take
    far longer than this test's budget emulated; `tune --quick` gets its own test, at the
    end of this module); and pipelining, which saves each task a few emulated processes
    (the chroot connection supports it; deploy/ansible.cfg turns it on for ssh only)."""
    data = yaml.safe_load(inventory.read_text())
    data["all"]["vars"]["edge_tts_pip_extra_args"] = f"--no-index --find-links {INSIDE_WHEELHOUSE}"
    data["all"]["vars"]["edge_tts_tune"] = False
    for host in data["all"]["children"]["edge_tts"]["hosts"].values():
        host["ansible_pipelining"] = True  # fewer emulated processes per task
    inventory.write_text(yaml.safe_dump(data))


def test_the_role_converges_an_arm64_root(arm64_root: Arm64Root) -> None:
    _, output = arm64_root.converge
    assert "failed=0" in output and "unreachable=0" in output, output[-4000:]
    assert (arm64_root.root / "etc/systemd/system/edge-ttsd.service").is_file()
    assert (arm64_root.root / INT8.lstrip("/")).read_bytes() == (
        CACHE / "artifacts/voices/en_US-joe-medium.int8.onnx"
    ).read_bytes()


def test_the_root_is_aarch64_and_its_venv_imports_the_package(arm64_root: Arm64Root) -> None:
    root = arm64_root.root
    uname = in_root(root, "uname", "-m")
    assert uname.stdout.strip() == "aarch64", uname.stdout + uname.stderr
    machine, version, onnxruntime, where = venv_reports(
        root,
        "importlib.metadata as m, platform, edge_tts, onnxruntime",
        "platform.machine()",
        "m.version('edge-tts-daemon')",
        "onnxruntime.__version__",
        "onnxruntime.__file__",
        timeout=300,  # emulated: in_root's timeout
    )
    assert machine == "aarch64" and "+src." in version
    assert onnxruntime == metadata.version("onnxruntime")  # the controller's pin
    # onnxruntime's native library is an aarch64 ELF (e_machine 183), not something emulated
    # on top of x86
    capi = Path(root / where.lstrip("/")).parent / "capi"
    (library,) = capi.glob("onnxruntime_pybind11_state*.so")
    assert int.from_bytes(library.read_bytes()[18:20], "little") == 183, library


def test_arm64_speaks_like_x86(arm64_root: Arm64Root, tmp_path: Path) -> None:
    """The INT8 default and the FP32 original, synthesized in the root on a Pi 4's and a
    Pi 5's CPU model, against the same builds synthesized on x86; and each as the daemon
    runs it there (rewritten at load, decoded in windows) against its own whole graph."""
    ids = arm64_speech.sentence_ids(SENTENCE)
    rate = load_config(files.packaged_fp32()).sample_rate
    models = {"int8": CACHE / "artifacts/voices/en_US-joe-medium.int8.onnx"}
    models["fp32"] = files.packaged_fp32().model
    x86 = {build: arm64_speech.speak(model, ids) for build, model in models.items()}
    host = arm64_speech.x86_features()
    x86_exact = _speak_on_x86_without_avx2(models["int8"], ids, tmp_path)
    both = ["int8", "int8-engine"]
    pi4 = _speak_in_root(arm64_root.root, "pi4", [*both, "fp32", "fp32-engine"], ids, models)
    pi5 = _speak_in_root(arm64_root.root, "pi5", both, ids, models)

    d = {
        "fp32 pi4 vs x86": compare(x86["fp32"], pi4["fp32"], rate),
        "int8 pi4 vs pi5": compare(pi5["int8"], pi4["int8"], rate),
        "int8 pi4 vs x86 (this host)": compare(x86["int8"], pi4["int8"], rate),
        "int8 vs fp32, pi4": compare(pi4["fp32"], pi4["int8"], rate),
        "int8 vs fp32, x86 (this host)": compare(x86["fp32"], x86["int8"], rate),
        "int8 engine vs graph, pi4": compare(pi4["int8"], pi4["int8-engine"], rate),
        "int8 engine vs graph, pi5": compare(pi5["int8"], pi5["int8-engine"], rate),
        "fp32 engine vs graph, pi4": compare(pi4["fp32"], pi4["fp32-engine"], rate),
    }
    if x86_exact is not None:
        d["int8 pi4 vs x86 without AVX2"] = compare(x86_exact, pi4["int8"], rate)
    print(f"\n{SENTENCE!r}, {x86['fp32'].size / rate:.2f} s: spectral distance, duration ratio")
    print(f"  this host: {host}")
    for pair, c in d.items():
        print(f"  {pair:<32} {c.spectral_distance:9.6f} {c.duration_ratio:6.3f}")

    # Measured with onnxruntime 1.32.0 on two AMD EPYC hosts, one AVX2-only, one with
    # AVX-512 and AVX512-VNNI: FP32 on ARM vs x86: 7e-6 / 8e-6, the same length: float
    # summation order. 0.01 is a thousand times that, and as small as the smallest change
    # docs/quantization.md's table lists (a 1 % tempo change, 0.009 on average; a 10 % gain
    # change is 0.095).
    _same(d["fp32 pi4 vs x86"], 0.01)
    # ARM's int8 kernels with and without sdot/udot (Pi 5 / Pi 4): bit-identical on both
    # (integer dot products accumulate exactly in int32, both ways).
    _same(d["int8 pi4 vs pi5"], 0.01)
    # INT8 on ARM vs x86 in this process depends on the host's int8 kernels: on the AVX2
    # host 0.52 (duration 1.055), all of it x86's: onnxruntime's AVX2 u8s8 kernels
    # (vpmaddubsw) saturate their int16 pair sums, so that host's INT8 is 0.60 from FP32
    # where ARM's (and SSE4.1's) is 0.39; on the VNNI host (vpdpbusd accumulates in int32)
    # 5e-6, the same length. 0.7 admits the saturation and rejects what is not the same
    # sentence at all: on this sentence FP32 is 1.08 from "Front door closed.", 0.92 from
    # itself with white noise at 1e-3 added, 3.25 from silence; naive whole-graph INT8 is
    # 0.89 from FP32 on average. (Finer it cannot be on every host: a 1.1 s sentence is
    # 0.59 from "Back door open.", hence the exact comparison below.)
    assert d["int8 pi4 vs x86 (this host)"].spectral_distance < 0.7
    assert abs(d["int8 pi4 vs x86 (this host)"].duration_ratio - 1) < GATE_MAX_DURATION_DEVIATION
    # And the INT8 build on ARM still stands in for FP32 by the quantizer's own gate
    # (docs/quantization.md): 0.39 / 0.375, duration 1.032 / 1.022 measured.
    arm_quantized = d["int8 vs fp32, pi4"]
    assert arm_quantized.spectral_distance < GATE_MAX_DISTANCE
    assert abs(arm_quantized.duration_ratio - 1) < GATE_MAX_DURATION_DEVIATION
    # The daemon's load path on ARM's kernels: the graph rewritten at load for the CPU's
    # kernels (voice/model_check.py: the encoder's compact forms, HiFi-GAN's 2-D Convs and
    # polyphase upsamplings), cut at the decoder, decoded in windows, against the same
    # build's whole graph in one session on the same CPU model. Measured 2026-12-04
    # (qemu 7.2, onnxruntime 1.32.0, Cortex-A72): INT8 bit for bit the same (its encoder's
    # rewrites change float rounding before int8 steps, which can move a duration by a
    # frame on another sentence: test_encoder_rewrites.py), FP32 1e-5 (LayerNormalization
    # sums in another order).
    for pair in ("int8 engine vs graph, pi4", "int8 engine vs graph, pi5"):
        _same(d[pair], 0.01)
    _same(d["fp32 engine vs graph, pi4"], 0.01)
    # Last, as the others need no emulated x86: INT8 on ARM vs the same onnxruntime on x86
    # with its SSE4.1 int8 kernels: 5e-6 / 4e-6, the same length, as close as FP32 is: ARM
    # computes exactly what x86 computes exactly.
    if x86_exact is None:
        pytest.skip(
            f"{sys.executable} or a library it loads needs an instruction that none of "
            f"qemu's x86 models without AVX2 has ({', '.join(EXACT_INT8_X86_MODELS)}), so "
            "onnxruntime's exact (SSE4.1) int8 kernels cannot be run here to compare ARM's "
            "with; every other comparison above passed"
        )
    _same(d["int8 pi4 vs x86 without AVX2"], 0.01)


# Machine code a python built for a newer x86 would run: in a sitecustomize module, executed
# through ctypes at every start of the interpreter, it stands for such a build.
NEEDS = {
    "AVX": "c5f877c3",  # vzeroupper; ret
    "AVX2": "c5fdfec0c5f877c3",  # vpaddd ymm0, ymm0, ymm0; vzeroupper; ret
}
SITECUSTOMIZE = """import ctypes, mmap
code = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
code.write(bytes.fromhex({hex!r}))
ctypes.CFUNCTYPE(None)(ctypes.addressof(ctypes.c_char.from_buffer(code)))()
"""


@pytest.mark.parametrize(("needs", "model"), [("AVX", "SandyBridge"), ("AVX2", None)])
def test_the_x86_reference_runs_on_the_oldest_model_without_avx2_that_can(
    needs: str, model: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A python that needs more than a Nehalem (here: AVX) speaks on the oldest model that
    has it and no AVX2; one that needs AVX2 is reported as not runnable there (None: the
    speech test then skips that one comparison), never a crash of the test."""
    require_qemu_x86()
    (tmp_path / "site").mkdir()
    custom = SITECUSTOMIZE.format(hex=NEEDS[needs])
    (tmp_path / "site/sitecustomize.py").write_text(custom)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))  # qemu's python inherits it
    script = Path(arm64_speech.__file__)
    spoken = speak_on_x86_model(script, SENTENCE, tmp_path, "fp32")
    if model is None:
        assert spoken is None
        return
    assert spoken is not None
    cpu, report = spoken
    assert cpu == model and report["cpu"] == {"avx2": False, "avx512vnni": False}
    assert report["ids"] == arm64_speech.sentence_ids(SENTENCE)
    assert (tmp_path / "fp32.f32").stat().st_size > 0


def _speak_on_x86_without_avx2(
    model: Path, ids: list[list[int]], out: Path
) -> npt.NDArray[np.float32] | None:
    """The INT8 build by this python and onnxruntime on the oldest x86 CPU model without
    AVX2 that runs them (tests/support/arm64.py's EXACT_INT8_X86_MODELS); None if none
    does."""
    script = Path(arm64_speech.__file__)
    spoken = speak_on_x86_model(script, SENTENCE, out, f"int8={model}")
    if spoken is None:
        print(f"x86 without AVX2: none of {EXACT_INT8_X86_MODELS} runs {sys.executable}")
        return None
    cpu, report = spoken
    print(f"x86 without AVX2: qemu-x86_64 -cpu {cpu} ({report['cpu']})")
    assert report["cpu"] == {"avx2": False, "avx512vnni": False}  # the kernels' choice
    assert report["ids"] == ids
    return np.fromfile(out / "int8.f32", dtype="<f4")


def _speak_in_root(
    root: Path, board: str, builds: list[str], ids: list[list[int]], models: dict[str, Path]
) -> dict[str, npt.NDArray[np.float32]]:
    """tests/support/arm64_speech.py in the root, by the installed venv's python on the
    board's CPU model: the installed INT8 voice, the installed FP32 original."""
    out = "/tmp/arm64-speech"  # inside the root
    copy_into(root, Path(arm64_speech.__file__), f"{out}/arm64_speech.py")
    specs = [_spec(build, board) for build in builds]
    cpu = BOARDS[board]
    command = [f"{VENV}/bin/python", f"{out}/arm64_speech.py", SENTENCE, out, *specs]
    result = in_root(root, *command, cpu=cpu, timeout=1200)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(result.stdout.splitlines()[-1])
    seconds = {b: report[f"{b}-{board}"]["seconds"] for b in builds}
    print(f"{board} ({cpu}, {report['cpu']}): {seconds} s emulated")
    # onnxruntime's aarch64 wheel has no NCHWc kernels, as edge_tts.voice.kernels says: the
    # decoder stays as exported and no window runs in halves (both are for those kernels).
    assert report["nchwc"] is nchwc_convolutions("aarch64") is False
    for build in builds:
        if build.endswith(ENGINE_SUFFIX):  # the daemon's load path took the voice whole
            engine = report[f"{build}-{board}"]["engine"]
            print(f"  {build}: {engine}")
            assert "windowed decoding in 2 stage(s)" in engine, engine
            assert "halves" not in engine, engine
    assert report["machine"] == "aarch64"
    assert report["cpu"] == {"dotprod": board == "pi5", "i8mm": False}  # the kernels' choice
    assert report["ids"] == ids  # espeak-ng's aarch64 build phonemizes alike
    audio = {}
    for build in builds:
        model = build.removesuffix(ENGINE_SUFFIX)
        assert report[f"{build}-{board}"]["sha256"] == _sha256(models[model]), build
        raw = root / out.lstrip("/") / f"{build}-{board}.f32"
        audio[build] = np.fromfile(raw, dtype="<f4")
    return audio


def _spec(build: str, board: str) -> str:
    """arm64_speech's spec of a build ("int8", "fp32"; "-engine": as the daemon runs it)."""
    model = build.removesuffix(ENGINE_SUFFIX)
    spec = f"{build}-{board}" + (f"={INT8}" if model == "int8" else "")
    return arm64_speech.ENGINE + spec if build.endswith(ENGINE_SUFFIX) else spec


def _same(comparison: Comparison, bound: float) -> None:
    assert comparison.spectral_distance < bound and comparison.duration_ratio == 1.0, comparison


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- `edge-ttsd tune --quick` in the root ---------------------------------------------------


def test_tune_runs_on_arm64_and_records_a_choice(arm64_root: Arm64Root) -> None:
    """The installed `edge-ttsd tune`, as the role's handler runs it (which the converge
    skips here: _for_emulation), in its quick mode at the configured thread count, on a
    Pi 4's CPU model. It proves tune works on aarch64: the gate runs (ARM's int8 kernels
    pass it, test_arm64_speaks_like_x86) and a choice is recorded. What it timed under
    emulation says nothing about a Pi and is not checked."""
    command = [f"{VENV}/bin/edge-ttsd", "tune", "--config", "/etc/edge-tts/edge-tts.yaml"]
    result = in_root(
        arm64_root.root,
        *command,
        "--quick",
        "--threads",
        "2",
        cpu=BOARDS["pi4"],
        env={"STATE_DIRECTORY": "/var/lib/edge-tts"},
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    print(result.stdout)
    assert "aarch64" in result.stdout and "chosen: " in result.stdout
    saved = json.loads((arm64_root.root / "var/lib/edge-tts/tune.json").read_text())
    assert saved["machine"]["arch"] == "aarch64"
    candidates = {c["scheme"]: c for c in saved["voices"]["default"]["candidates"]}
    installed = files.scheme_of(CACHE / "artifacts/voices/en_US-joe-medium.int8.onnx")
    assert set(candidates) == {"fp32", installed}
    gate = candidates[installed]["gate"]
    assert gate is not None and gate["passed"], gate  # as measured above: 0.39 on ARM


# --- the fp16 stage 2, where onnxruntime has FP16 arithmetic and where it has not ------------

FP16_SCHEME = "static-fast-ups01-fp16"
FP16_SENTENCES = 2  # tune's gate sentences (tune/run.py GATE_SENTENCES): ~4 min per CPU here
FP16_INSIDE = "/tmp/arm64-fp16"


def test_fp16_stage2_runs_in_fp16_on_a_pi5s_cpu_and_is_tried_there_only(
    arm64_root: Arm64Root, tmp_path: Path
) -> None:
    """The fp16-stage-2 build, made on the host, in the root on qemu's Cortex-A76 (FP16
    arithmetic: `asimdhp`) and Cortex-A72 (none): on the A76 onnxruntime runs all of stage
    2 on fp16 kernels, with no Cast inside it in the graph it optimized; on the A72 it runs
    it in float from the fp16 weights (the same audio as x86). It passes the quality gate on
    both, and the installed `tune` tries it on the A76 only."""
    from edge_tts.voicebuild.calibration import sentence_ids
    from edge_tts.voicebuild.quantizer import quantize

    voice = files.packaged_fp32()
    build = tmp_path / "fp16.int8.onnx"
    quantize(voice.model, build, FP16_SCHEME, sentence_ids(voice, "calibration_en.txt"))
    ids = sentence_ids(voice, "evaluation_en.txt")[:FP16_SENTENCES]
    (tmp_path / "ids.json").write_text(json.dumps(ids))
    for name in ("ids.json", build.name):
        copy_into(arm64_root.root, tmp_path / name, f"{FP16_INSIDE}/{name}")
    rate = load_config(voice).sample_rate
    fp32 = [arm64_speech.speak(voice.model, [sequence]) for sequence in ids]
    on_x86 = [arm64_speech.speak(build, [sequence]) for sequence in ids]
    for board, fp16 in (("pi5", True), ("pi4", False)):
        audio, kernels, casts = _fp16_stage2_in_root(arm64_root.root, board, fp16)
        gate = [compare(ref, got, rate) for ref, got in zip(fp32, audio, strict=True)]
        same = [compare(x, got, rate) for x, got in zip(on_x86, audio, strict=True)]
        print(f"  {board}: gate {[round(c.spectral_distance, 3) for c in gate]}, against the "
              f"same build on x86 {[round(c.spectral_distance, 4) for c in same]}")  # fmt: skip
        # Measured 2026-12-03 (qemu 7.2, onnxruntime 1.32.0, 3 sentences): the A76 ran all
        # of stage 2 on fp16 kernels (Conv, NhwcFusedConv, Add, Div, LeakyRelu), 0.340-0.377
        # from FP32 (x86: 0.335-0.374; fp16 arithmetic moved it 0.03-0.04); the A72 ran its
        # Conv/Add/Div/LeakyRelu in float, bit for bit x86's audio.
        assert all(c.spectral_distance < GATE_MAX_DISTANCE for c in gate), gate
        assert all(abs(c.duration_ratio - 1) < GATE_MAX_DURATION_DEVIATION for c in gate)
        floats = {op for op, element in kernels.values() if element == "float"}
        if fp16:
            assert kernels and not floats and not casts, (kernels, casts)
        else:
            assert {"Conv", "Add"} <= floats, kernels
            assert all(c.spectral_distance < 0.01 for c in same), same
        decides = "from edge_tts.voice.machine import cpu_facts; from edge_tts.tune.quantized "
        decides += f"import unfit; print(unfit({FP16_SCHEME!r}, cpu_facts()))"
        tried = in_root(arm64_root.root, f"{VENV}/bin/python", "-c", decides, cpu=BOARDS[board])
        assert tried.returncode == 0, tried.stderr[-3000:]
        assert (tried.stdout.strip() == "None") is fp16, tried.stdout  # else: why not


def _fp16_stage2_in_root(
    root: Path, board: str, fp16: bool
) -> tuple[list[npt.NDArray[np.float32]], dict[str, tuple[str, str]], list[str]]:
    """tests/support/arm64_fp16.py in the root on the board's CPU model: the build's audio
    per sentence, stage 2's kernels as profiled, the Casts inside it as optimized."""
    from .support import arm64_fp16

    copy_into(root, Path(arm64_fp16.__file__), f"{FP16_INSIDE}/arm64_fp16.py")
    files_in = [f"{FP16_INSIDE}/{name}" for name in ("fp16.int8.onnx", "ids.json")]
    command = [f"{VENV}/bin/python", f"{FP16_INSIDE}/arm64_fp16.py", *files_in, FP16_INSIDE]
    run = in_root(root, *command, board, cpu=BOARDS[board], timeout=1800)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(run.stdout.splitlines()[-1])
    assert report["cpu"]["asimdhp"] is fp16, report["cpu"]  # what onnxruntime reads
    out = root / FP16_INSIDE.lstrip("/")
    raw = np.fromfile(out / f"{board}.f32", dtype="<f4")
    kernels = arm64_fp16.stage_kernels(report)
    print(f"{board}: {report['seconds']} s emulated, stage 2 ran {sorted(set(kernels.values()))}")
    audio = np.split(raw, np.cumsum(report["samples"])[:-1])
    return audio, kernels, arm64_fp16.stage_casts(out / f"{board}.opt.onnx")
