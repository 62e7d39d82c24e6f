"""`edge-ttsd check-config` as provisioning runs it: exit status and message."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import REPO, run_cli

pytestmark = pytest.mark.daemon  # each test runs the CLI as a subprocess


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


def test_the_http_section_and_its_token(tmp_path: Path) -> None:
    lan = tmp_path / "lan.yaml"
    lan.write_text('http:\n  uri: "tcp://0.0.0.0:8380"\n')
    result = run_cli("check-config", str(lan), env={"CREDENTIALS_DIRECTORY": ""}, timeout=60)
    # Not a failure: the unit's credential is visible to the daemon only.
    assert result.returncode == 0 and "bearer token" in result.stderr, result.stderr
    short = tmp_path / "short-token"
    short.write_text("abc")
    lan.write_text(f'http:\n  uri: "tcp://0.0.0.0:8380"\n  token_file: "{short}"\n')
    result = run_cli("check-config", str(lan), timeout=60)
    assert result.returncode == 78 and "at least 16" in result.stderr
    lan.write_text('http:\n  uri: "http://0.0.0.0:8380"\n')
    result = run_cli("check-config", str(lan), timeout=60)
    assert result.returncode == 78 and "http.uri" in result.stderr
