"""One benchmark on two source trees of this repository, interleaved: is a restructure
within noise? (issue 32: "measure before and after in one interleaved run").

    .venv/bin/python -m bench.trees --before REV [--rounds 3] -- engine --quick
    .venv/bin/python -m bench.trees --before REV -- daemon_e2e --quick

`REV` is checked out into a temporary worktree; the current tree is "after". Each round
runs `python -m bench.NAME ARGS --out FILE` once in each tree, in ABBA order (so a drift
in the machine's load falls on both alike), each tree's own code on its own PYTHONPATH
with this venv. Every numeric figure both reports give is then paired by round: the
table shows each figure's median before and after, and the median of the per-round
ratios after/before (the paired median, robust to one noisy round). Only summary figures
whose name says they are a time, a rate or a size are shown (`--all`: every one, each
item of a list too).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.report_io import (
    CannotMeasure,
    add_output_options,
    log,
    machine_info,
    run_and_emit,
    table,
)

ROOT = Path(__file__).resolve().parent.parent
# Figures that are measurements, by their key: times, rates, sizes, CPU.
# A list item known only by its index is one sample (a sentence, a round); a named one
# (a table row with text fields) is a figure of its own.
SAMPLE = re.compile(r"\[\d+\]")
MEASURED = re.compile(r"ttfa|rtf|_ms|_s$|seconds|p50|p95|p99|median|per_s|rps|rss|cpu|mb", re.I)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the git revision to compare with")
    parser.add_argument("--rounds", type=int, default=3, help="runs per tree (default 3)")
    parser.add_argument("--all", action="store_true", help="every numeric figure")
    add_output_options(parser)
    parser.add_argument("bench", nargs=argparse.REMAINDER, help="-- NAME [its arguments]")
    return run_and_emit(run, parser.parse_args(argv), report)


def run(args: argparse.Namespace) -> dict[str, Any]:
    command = [a for a in args.bench if a != "--"]
    if not command:
        raise CannotMeasure("no benchmark named: -- NAME [ARGS]")
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-trees-") as work:
        before = _worktree(args.before, Path(work) / "before")
        try:
            runs = _interleaved(command, {"before": before, "after": ROOT}, args.rounds, Path(work))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)])
    return {
        "machine": machine_info(load),
        "bench": command,
        "before": args.before,
        "after": _revision(ROOT),
        "rounds": args.rounds,
        "figures": _paired(runs["before"], runs["after"], every=args.all),
    }


def _worktree(revision: str, path: Path) -> Path:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), revision],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise CannotMeasure(f"cannot check out {revision}: {done.stderr.strip()}")
    return path


def _revision(tree: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(tree), "describe", "--always", "--dirty"], capture_output=True, text=True
    )
    return done.stdout.strip()


def _interleaved(
    command: list[str], trees: Mapping[str, Path], rounds: int, work: Path
) -> dict[str, list[dict[str, float]]]:
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    names = list(trees)
    for number in range(rounds):
        order = names if number % 2 == 0 else names[::-1]  # ABBA
        for name in order:
            out = work / f"{name}-{number}.json"
            log(f"round {number + 1}/{rounds}: {name} ({trees[name]})")
            _run_one(command, trees[name], out)
            runs[name].append(dict(_numbers(json.loads(out.read_text()))))
    return runs


def _run_one(command: list[str], tree: Path, out: Path) -> None:
    name, *rest = command
    env = {**os.environ, "PYTHONPATH": str(tree)}
    argv = [sys.executable, "-m", f"bench.{name}", *rest, "--out", str(out)]
    done = subprocess.run(argv, cwd=tree, env=env, stdout=subprocess.DEVNULL)
    # 1 is a missed target: the figures are still figures. 2 and others: no figures.
    if done.returncode not in (0, 1) or not out.exists():
        raise CannotMeasure(f"bench.{name} in {tree} exited {done.returncode}")


def _numbers(value: Any, path: str = "") -> Iterator[tuple[str, float]]:
    """Every numeric leaf of a report, by its dotted path (list items by index)."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        yield path, float(value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if key != "machine":
                yield from _numbers(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _numbers(item, f"{path}[{_label(item) or index}]")


def _label(item: Any) -> str:
    """A table row's name: its text fields ("ours (INT8), stream, long"), if it has any."""
    if not isinstance(item, Mapping):
        return ""
    return ", ".join(value for value in item.values() if isinstance(value, str))


def _paired(
    before: list[dict[str, float]], after: list[dict[str, float]], *, every: bool
) -> list[dict[str, Any]]:
    keys = [k for k in before[0] if all(k in run for run in (*before, *after))]
    rows = []
    for key in keys:
        if not (every or (MEASURED.search(key) and not SAMPLE.search(key))):
            continue  # not a measurement, or one sample of a list (its summary is shown)
        pairs = [(b[key], a[key]) for b, a in zip(before, after, strict=True)]
        ratios = [a / b for b, a in pairs if b]
        rows.append(
            {
                "figure": key,
                "before": statistics.median(b for b, _ in pairs),
                "after": statistics.median(a for _, a in pairs),
                "ratio": statistics.median(ratios) if ratios else None,
            }
        )
    return rows


def report(result: Mapping[str, Any]) -> None:
    command = " ".join(result["bench"])
    print(
        f"`bench.{command}`: {result['before']} (before) vs {result['after']} (after), "
        f"{result['rounds']} rounds ABBA\n"
    )
    rows = [(r["figure"], r["before"], r["after"], r["ratio"]) for r in result["figures"]]
    table(["figure", "before (median)", "after (median)", "after/before (paired median)"], rows)


if __name__ == "__main__":
    sys.exit(main())
