"""Reading the files the daemon keeps in its state directory (played.json, volume.json,
tune.json) and its cache entries: bounded in size before anything is read.

A state file that cannot be used (too large, not a regular file, unreadable, not UTF-8,
not JSON, nested too deep, or not the shape its caller expects) is set aside as
`<name>.corrupt-<time>` with a warning, and the caller starts from its default: one bad
file must not stop the daemon at every start (systemd gives up after a few).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

_LOGGER = logging.getLogger(__name__)

T = TypeVar("T")


class Unusable(ValueError):
    """The file cannot be used; the message says why. Also what a caller's check raises."""


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of regular file `path`, never more than `limit` read; Unusable when it is
    larger or not a regular file (a FIFO would block the open, a directory the read);
    OSError as the system says (FileNotFoundError when absent)."""
    # O_NONBLOCK: opening a FIFO does not wait for a writer; no effect on a regular file.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):  # as reading it would say
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(info.st_mode):
            raise Unusable("not a regular file")
        if info.st_size > limit:
            raise Unusable(f"{info.st_size} bytes, more than the {limit} it can be")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as file:
        data = file.read(limit + 1)  # it may have grown since the stat
    if len(data) > limit:
        raise Unusable(f"more than the {limit} bytes it can be")
    return data


def read_json(path: Path, limit: int, check: Callable[[object], T]) -> T | None:
    """`check(the JSON in path)`, None when there is no file; Unusable with the reason
    when it cannot be used. `check` raises Unusable (a ValueError) on a wrong shape."""
    try:
        data = read_bounded(path, limit)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise Unusable(err.strerror or str(err)) from None
    try:
        value = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise Unusable("nested too deep") from None
    except UnicodeDecodeError:
        raise Unusable("not UTF-8") from None
    except ValueError as err:
        raise Unusable(f"not JSON: {err}") from None
    return check(value)


def load_json(path: Path, limit: int, check: Callable[[object], T], instead: str) -> T | None:
    """As read_json, but a file that cannot be used is set aside with a warning saying
    what the caller does `instead`, and None returned."""
    try:
        return read_json(path, limit, check)
    except Unusable as err:
        _LOGGER.warning("Unusable state file %s (%s): %s; %s", path, err, set_aside(path), instead)
        return None


def problem(path: Path, limit: int, check: Callable[[object], object]) -> str | None:
    """Why read_json would refuse `path` (for check-config, which moves nothing)."""
    try:
        read_json(path, limit, check)
    except Unusable as err:
        return str(err)
    return None


def set_aside(path: Path) -> str:
    """Rename `path` out of the way (kept for a post-mortem); says where, or why not."""
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}")
    try:
        os.replace(path, aside)
    except OSError as err:
        return f"cannot set it aside ({err.strerror or err})"
    return f"set aside as {aside.name}"
