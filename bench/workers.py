"""Fresh processes for what must be measured alone (peak RSS, a load from cold): a
benchmark runs itself again as `python -m bench.NAME --worker ...` from the repository
root, and the worker answers in JSON lines on stdout: to the end of its run (`run`), or
one line per command it reads on stdin (`Gated`)."""

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


class Gated:
    """A worker that does something only when told to, then answers: one JSON line of
    command on its stdin, one JSON line of answer on its stdout (`{"error": ...}` raises).
    Its first line, read at start, is `ready`."""

    def __init__(self, name: str, module: str, *args: str) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            argv(module, *args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO
        )
        self.ready = self._read()

    def ask(self, **command: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait(30)
            raise RuntimeError(f"{self.name} worker died (exit {code})")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"{self.name} worker: {answer['error']}")
        return answer

    def quit(self) -> dict[str, Any]:
        answer = self.ask(cmd="quit")
        self.proc.wait(30)
        return answer

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
