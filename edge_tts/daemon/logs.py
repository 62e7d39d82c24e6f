"""Logging: structured journald entries under systemd, plain stderr lines everywhere else."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

SYSLOG_IDENTIFIER = "edge-ttsd"
STDERR_FORMAT = "%(asctime)s %(levelname)s [%(threadName)s] %(name)s: %(message)s"
# journald stamps time, level (PRIORITY) and THREAD_NAME itself; the thread stays in the text
# too because plain `journalctl -u` shows only MESSAGE.
JOURNAL_FORMAT = "[%(threadName)s] %(name)s: %(message)s"
JOURNAL_SOCKET = Path("/run/systemd/journal/socket")

# Marks the handler we installed, so a second call replaces it instead of adding another.
_OURS = "_edge_tts_handler"


def under_journald(environ: Mapping[str, str] | None = None, stream: TextIO | None = None) -> bool:
    """True when systemd connected our stderr to the journal, or started us as a unit."""
    env = os.environ if environ is None else environ
    if not JOURNAL_SOCKET.exists():
        return False  # INVOCATION_ID leaks into containers and su sessions without a journal
    return _stderr_is_journal(env.get("JOURNAL_STREAM", ""), stream) or bool(
        env.get("INVOCATION_ID")
    )


def _stderr_is_journal(journal_stream: str, stream: TextIO | None) -> bool:
    # JOURNAL_STREAM is inherited by children whose stderr was redirected; compare dev:inode.
    if not journal_stream:
        return False
    try:
        st = os.fstat((stream or sys.stderr).fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return journal_stream == f"{st.st_dev}:{st.st_ino}"


def setup_logging(level: str) -> None:
    """Configure the root logger once; calling again swaps the handler and level, never adds."""
    root = logging.getLogger()
    root.setLevel(level.upper())
    for handler in [h for h in root.handlers if getattr(h, _OURS, False)]:
        root.removeHandler(handler)
        handler.close()
    new = (_journal_handler() if under_journald() else None) or _stderr_handler()
    setattr(new, _OURS, True)
    root.addHandler(new)
    # paho logs every packet at DEBUG: useful only when debugging the link itself.
    logging.getLogger("paho").setLevel(max(root.level, logging.INFO))


def _stderr_handler() -> logging.Handler:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(STDERR_FORMAT))
    return handler


def _journal_handler() -> logging.Handler | None:
    try:
        from systemd.journal import JournalHandler
    except ImportError:
        return None  # systemd-python is optional: stderr still reaches the journal, unstructured
    handler: logging.Handler = JournalHandler(SYSLOG_IDENTIFIER=SYSLOG_IDENTIFIER)
    handler.setFormatter(logging.Formatter(JOURNAL_FORMAT))
    return handler
