"""Secrets the daemon reads from files: systemd's credentials (LoadCredential=) by name."""

from __future__ import annotations

import os
from pathlib import Path

PASSWORD_CREDENTIAL = "mqtt-password"  # systemd LoadCredential= name of the broker password
HTTP_TOKEN_CREDENTIAL = "http-token"  # systemd LoadCredential= name of the HTTP bearer token
MIN_TOKEN_CHARS = 16  # a shorter bearer token is guessable


def credential(name: str) -> Path | None:
    """The systemd credential `name` ($CREDENTIALS_DIRECTORY/name), when the unit has one."""
    directory = os.environ.get("CREDENTIALS_DIRECTORY")
    if not directory:
        return None
    path = Path(directory) / name
    return path if path.exists() else None
