"""Fresh processes for what must be measured alone (peak RSS, a load from cold): a
benchmark runs itself again as `python -m bench.NAME --worker ...` from the repository
root, and the worker answers in JSON lines on stdout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def argv(module: str, *args: str) -> list[str]:
    """The command line of `python -m module args` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def run(module: str, *args: str) -> dict[str, Any]:
    """Run a worker to its end; its last line of output, parsed (CalledProcessError with
    its stderr when it fails)."""
    done = subprocess.run(argv(module, *args), capture_output=True, text=True, check=True, cwd=REPO)
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def reply(**fields: Any) -> None:
    """A worker's answer: one JSON line."""
    print(json.dumps(fields), flush=True)
