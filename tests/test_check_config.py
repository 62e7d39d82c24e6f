"""`edge-ttsd check-config` as provisioning runs it: exit status and message."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import REPO, run_cli

pytestmark = pytest.mark.slow  # each test runs the CLI as a subprocess


def test_shipped_configs_are_valid() -> None:
    for name in ("edge-tts.yaml", "edge-tts.example.yaml"):
        result = run_cli("check-config", str(REPO / "config" / name), timeout=60)
        assert result.returncode == 0, result.stderr
        assert "OK" in result.stdout


def test_bad_config_names_key_and_suggests(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("audio:\n  volum: 0.5\nqueue:\n  size: -3\n")
    result = run_cli("check-config", str(bad), timeout=60)
    assert result.returncode == 78
    assert "audio.volum" in result.stderr and "audio.volume" in result.stderr
    assert "queue.size" in result.stderr and "Traceback" not in result.stderr


def test_inline_password_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "secret.yaml"
    bad.write_text("broker:\n  username: pi\n  password: hunter2\n")
    result = run_cli("check-config", str(bad), timeout=60)
    assert result.returncode == 78
    assert "password_file" in result.stderr and "hunter2" not in result.stderr
