"""Files shared with other processes: replaced whole (a crash leaves the old or the new
one), and built once under a lock (two runs at once do not build a cache twice)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


def write_text_atomically(path: Path, text: str, durable: bool = False) -> None:
    """Write `text` beside `path` and rename it into place, creating the directory; with
    `durable`, flushed to the disk first (a power cut then keeps the new one too).
    Raises OSError, leaving no temporary file behind."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("w", encoding="utf-8") as file:
            file.write(text)
            if durable:
                file.flush()
                os.fsync(file.fileno())
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def exclusive(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive lock on `lock_file` (created, with its directory) until the block
    ends; another process asking for it waits."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
