"""`edge-ttsd tune`: which builds of a voice stand in for one another, the choice, its
record and when it stops holding (unit tests on small files), and end to end: tune on
this machine, then the daemon runs what tune chose and says so in its events and
telemetry, and stops using it when the machine no longer matches."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
import yaml

from edge_tts.config import settings_from_mapping
from edge_tts.tune.measure import Gate, Measured, Timing
from edge_tts.tune.run import fitting, pick, thread_counts
from edge_tts.voice import builds, files
from edge_tts.voice import tune_record as record
from edge_tts.voice.builds import Build, BuildError, candidates, pinned_build
from edge_tts.voice.integrity import sha256_hex
from edge_tts.voice.machine import cpu_facts, fingerprint

from .conftest import run_cli
from .support.broker import Broker, Recorder
from .support.daemon_proc import DaemonProcess, daemon_config
from .support.waiting import REQUEST_TIMEOUT_S, wait_until

PACKAGED = files.PACKAGED_DIGESTS["en_US-joe-medium.onnx"]

# --- the machine ------------------------------------------------------------------------


@pytest.mark.unit
def test_cpu_facts_name_the_cpu_and_the_instructions_that_pick_kernels(tmp_path: Path) -> None:
    x86 = tmp_path / "x86"
    x86.write_text(
        "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse2 avx2 fma avx512_vnni\n"
        "\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse2 avx2 fma avx512_vnni\n"
    )
    arm = tmp_path / "arm"  # a Pi 4's kernel: no model name, a CPU part number
    arm.write_text(
        "processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\n"
        "CPU implementer\t: 0x41\nCPU part\t: 0xd08\n"
    )
    facts = cpu_facts(x86)
    assert facts["model"] == "AMD EPYC 7B13"
    assert facts["notable_flags"] == ["avx2", "avx512_vnni", "fma"]
    assert facts["int8_dot_product"] is True
    pi4 = cpu_facts(arm)
    assert str(pi4["model"]).endswith("part 0xd08")
    assert pi4["notable_flags"] == ["asimd"] and pi4["int8_dot_product"] is False
    assert facts["flags_sha256"] != pi4["flags_sha256"]


PI5_FEATURES = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp"  # noqa: E501
PI4_FEATURES = "fp asimd evtstrm crc32 cpuid"


def _auxv(path: Path, hwcap: int) -> Path:
    """An aux vector as the kernel lays it out: (key, value) pairs of u64, AT_NULL last."""
    path.write_bytes(np.array([6, 4096, 16, hwcap, 0, 0], dtype="<u8").tobytes())
    return path


@pytest.mark.unit
def test_fp16_arithmetic_is_asimdhp_from_cpuinfo_or_the_aux_vector(tmp_path: Path) -> None:
    """A Pi 5 (Cortex-A76) has it, a Pi 4 (A72) not, x86 never; under qemu-user
    /proc/cpuinfo is the host's, so the aux vector (what onnxruntime reads) also counts."""
    pi5, pi4, host = tmp_path / "pi5", tmp_path / "pi4", tmp_path / "x86"
    pi5.write_text(f"processor\t: 0\nFeatures\t: {PI5_FEATURES}\nCPU part\t: 0xd0b\n")
    pi4.write_text(f"processor\t: 0\nFeatures\t: {PI4_FEATURES}\nCPU part\t: 0xd08\n")
    host.write_text("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 f16c fma\n")
    none = tmp_path / "no-auxv"
    a76 = _auxv(tmp_path / "a76", (1 << 10) | (1 << 9) | (1 << 20))
    a72 = _auxv(tmp_path / "a72", 1 << 1)
    arm = "aarch64"
    assert cpu_facts(pi5, none, arm)["fp16_arithmetic"] is True
    assert "asimdhp" in cast(list[str], cpu_facts(pi5, none, arm)["notable_flags"])
    assert cpu_facts(pi4, none, arm)["fp16_arithmetic"] is False
    assert cpu_facts(pi4, a72, arm)["fp16_arithmetic"] is False
    assert cpu_facts(host, a76, arm)["fp16_arithmetic"] is True  # qemu -cpu cortex-a76
    assert cpu_facts(host, a72, arm)["fp16_arithmetic"] is False  # qemu -cpu cortex-a72
    assert cpu_facts(host, a76, "x86_64")["fp16_arithmetic"] is False  # x86: no aux HWCAP
    # The recorded machine stays /proc/cpuinfo's: a choice made before still holds.
    assert cpu_facts(pi4, a72, arm)["flags_sha256"] == cpu_facts(pi4, none, arm)["flags_sha256"]


