"""The benchmarks do not rot and fail loudly: each one's command line parses, and a part
that could not run (a missing tool, no samples, a target with nothing to judge) ends the
run with exit status 2 and the reason, never a verdict on no data."""

from __future__ import annotations

import argparse
import importlib
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from bench import http_load, report_io
from bench.report_io import CANNOT_MEASURE, CannotMeasure, run_and_emit, target

pytestmark = pytest.mark.unit

BENCH = Path(__file__).resolve().parents[1] / "bench"
# Every module with a main() is a benchmark one runs as `python -m bench.NAME`.
BENCHMARKS = sorted(
    path.stem for path in BENCH.glob("*.py") if "\ndef main(" in path.read_text("utf-8")
)


def test_the_benchmarks_are_found() -> None:
    assert {"http_load", "engine", "daemon_e2e", "soak", "intelligibility"} <= set(BENCHMARKS)


@pytest.mark.parametrize("name", BENCHMARKS)
def test_each_benchmarks_command_line_parses(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Importing it starts nothing (the unit tier's guard would say so) and --help prints
    its options: its imports and its parser are whole."""
    module = importlib.import_module(f"bench.{name}")
    monkeypatch.setattr(sys, "argv", [f"bench.{name}", "--help"])
    with pytest.raises(SystemExit) as exited:
        module.main()
    assert exited.value.code == 0
    assert "usage:" in capsys.readouterr().out


def _namespace(**values: Any) -> argparse.Namespace:
    return argparse.Namespace(out=None, json=False, **values)


def test_a_part_that_cannot_run_exits_2_with_its_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def run(_args: argparse.Namespace) -> dict[str, Any]:
        raise CannotMeasure("the peer did not start")

    def report(_result: dict[str, Any]) -> None:
        raise AssertionError("nothing to report")

    assert run_and_emit(run, _namespace(), report) == CANNOT_MEASURE == 2
    assert "cannot measure: the peer did not start" in capsys.readouterr().err


def test_a_target_without_a_value_fails_the_run_after_the_report(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = {"targets": [target("p50 <= 1", None, None), target("errors == 0", 0, True)]}
    printed: list[dict[str, Any]] = []
    assert run_and_emit(lambda _: result, _namespace(), printed.append) == CANNOT_MEASURE
    assert printed == [result]
    assert "no value for p50 <= 1" in capsys.readouterr().err


def test_verdicts_on_data_exit_0_or_1() -> None:
    passed = {"targets": [target("errors == 0", 0, True)]}
    failed = {"targets": [target("errors == 0", 3, False)]}
    assert run_and_emit(lambda _: passed, _namespace(), lambda _: None) == 0
    assert run_and_emit(lambda _: failed, _namespace(), lambda _: None, lambda _: False) == 1


def test_no_samples_is_no_measurement() -> None:
    with pytest.raises(CannotMeasure, match="no samples from locust"):
        report_io.require_samples("locust", [])
    report_io.require_samples("locust", [{"status": 200}])


def test_http_load_without_locust_exits_2_before_starting_anything(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run seen before: a table of None and PASS, exit 0. Now it names the command
    that installs locust and starts no broker, daemon or server (this is a unit test: its
    guard fails it if a process starts)."""
    monkeypatch.setitem(sys.modules, "locust", None)  # import locust raises ImportError
    assert http_load.main(["--seconds", "1", "--levels", "1"]) == CANNOT_MEASURE
    err = capsys.readouterr().err
    assert "locust is not installed" in err and report_io.INSTALL_BENCH in err


def test_http_load_without_ab_exits_2_unless_told_to_skip_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "locust", types.ModuleType("locust"))
    monkeypatch.setenv("PATH", "/nonexistent")
    assert http_load.main(["--seconds", "1", "--levels", "1"]) == CANNOT_MEASURE
    assert "ab is not on PATH: apt-get install apache2-utils" in capsys.readouterr().err


def _level(ttfb_p50: float | None, errors: int = 0) -> dict[str, Any]:
    pcts = {"p50": ttfb_p50, "p95": ttfb_p50, "p99": ttfb_p50}
    return {"ttfb_ms": pcts, "errors": errors, "peak_rss_mb": 100.0}


def test_http_load_judges_only_the_levels_it_ran() -> None:
    ran = {"ours int8": {"1": _level(10.0)}, "piper-http fp32": {"1": _level(40.0)}}
    names = [t["target"] for t in http_load.goals(ran)]
    assert names == ["TTFB for 1 client (p50) <= 0.5 x Piper's", "no errors other than 503"]
    assert all(t["verdict"] == "PASS" for t in http_load.goals(ran))


def test_http_load_with_no_answer_at_a_level_has_no_verdict_there() -> None:
    ran = {"ours int8": {"1": _level(None)}, "piper-http fp32": {"1": _level(40.0)}}
    assert http_load.goals(ran)[0]["verdict"] == "n/a"  # and run_and_emit exits 2 on it


def test_trees_pairs_each_figure_by_round() -> None:
    from bench import trees

    report = {"machine": {"load": 3.0}, "ttfa_ms": {"p50": 100, "n": 4}, "runs": [{"rtf": 0.5}]}
    assert dict(trees._numbers(report)) == {
        "ttfa_ms.p50": 100.0,
        "ttfa_ms.n": 4.0,
        "runs[0].rtf": 0.5,
    }
    before = [{"ttfa_ms.p50": 100.0, "count": 3.0}, {"ttfa_ms.p50": 200.0, "count": 3.0}]
    after = [{"ttfa_ms.p50": 110.0, "count": 3.0}, {"ttfa_ms.p50": 180.0, "count": 3.0}]
    rows = trees._paired(before, after, every=False)
    assert rows == [{"figure": "ttfa_ms.p50", "before": 150.0, "after": 145.0, "ratio": 1.0}]
    # The median of the per-round ratios (1.1 and 0.9), not the ratio of medians.
    assert len(trees._paired(before, after, every=True)) == 2


def test_trees_without_a_benchmark_cannot_measure() -> None:
    from bench import trees

    args = _namespace(before="HEAD", rounds=1, all=False, bench=["--"])
    assert run_and_emit(trees.run, args, trees.report) == CANNOT_MEASURE


def test_engine_profile_names_the_part_of_the_voice_a_node_is_in() -> None:
    from bench.engine_profile import _part

    assert _part("decoder", "/dec/resblocks.7/convs.1/Conv_kernel_time") == (
        "decoder: HiFi-GAN stage 2"
    )
    assert (
        _part("decoder", "/dec/ups.1/ConvTranspose_polyphase/Conv") == "decoder: HiFi-GAN stage 1"
    )
    assert _part("decoder", "/dec/conv_pre/Conv_kernel_time") == "decoder: HiFi-GAN stage 0"
    assert _part("encoder", "/dp/flows.3/Mul_kernel_time") == "encoder: dp"
    assert _part("encoder", "Transpose_token_13_kernel_time") == "encoder: inserted by onnxruntime"


def test_engine_profile_pairs_encoder_thread_counts_turn_by_turn() -> None:
    from bench.engine_profile import _thread_ratios

    # Two runs, three turns; the machine was busy in one thread's second turn only: the
    # median of per-turn ratios keeps that turn out (totals would say 0.48 and 0.72).
    one = [(0.010, 0.010), (0.030, 0.030), (0.010, 0.010)]
    two = [(0.008, 0.012), (0.008, 0.012), (0.008, 0.012)]
    times = {(1, 0): one, (1, 1): one, (2, 0): two, (2, 1): two}
    ratios = _thread_ratios(times, [0, 1], turns=3)
    assert ratios == {
        "runs": 2,
        "one_thread_ms": 10.0,
        "wall_two_over_one": 0.8,
        "cpu_two_over_one": 1.2,
    }
