"""How every benchmark reports: progress on stderr; the result written as JSON (`--out
FILE`), printed as JSON (`--json`) or printed as Markdown tables, the form
docs/benchmarks.md quotes. Also what the reports share: percentiles, verdicts against
targets, the machine a run had."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

MB = 1e6  # every benchmark's megabyte: 10^6 bytes

Result = dict[str, Any]

# The one command that installs what the benchmarks need beyond the tests' set-up.
INSTALL_BENCH = ".venv/bin/pip install -e '.[bench]'"
CANNOT_MEASURE = 2  # main()'s exit status when a part could not run: no verdict at all


class CannotMeasure(Exception):
    """A part the benchmark measures could not run (a missing tool, a peer that did not
    start, no samples): the run stops without a verdict and main() exits 2."""


def require_module(name: str) -> None:
    """The Python module `name` (a bench extra's) is importable, or CannotMeasure."""
    try:
        importlib.import_module(name)
    except ImportError as err:
        raise CannotMeasure(f"{name} is not installed ({err}): {INSTALL_BENCH}") from err


def require_command(name: str, package: str) -> None:
    """The program `name` is on PATH, or CannotMeasure naming its Debian package."""
    if shutil.which(name) is None:
        raise CannotMeasure(f"{name} is not on PATH: apt-get install {package}")


def require_samples(what: str, samples: Sequence[object]) -> None:
    """A measurement that produced nothing is no measurement."""
    if not samples:
        raise CannotMeasure(f"no samples from {what}")


def log(message: str) -> None:
    """Progress, on stderr: stdout is the report's."""
    print(message, file=sys.stderr, flush=True)


# --- the command line and main()'s tail ----------------------------------------------------


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """`--out FILE` (also spelled `--json-out`) and `--json`: what `emit` is given."""
    parser.add_argument(
        "--out",
        "--json-out",
        dest="out",
        type=Path,
        metavar="FILE",
        help="also write the results as JSON here",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of the tables")


def emit(
    result: Result, json_out: Path | None, as_json: bool, print_report: Callable[[Result], None]
) -> None:
    if json_out:
        json_out.write_text(json.dumps(result, indent=2) + "\n")
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)


def stop_on_signals() -> None:
    """SIGTERM and SIGINT raise KeyboardInterrupt, so the `finally` that stops what a run
    started (daemons, brokers, workers) runs: a background job starts with SIGINT ignored,
    and SIGTERM would kill the script and leave them running."""

    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, interrupt)


def run_and_emit(
    run: Callable[[argparse.Namespace], Result],
    args: argparse.Namespace,
    print_report: Callable[[Result], None],
    passed: Callable[[Result], bool] = lambda _: True,
) -> int:
    """`run(args)` stoppable by SIGTERM and SIGINT, its result written and printed as
    add_output_options chose; main()'s exit status: 1 where `passed` says it failed, 2
    (CANNOT_MEASURE) where a part could not run or a target has no value to judge."""
    stop_on_signals()
    try:
        result = run(args)
    except CannotMeasure as err:
        log(f"cannot measure: {err}")
        return CANNOT_MEASURE
    emit(result, args.out, args.json, print_report)
    unjudged = [t["target"] for t in result.get("targets", []) if t["verdict"] == "n/a"]
    if unjudged:
        log(f"cannot measure: no value for {'; '.join(unjudged)}")
        return CANNOT_MEASURE
    return 0 if passed(result) else 1


# --- summaries -----------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default); NaN for none."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def stats(values: Sequence[float | None]) -> dict[str, Any]:
    """n, p50, p95, p99 and max of the values that are not None, to 0.1."""
    clean = [v for v in values if v is not None]
    out: dict[str, Any] = {"n": len(clean)}
    for q in (50, 95, 99):
        out[f"p{q}"] = round(percentile(clean, q), 1) if clean else None
    out["max"] = round(max(clean), 1) if clean else None
    return out


def target(name: str, value: Any, ok: bool | None, failed: str = "MISS") -> dict[str, Any]:
    """A target's row: PASS, `failed` (MISS for a goal, FAIL for a check), or n/a when
    there is nothing to judge."""
    verdict = "n/a" if ok is None else ("PASS" if ok else failed)
    return {"target": name, "value": value, "verdict": verdict}


def machine_info(load_before: Sequence[float]) -> dict[str, Any]:
    """What a result depends on besides the code: CPU, versions, the load around the run."""
    import numpy
    import onnxruntime

    model = platform.machine()
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    for line in lscpu.splitlines():
        if line.startswith("Model name:"):
            model = line.split(":", 1)[1].strip()
    flags = Path("/proc/cpuinfo").read_text().split()
    return {
        "cpu": model,
        "cpus": os.cpu_count(),
        "avx512_vnni": "avx512_vnni" in flags,  # onnxruntime's fast INT8 kernels need it
        "python": platform.python_version(),
        "onnxruntime": onnxruntime.__version__,
        "numpy": numpy.__version__,
        "loadavg_start": [round(x, 2) for x in load_before],
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
    }


# --- printing ------------------------------------------------------------------------------


def fmt(value: Any, spec: str | None = None) -> str:
    """A cell: '-' for None, `spec` for a number when given; else a float to four
    significant digits (whole above 1000), a list joined with commas."""
    if value is None:
        return "-"
    if isinstance(value, bool | str):
        return str(value)
    if spec is not None:
        return format(value, spec)
    if isinstance(value, float):
        return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    if isinstance(value, list | tuple):
        return ", ".join(fmt(v) for v in value)
    return str(value)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], title: str = "") -> None:
    """A Markdown table (cells through `fmt`, numeric columns right-aligned), padded to
    read in a terminal too; `title` as a line before it."""
    cells = [[fmt(v).replace("|", "\\|") for v in row] for row in rows]  # a pipe ends a cell
    if title:
        print(title)
    if not cells:
        print("(none)\n")
        return
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    numeric = [all(_numeric(r[i]) for r in cells) for i in range(len(headers))]

    def line(items: Sequence[str]) -> str:
        padded = (
            s.rjust(w) if right else s.ljust(w)
            for s, w, right in zip(items, widths, numeric, strict=True)
        )
        return "| " + " | ".join(padded) + " |"

    rule = (
        "-" * (w + 1) + (":" if right else "-") for w, right in zip(widths, numeric, strict=True)
    )
    print(line(headers))
    print("|" + "|".join(rule) + "|")
    for row in cells:
        print(line(row))
    print()


def _numeric(cell: str) -> bool:
    try:
        float(cell.replace(",", "").rstrip("x%"))
    except ValueError:
        return cell in ("-", "")
    return True


def fields(title: str, items: Mapping[str, Any]) -> None:
    """Named values as a two-column table."""
    table(("", title), list(items.items()))


def print_targets(targets: Sequence[Mapping[str, Any]]) -> None:
    """The targets' verdicts as a table (none: nothing printed)."""
    if not targets:
        return
    table(
        ("verdict", "target", "value"), [(t["verdict"], t["target"], t["value"]) for t in targets]
    )


def machine_line(m: Mapping[str, Any]) -> str:
    """machine_info's result in one line, for a report's heading."""
    return (
        f"machine: {m['cpu']}, {m['cpus']} CPUs, AVX512-VNNI {m['avx512_vnni']}, Python "
        f"{m['python']}, onnxruntime {m['onnxruntime']}, numpy {m['numpy']}; load average "
        f"{m['loadavg_start'][0]} -> {m['loadavg_end'][0]}"
    )