FP16 = "static-fast-ups01-fp16"
NO_FP16 = {"fp16_arithmetic": False, "int8_dot_product": True}
WITH_FP16 = {"fp16_arithmetic": True, "int8_dot_product": True}


@pytest.mark.unit
def test_the_fp16_build_is_tried_and_built_only_where_the_cpu_has_fp16_arithmetic(
    tmp_path: Path,
) -> None:
    from edge_tts.tune.quantized import build_schemes, cpu_schemes, unfit

    half = Build(FP16, Path("/v/joe.static-fast-ups01-fp16.int8.onnx"), "c" * 64, False)
    logged: list[str] = []
    assert fitting([INT8, FP32, half], NO_FP16, logged.append) == [INT8, FP32]
    assert logged == [f"  not trying {FP16} ({half.path.name}): made for fp16_arithmetic, "
                      "which this CPU lacks"]  # fmt: skip
    assert fitting([INT8, FP32, half], WITH_FP16, logged.append) == [INT8, FP32, half]
    configured = Build(FP16, half.path, half.sha256, configured=True)  # the user's own choice
    assert fitting([configured, FP32], NO_FP16, print) == [configured, FP32]
    assert unfit("static-fast-ups01", NO_FP16) is None and unfit("from-a-newer-release", {}) is None
    assert cpu_schemes(WITH_FP16) == [FP16] and cpu_schemes(NO_FP16) == []
    vs = settings_for({}, tmp_path).voices["default"]
    logged.clear()  # refused before anything is looked up or built
    assert build_schemes(vs, [FP16, "auto"], logged.append, NO_FP16) == []
    assert logged == [f"  not building {FP16}: made for fp16_arithmetic, which this CPU lacks"]


@pytest.mark.unit
def test_thread_counts_start_with_the_configured_one() -> None:
    assert thread_counts(2, 4) == [2, 1, 4]
    assert thread_counts(2, 2) == [2, 1]
    assert thread_counts(1, 8) == [1, 2, 8]


# --- the builds of a voice ----------------------------------------------------------------


def fake_build(folder: Path, name: str, scheme: str, source: str) -> Path:
    """A file standing in for one of our INT8 builds: content, config and manifest."""
    model = folder / name
    model.write_bytes(f"not a model: {name}".encode())
    model.with_name(model.name + ".json").write_text("{}")
    manifest = {"scheme": scheme, "sha256": sha256_hex(model.read_bytes()), "source_sha256": source}
    model.with_name(model.name + ".manifest.json").write_text(json.dumps(manifest))
    return model


@pytest.fixture()
def voices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    data = tmp_path / "data"
    (data / "voices").mkdir(parents=True)
    monkeypatch.setenv("EDGE_TTS_DATA_DIR", str(data))
    yield data / "voices"


def settings_for(voice: dict[str, Any], state: Path) -> Any:
    return settings_from_mapping({"voices": {"default": voice}, "state_dir": str(state)})


@pytest.mark.unit
def test_candidates_are_the_configured_build_its_original_and_its_siblings(
    voices: Path, tmp_path: Path
) -> None:
    configured = fake_build(voices, "joe.int8.onnx", "static-fast", PACKAGED)
    sibling = fake_build(voices, "joe.weight-only.int8.onnx", "weight-only", PACKAGED)
    fake_build(voices, "other.int8.onnx", "static-fast", "0" * 64)  # another voice's build
    found = candidates(settings_for({"path": str(configured)}, tmp_path).voices["default"])
    assert [(b.scheme, b.path, b.configured) for b in found] == [
        ("static-fast", configured, True),
        ("fp32", files.packaged_fp32().model, False),
        ("weight-only", sibling, False),
    ]
    assert found[1].sha256 == PACKAGED and found[2].sha256 == sha256_hex(sibling.read_bytes())


