"""A small file system the tests can fill up or make read-only (needs root, as CI runs)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def small_tmpfs(path: Path) -> Iterator[Path]:
    """Mount a 1 MB tmpfs at `path` (created) for the duration of a fixture; skip the test
    where mounting is not allowed."""
    path.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(path)]).returncode:
        pytest.skip("cannot mount a tmpfs here (not root?)")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(directory: Path, leave_bytes: int) -> Path:
    """Fill the file system of `directory` until `leave_bytes` are free."""
    filler = directory / "filler"
    free = shutil.disk_usage(directory).free - leave_bytes
    filler.write_bytes(bytes(max(0, free)))
    return filler
