"""Reading a state file safely (edge_tts/state/read.py) and each state file's checks: a
file that cannot be used is set aside with a warning and its default taken, never raised."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from edge_tts.config import settings_from_mapping
from edge_tts.homeassistant.volume import VolumeStore, parse_volume
from edge_tts.speech.dedupe import MAX_KEY_CHARS, PlayedStore
from edge_tts.state import read as state_file
from edge_tts.voice import builds
from edge_tts.voice import tune_record as record

pytestmark = pytest.mark.unit

DEEP = "[" * 100_000 + "]" * 100_000


def aside(directory: Path, name: str) -> list[Path]:
    return list(directory.glob(f"{name}.corrupt-*"))


def test_read_bounded_refuses_a_file_larger_than_its_bound_unread(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"12345")
    assert state_file.read_bounded(path, 5) == b"12345"
    with pytest.raises(state_file.Unusable, match="6 bytes, more than the 5"):
        path.write_bytes(b"123456")
        state_file.read_bounded(path, 5)


def test_read_bounded_refuses_a_directory_and_a_fifo_without_blocking(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")  # an open for reading would wait for a writer
    with pytest.raises(IsADirectoryError):  # as reading it would: callers may set it aside
        state_file.read_bounded(tmp_path / "dir", 100)
    with pytest.raises(state_file.Unusable, match="not a regular file"):
        state_file.read_bounded(tmp_path / "fifo", 100)
    with pytest.raises(state_file.Unusable, match="Is a directory"):
        state_file.read_json(tmp_path / "dir", 100, lambda value: value)


@pytest.mark.parametrize(
    ("content", "reason"),
    [(DEEP.encode(), "nested too deep"), (b"\xff\xfe[]", "not UTF-8"), (b"{", "not JSON")],
)
def test_load_json_sets_a_bad_file_aside_with_a_warning(
    tmp_path: Path, content: bytes, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "thing.json"
    path.write_bytes(content)
    with caplog.at_level(logging.WARNING):
        assert state_file.load_json(path, 10**6, lambda v: v, "using none") is None
    assert f"Unusable state file {path} ({reason}" in caplog.text and "using none" in caplog.text
    assert not path.exists() and aside(tmp_path, "thing.json")[0].read_bytes() == content


def test_a_missing_file_is_no_problem(tmp_path: Path) -> None:
    assert state_file.load_json(tmp_path / "none.json", 100, lambda v: v, "") is None
    assert state_file.problem(tmp_path / "none.json", 100, lambda v: v) is None


def test_problem_reports_and_moves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "thing.json"
    path.write_text(DEEP)
    assert state_file.problem(path, 10**6, lambda v: v) == "nested too deep"
    assert path.exists() and not aside(tmp_path, "thing.json")


# --- played.json --------------------------------------------------------------------------


@pytest.mark.parametrize("content", [DEEP, '{"a": 1}', '["a", 7]', "7"])
def test_a_bad_played_history_is_set_aside(tmp_path: Path, content: str) -> None:
    path = tmp_path / "played.json"
    path.write_text(content)
    assert len(PlayedStore(path)) == 0
    assert not path.exists() and len(aside(tmp_path, "played.json")) == 1


def test_an_oversized_played_history_is_set_aside_unread(tmp_path: Path) -> None:
    path = tmp_path / "played.json"
    with path.open("wb") as file:
        file.truncate(300 * 2**20)  # sparse
    assert len(PlayedStore(path)) == 0
    assert len(aside(tmp_path, "played.json")) == 1


def test_the_longest_history_the_store_writes_is_read_back(tmp_path: Path) -> None:
    path = tmp_path / "played.json"
    store = PlayedStore(path, capacity=50)
    long_key = "\U0001f600" * MAX_KEY_CHARS  # escaped as 12 bytes a character
    for n in range(60):
        store.add(f"{n}{long_key}"[:MAX_KEY_CHARS])
    store.add("x" * 10_000)  # kept as its digest
    again = PlayedStore(path, capacity=50)
    assert len(again) == 50 and "x" * 10_000 in again and not aside(tmp_path, "played.json")


# --- volume.json --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [DEEP, '{"volume": true, "configured": 1}', '{"volume": 1e999, "configured": 1}', "[]"],
)
def test_a_bad_saved_volume_is_set_aside(tmp_path: Path, content: str) -> None:
    path = tmp_path / "volume.json"
    path.write_text(content)
    assert VolumeStore(path, 0.9).load() == 0.9
    assert not path.exists() and len(aside(tmp_path, "volume.json")) == 1


def test_minus_zero_is_zero() -> None:
    assert str(parse_volume(b"-0")) == "0.0" and f"{parse_volume(b'-0.0'):g}" == "0"


def test_a_saved_minus_zero_is_zero(tmp_path: Path) -> None:
    path = tmp_path / "volume.json"
    path.write_text(json.dumps({"volume": -0.0, "configured": 1.0}))
    assert f"{VolumeStore(path, 1.0).load():g}" == "0"


# --- tune.json ----------------------------------------------------------------------------

BAD_RECORDS = {
    "voices-list": {"format": 1, "machine": {}, "voices": ["default"]},
    "voices-string": {"format": 1, "machine": {}, "voices": "default"},
    "machine-list": {"format": 1, "machine": [], "voices": {"default": {}}},
    "chosen-number": {"format": 1, "machine": {}, "voices": {"default": {"chosen": 7}}},
}


@pytest.mark.parametrize("bad", BAD_RECORDS.values(), ids=BAD_RECORDS.keys())
def test_a_bad_tuning_record_is_set_aside_and_the_configured_build_loaded(
    tmp_path: Path, bad: dict[str, object]
) -> None:
    settings = settings_from_mapping({"state_dir": str(tmp_path)})
    path = record.record_path(settings)
    path.write_text(json.dumps(bad))
    assert record.problem(path) is not None
    assert builds.choices(settings, set_aside=False)["default"].chosen_by == "config"
    assert path.exists(), "check-config's reading moved it"
    assert builds.choices(settings)["default"].chosen_by == "config"
    assert not path.exists() and len(aside(tmp_path, "tune.json")) == 1
