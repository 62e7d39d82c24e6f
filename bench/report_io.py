"""What every benchmark script does with its result: write it, then print JSON or a table."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


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