@pytest.mark.unit
def test_a_pinned_build_is_found_or_refused_with_what_to_do(voices: Path, tmp_path: Path) -> None:
    configured = fake_build(voices, "joe.int8.onnx", "static-fast", PACKAGED)
    vs = settings_for({"path": str(configured), "build": "fp32"}, tmp_path).voices["default"]
    assert pinned_build(vs).path == files.packaged_fp32().model
    missing = settings_for({"path": str(configured), "build": "static-all"}, tmp_path)
    with pytest.raises(BuildError, match=r"no 'static-all' build .*edge-ttsd quantize --scheme"):
        pinned_build(missing.voices["default"])


# --- the choice and when it holds ---------------------------------------------------------


def measured(build: Build, rtf: float, gate: Gate | None = None) -> Measured:
    return Measured(build, gate, {2: Timing([0.1], rtf * 10, 10.0)})


FP32 = Build("fp32", Path("/v/joe.onnx"), "a" * 64, configured=False)
INT8 = Build("static-fast", Path("/v/joe.int8.onnx"), "b" * 64, configured=True)
PASS, FAIL = Gate(True, 0.4, 0.01, 2), Gate(False, 0.59, 0.01, 2)


@pytest.mark.unit
def test_pick_the_fastest_build_that_passes_the_gate() -> None:
    faster_int8 = [measured(INT8, 0.30, PASS), measured(FP32, 0.40)]
    assert pick(faster_int8, 2)[0].build is INT8
    failed = [measured(INT8, 0.30, FAIL), measured(FP32, 0.40)]
    best, why = pick(failed, 2)
    assert best.build is FP32 and "failed the quality gate" in why
    within_noise = [measured(INT8, 0.40, PASS), measured(FP32, 0.39)]
    assert pick(within_noise, 2)[0].build is INT8  # not worth a switch: 2.5 % is noise
    clearly = [measured(INT8, 0.40, PASS), measured(FP32, 0.30)]
    best, why = pick(clearly, 2)
    assert best.build is FP32 and why.startswith("1.33x")


def a_record(state: Path, configured: Path, chosen: Path, machine: dict[str, object]) -> None:
    entry = {
        "configured_sha256": sha256_hex(configured.read_bytes()),
        "chosen": {
            "scheme": "weight-only",
            "path": str(chosen),
            "sha256": sha256_hex(chosen.read_bytes()),
        },
    }
    state.mkdir(exist_ok=True)
    (state / record.RECORD_NAME).write_text(
        json.dumps({"format": record.FORMAT, "machine": machine, "voices": {"default": entry}})
    )


@pytest.mark.unit
def test_the_recorded_choice_holds_until_the_machine_or_a_model_changes(
    voices: Path, tmp_path: Path
) -> None:
    configured = fake_build(voices, "joe.int8.onnx", "static-fast", PACKAGED)
    chosen = fake_build(voices, "joe.weight-only.int8.onnx", "weight-only", PACKAGED)
    state = tmp_path / "state"
    settings = settings_for({"path": str(configured)}, state)
    machine = fingerprint()

    def loads() -> tuple[Path, str, str]:
        choice = builds.choices(settings)["default"]
        return choice.build.path, choice.chosen_by, choice.why

    assert loads() == (configured, "config", "not tuned on this machine")
    a_record(state, configured, chosen, machine)
    assert loads()[:2] == (chosen, "tune")
    a_record(state, configured, chosen, {**machine, "model": "Cortex-A72"})
    assert loads()[0] == configured and "CPU changed" in loads()[2]
    a_record(state, configured, chosen, {**machine, "onnxruntime": "1.0.0"})
    assert loads()[0] == configured and "onnxruntime changed" in loads()[2]
    a_record(state, configured, chosen, machine)
    chosen.write_bytes(b"rebuilt")  # a new build, with its manifest: not what tune measured
    manifest = chosen.with_name(chosen.name + ".manifest.json")
    rebuilt = {**json.loads(manifest.read_text()), "sha256": sha256_hex(b"rebuilt")}
    manifest.write_text(json.dumps(rebuilt))
    assert loads()[0] == configured and "changed since" in loads()[2]
    (state / record.RECORD_NAME).write_text("{not json")
    assert loads()[:2] == (configured, "config")
    pinned = settings_for({"path": str(configured), "build": "fp32"}, state)
    assert builds.choices(pinned)["default"].build.path == files.packaged_fp32().model


