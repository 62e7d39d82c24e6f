"""Files in the state directory, replaced whole: a crash leaves the old or the new one."""

from __future__ import annotations

import contextlib
import os
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
