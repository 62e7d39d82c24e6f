"""The settings of the servers other programs connect to: Wyoming and HTTP (their
sections of the schema, as sections.py describes)."""

from __future__ import annotations

import ipaddress
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from .checks import FILE, Checked, ConfigError, Invalid, between, setting
from .credentials import HTTP_TOKEN_CREDENTIAL, MIN_TOKEN_CHARS, credential


def _server_uri(value: str) -> str:
    parsed = urllib.parse.urlparse(value)
    if parsed.scheme == "unix" and parsed.path:
        return value
    try:
        port = parsed.port
    except ValueError:
        port = None
    if parsed.scheme == "tcp" and parsed.hostname and port is not None:
        return value
    raise Invalid(f'must be "tcp://HOST:PORT" or "unix:///PATH", got {value!r}')


@dataclass(frozen=True)
class WyomingSettings(Checked):
    """The Wyoming TTS server for Home Assistant Assist (edge_tts/wyoming/)."""

    uri: str | None = setting(None, _server_uri)  # None: off; tcp://0.0.0.0:10200 is usual
    max_clients: int = setting(4, between(1, 64))  # connections at once; more are refused
    idle_timeout: float = setting(60.0, between(1, 3600))  # seconds without a client event


def _origin(value: str) -> str:
    parsed = urllib.parse.urlparse(value)
    if value == "*" or (parsed.scheme in ("http", "https") and parsed.netloc and not parsed.path):
        return value
    raise Invalid(f'must be "*" or an origin such as "https://host:8123", got {value!r}')


def _host_name(value: str) -> str:
    name = value.strip().lower().rstrip(".")
    if value == "*" or (name and all(c.isalnum() or c in "-.:[]" for c in name)):
        return name
    raise Invalid(f'must be "*" or a host name or address such as "tts.example.lan", got {value!r}')


@dataclass(frozen=True)
class HttpSettings(Checked):
    """The HTTP server (edge_tts/http/): OpenAI- and Piper-compatible speech, /invoke and
    /download, /say, /health and /metrics. Beyond loopback it needs a bearer token."""

    uri: str | None = setting(None, _server_uri)  # None: off; tcp://127.0.0.1:8380 is usual
    token_file: Path | None = field(default=None, metadata=FILE)  # else the credential
    max_connections: int = setting(32, between(1, 1024))  # at once; more get a 503
    # Of those, one client address (an IPv6 /64) may hold this many: one cannot lock out all.
    max_connections_per_client: int = setting(8, between(1, 1024))
    # A request's headers must arrive within this (an idle connection is closed after it).
    header_timeout: float = setting(5.0, between(0.5, 600))
    # A request's body must arrive within this.
    read_timeout: float = setting(10.0, between(0.5, 600))
    # A client that takes none of its audio for this long is dropped.
    write_timeout: float = setting(30.0, between(1, 3600))
    # /invoke's audio waits in memory until /download takes it, or it expires.
    pool_entries: int = setting(64, between(1, 10_000))
    pool_mb: float = setting(32.0, between(1, 4096))  # MiB of WAV at most
    pool_ttl: float = setting(60.0, between(1, 86_400))  # seconds
    # Origins a browser may call from (CORS); none unless listed.
    cors_origins: tuple[str, ...] = setting((), lambda values: tuple(map(_origin, values)))
    # Host names clients may use beyond the machine's own (DNS rebinding); "*": any.
    allowed_hosts: tuple[str, ...] = setting((), lambda values: tuple(map(_host_name, values)))

    @property
    def loopback(self) -> bool:
        """Only this machine can connect: a loopback address, or a unix socket."""
        if self.uri is None:
            return True
        parsed = urllib.parse.urlparse(self.uri)
        if parsed.scheme == "unix":
            return True
        host = parsed.hostname or ""
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:  # a host name: it may resolve to anything
            return False

    def token_source(self) -> Path | None:
        """Where the bearer token is: `token_file`, else the systemd credential."""
        return self.token_file or credential(HTTP_TOKEN_CREDENTIAL)

    def token(self) -> str | None:
        """The bearer token clients must send, or None when none is given (an empty file
        is none: the deployment always installs the credential, empty without a token)."""
        source = self.token_source()
        if source is None:
            return None
        key = "http.token_file" if self.token_file else None
        try:
            token = source.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeError) as err:
            reason = err.strerror if isinstance(err, OSError) else "not UTF-8 text"
            raise ConfigError(f"cannot read the HTTP token from {source}: {reason}", key) from err
        if not token:
            return None
        if len(token) < MIN_TOKEN_CHARS:
            raise ConfigError(
                f"the HTTP token in {source} is {len(token)} characters; at least "
                f"{MIN_TOKEN_CHARS} are needed (e.g. `openssl rand -hex 32`)",
                key,
            )
        return token