# --- end to end -----------------------------------------------------------------------------


def started_and_finished(rec: Recorder, request_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    rec.publish("edge-tts/testpi/say", json.dumps({"id": request_id, "text": "Tuned."}))
    done = rec.wait_event(
        "edge-tts/testpi/events", "finished", request_id, timeout=REQUEST_TIMEOUT_S
    )
    started = rec.wait_event("edge-tts/testpi/events", "started", request_id)
    return started, done


@pytest.mark.daemon
def test_tune_records_a_choice_and_the_daemon_runs_it_while_it_holds(
    workdir: Path, broker: Broker
) -> None:
    config = daemon_config(
        workdir, broker.port, audio={"sink": "wav-dir", "wav_dir": str(workdir / "wav")}
    )
    config_file = workdir / "tune.yaml"
    config_file.write_text(yaml.safe_dump(config))
    tuned = run_cli("tune", "--config", str(config_file), "--quick", "--threads", "2", timeout=900)
    assert tuned.returncode == 0, tuned.stdout + tuned.stderr
    saved = json.loads((workdir / "state" / record.RECORD_NAME).read_text())
    entry = saved["voices"]["default"]
    installed = files.scheme_of(files.default_int8_path())  # the setup's build: the default
    assert {c["scheme"] for c in entry["candidates"]} == {"fp32", installed}
    for candidate in entry["candidates"]:
        timing = candidate["by_threads"]["2"]
        assert timing["rtf"] > 0 and timing["ttfa_ms"] > 0 and candidate["rss_mb"] is not None
        if candidate["scheme"] != "fp32":
            assert candidate["gate"] is not None, "an INT8 build was not checked against FP32"
    scheme = entry["chosen"]["scheme"]
    assert f"chosen: {scheme}" in tuned.stdout and "TTFA p50" in tuned.stdout
    shown = run_cli("check-config", str(config_file))
    assert f"voice default: loads the {scheme} build" in shown.stdout, shown.stdout

    rec = Recorder(broker.port, ["edge-tts/#"])
    daemon = DaemonProcess(workdir, config)
    try:
        daemon.start()
        daemon.wait_ready()
        started, done = started_and_finished(rec, "tuned-1")
        expected = {
            "voice": "en_US-joe-medium",
            "scheme": scheme,
            "threads": 2,
            "chosen_by": "tune",
        }
        assert started["build"] == expected
        assert done["builds"] == {
            "en_US-joe-medium": {k: expected[k] for k in ("scheme", "threads", "chosen_by")}
        }
        wait_until(
            lambda: _telemetry_build(rec) == done["builds"]["en_US-joe-medium"],
            60,
            "telemetry build",
        )
        assert daemon.terminate() == 0

        saved["machine"]["model"] = "Cortex-A72"  # as if the SD card moved to a Pi 4
        (workdir / "state" / record.RECORD_NAME).write_text(json.dumps(saved))
        daemon.start()
        daemon.wait_ready()
        daemon.wait_log(r"Voice default: .* the tuning record does not hold: CPU changed")
        started, _ = started_and_finished(rec, "moved-1")
        assert started["build"]["chosen_by"] == "config"
        assert started["build"]["scheme"] == files.scheme_of(files.default_voice().model)
    finally:
        print(daemon.log()[-4000:])  # shown when the test fails
        if daemon.running():
            daemon.terminate()
        daemon.close()
        rec.close()


def _telemetry_build(rec: Recorder) -> dict[str, Any] | None:
    found = [json.loads(p) for _, t, p, _ in rec.messages if t == "edge-tts/testpi/telemetry"]
    return found[-1]["voices"]["default"]["build"] if found else None


@pytest.mark.unit
def test_unknown_schemes_are_refused_before_anything_is_built(tmp_path: Path) -> None:
    from edge_tts.tune.quantized import UnknownSchemeError, build_schemes

    vs = settings_for({}, tmp_path).voices["default"]
    with pytest.raises(UnknownSchemeError, match=r"unknown scheme.*static-fast"):
        build_schemes(vs, ["static-fastest"], print, NO_FP16)


@pytest.mark.daemon
def test_tune_builds_another_scheme_and_gates_it(tmp_path: Path) -> None:
    """`--schemes weight-only` (no calibration: the quickest to build) beside the default
    build, in a data directory of its own."""
    data = tmp_path / "data" / "voices"
    data.mkdir(parents=True)
    default = files.default_int8_path()
    for suffix in ("", ".json", ".manifest.json"):
        source = default.with_name(default.name + suffix)
        (data / source.name).write_bytes(source.read_bytes())
    config = tmp_path / "tune.yaml"
    config.write_text(yaml.safe_dump({"device_id": "t", "state_dir": str(tmp_path / "state")}))
    env = {"EDGE_TTS_DATA_DIR": str(tmp_path / "data")}
    args = (
        "tune",
        "--config",
        str(config),
        "--quick",
        "--threads",
        "2",
        "--schemes",
        "weight-only",
    )
    tuned = run_cli(*args, env=env, timeout=1200)
    assert tuned.returncode == 0, tuned.stdout + tuned.stderr
    built = data / "en_US-joe-medium.weight-only.int8.onnx"
    assert built.is_file() and "building weight-only" in tuned.stdout
    saved = json.loads((tmp_path / "state" / record.RECORD_NAME).read_text())
    (weight_only,) = [
        c for c in saved["voices"]["default"]["candidates"] if c["scheme"] == "weight-only"
    ]
    assert weight_only["path"] == str(built) and weight_only["gate"]["sentences"] >= 1
    # Int8 weights, FP32 arithmetic: rounding alone, far inside the gate on any CPU.
    assert weight_only["gate"]["passed"] and weight_only["gate"]["max_distance"] < 0.3
    again = run_cli(*args, env=env, timeout=1200)  # built once: not again
    assert again.returncode == 0 and "building" not in again.stdout


@pytest.mark.unit
def test_the_table_keeps_a_long_build_name_apart_from_its_gate() -> None:
    from edge_tts.cli.tune import format_record

    timing = {"2": {"rtf": 0.04, "ttfa_ms": 27.0}}
    candidate = {"scheme": "static-fast-ups01", "configured": True, "rss_mb": 139.0,
                 "by_threads": timing, "gate": {"passed": True, "max_distance": 0.35}}  # fmt: skip
    reference = {"scheme": "fp32", "configured": False, "rss_mb": 108.0,
                 "by_threads": timing, "gate": None}  # fmt: skip
    machine = {"model": "AMD EPYC", "arch": "x86_64", "cores": 2, "notable_flags": [],
               "onnxruntime": "1.32.0"}  # fmt: skip
    chosen = {"scheme": "static-fast-ups01", "path": "x.onnx"}
    entry = {"candidates": [candidate, reference], "threads": 2, "fastest_threads": 2,
             "why": "the fastest that passes", "chosen": chosen}  # fmt: skip
    result = {"machine": machine, "created": "2026-12-02T03:44:43+00:00", "elapsed_s": 60,
              "budget_s": 60, "voices": {"default": entry}}  # fmt: skip
    table = format_record(result)
    assert "static-fast-ups01 (configured)  pass 0.35" in table, table
    header, first, second = table.splitlines()[3:6]
    assert header.index("gate") == first.index("pass") == second.index("reference")
