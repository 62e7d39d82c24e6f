"""Logging setup: stderr format, journald detection, idempotence."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from edge_tts.daemon import logs

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _restore_root_logger(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("JOURNAL_STREAM", "INVOCATION_ID"):
        monkeypatch.delenv(name, raising=False)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in root.handlers:
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)


def _ours() -> list[logging.Handler]:
    return [h for h in logging.getLogger().handlers if getattr(h, logs._OURS, False)]


def test_stderr_lines_carry_level_thread_and_logger(capsys: pytest.CaptureFixture[str]) -> None:
    logs.setup_logging("info")

    def speak() -> None:
        logging.getLogger("edge_tts.audio.alsa").info("underrun recovered")

    worker = threading.Thread(target=speak, name="player")
    worker.start()
    worker.join(timeout=5)
    logging.getLogger("edge_tts.x").debug("hidden at info level")

    err = capsys.readouterr().err
    assert " INFO [player] edge_tts.audio.alsa: underrun recovered" in err
    assert "hidden" not in err


def test_calling_twice_keeps_one_handler(capsys: pytest.CaptureFixture[str]) -> None:
    logs.setup_logging("INFO")
    logs.setup_logging("DEBUG")
    assert len(_ours()) == 1
    assert logging.getLogger().level == logging.DEBUG
    logging.getLogger("edge_tts.t").debug("once")
    assert capsys.readouterr().err.count("once") == 1


def test_unknown_level_fails_loudly() -> None:
    with pytest.raises(ValueError):
        logs.setup_logging("chatty")


def test_journald_needs_its_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "JOURNAL_SOCKET", tmp_path / "absent")
    assert not logs.under_journald({"INVOCATION_ID": "abc"})


def test_journald_detection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    socket_file = tmp_path / "socket"
    socket_file.touch()
    monkeypatch.setattr(logs, "JOURNAL_SOCKET", socket_file)
    with (tmp_path / "stream").open("w") as stream:
        st = os.fstat(stream.fileno())
        assert logs.under_journald({"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}, stream)
        assert not logs.under_journald({"JOURNAL_STREAM": f"{st.st_dev}:1"}, stream)
    assert logs.under_journald({"INVOCATION_ID": "0123abcd"})
    assert not logs.under_journald({})


class _FakeJournalHandler(logging.Handler):
    def __init__(self, **fields: str) -> None:
        super().__init__()
        self.fields = fields
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_journal_handler_under_systemd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_module = type(sys)("systemd.journal")
    fake_module.JournalHandler = _FakeJournalHandler  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "systemd.journal", fake_module)
    monkeypatch.setattr(logs, "under_journald", lambda: True)

    logs.setup_logging("info")
    logs.setup_logging("info")

    (handler,) = _ours()
    assert isinstance(handler, _FakeJournalHandler)
    assert handler.fields == {"SYSLOG_IDENTIFIER": "edge-ttsd"}
    logging.getLogger("edge_tts.daemon.app").warning("hello")
    assert handler.format(handler.records[-1]) == "[MainThread] edge_tts.daemon.app: hello"


def test_falls_back_to_stderr_without_systemd_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "systemd.journal", None)  # makes the import fail
    monkeypatch.setattr(logs, "under_journald", lambda: True)
    logs.setup_logging("info")
    (handler,) = _ours()
    assert isinstance(handler, logging.StreamHandler)
    assert handler.formatter is not None
    assert handler.formatter._fmt == logs.STDERR_FORMAT


def test_real_journal_handler_is_configured() -> None:
    journal = pytest.importorskip("systemd.journal")
    handler = logs._journal_handler()
    assert isinstance(handler, journal.JournalHandler)
    assert handler._extra["SYSLOG_IDENTIFIER"] == "edge-ttsd"
