"""State files replaced whole."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from edge_tts.state.atomic import write_text_atomically

pytestmark = pytest.mark.unit


def test_writes_and_replaces_creating_the_directory(tmp_path: Path) -> None:
    path = tmp_path / "state" / "volume.json"
    write_text_atomically(path, "old")
    write_text_atomically(path, "new", durable=True)
    assert path.read_text() == "new"
    assert os.listdir(path.parent) == ["volume.json"]


def test_a_failed_write_raises_and_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "played.json"
    path.write_text("old")
    (tmp_path / "played.json.tmp").mkdir()  # the temporary cannot be opened for writing
    with pytest.raises(OSError):
        write_text_atomically(path, "new")
    assert path.read_text() == "old"
