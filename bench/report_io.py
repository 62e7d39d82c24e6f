"""What every benchmark script does with its result: write it, then print JSON or a table;
and the command-line options that choose which (`--out FILE`, `--json`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def add_output_options(parser: argparse.ArgumentParser, out: str = "--out") -> None:
    """`--out FILE` (or the script's own name for it, `out`, read as args.out) and
    `--json`: what `emit` is given."""
    parser.add_argument(
        out, dest="out", type=Path, metavar="FILE", help="write the results as JSON here"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")


def emit(
    result: dict[str, Any],
    json_out: Path | None,
    as_json: bool,
    print_table: Callable[[dict[str, Any]], None],
) -> None:
    if json_out:
        json_out.write_text(json.dumps(result, indent=2) + "\n")
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
