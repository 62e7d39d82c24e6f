"""What a web browser may do with the HTTP door: the Host, Origin, Sec-Fetch-* and
Content-Type rules (docs/http.md, *Browsers*), as pure functions of a request's headers.

A page open in a browser on the device (or anywhere that reaches a LAN-bound door) can
send "simple" requests without a CORS preflight: a POST of text/plain, a form, or
multipart, with no custom header. CORS only hides the answer; the request still runs. So
every request is checked before anything is read or queued:

- `Host` must name this server (DNS rebinding: a page whose name the attacker points at
  127.0.0.1 sends its own name as Host);
- an `Origin` must be the server's own or one of `http.cors_origins`; without one, a
  `Sec-Fetch-Site` of cross-site or same-site is refused for anything but a GET;
- the speech routes take only application/json (a cross-origin page cannot send it
  without a preflight, which only `cors_origins` pass); `/say` also takes plain text from
  a client that is no browser page (a valid token, or neither Origin nor a cross-site
  Sec-Fetch-Site).
"""

from __future__ import annotations

import ipaddress
import socket
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import psutil

from ..config import HttpSettings

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
JSON_TYPE = "application/json"
ADDRESS_REFRESH_S = 5.0  # a Host naming an address the machine may just have been given
_NOT_FROM_A_PAGE = ("", "same-origin", "none")  # Sec-Fetch-Site of a request no page made
_SAFE_METHODS = ("GET", "HEAD")


class Refusal(Exception):
    """The request is refused: `status`, `code` and a message naming the header."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def host_name(host: str) -> str:
    """The name in a Host header or an origin's netloc, without the port, lower-case:
    "[::1]:8380" -> "::1", "Pi.local.:8380" -> "pi.local"."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    name, _, port = host.rpartition(":")
    if name and port.isdigit() and ":" not in name:
        host = name
    return host.rstrip(".")


def _machine_addresses() -> frozenset[str]:
    return frozenset(
        address.address.split("%")[0].lower()
        for addresses in psutil.net_if_addrs().values()
        for address in addresses
        if address.family in (socket.AF_INET, socket.AF_INET6)
    )


@dataclass
class Hosts:
    """The names a client may reach this server by: on a loopback URI (or a unix socket)
    only the loopback names; beyond it also the machine's addresses, its hostname and
    hostname.local; and `allowed_hosts` on either ("*": any)."""

    names: frozenset[str]
    lan: bool  # the machine's addresses too (re-read when a Host names another address)
    anything: bool = False
    addresses: Callable[[], frozenset[str]] = _machine_addresses
    clock: Callable[[], float] = time.monotonic
    _known: frozenset[str] = field(default=frozenset(), init=False)
    _read_at: float | None = field(default=None, init=False)

    @classmethod
    def of(cls, settings: HttpSettings, hostname: str | None = None) -> Hosts:
        names = set(LOOPBACK_NAMES) | set(settings.allowed_hosts)
        lan = not settings.loopback
        if lan:
            own = (hostname or socket.gethostname()).lower()
            names |= {own, f"{own}.local"}
        return cls(frozenset(names), lan, anything="*" in settings.allowed_hosts)

    def allows(self, host: str) -> bool:
        name = host_name(host)
        if self.anything or name in self.names:
            return True
        return self.lan and _is_address(name) and self._is_own_address(name)

    def _is_own_address(self, name: str) -> bool:
        now = self.clock()
        stale = self._read_at is None or now - self._read_at >= ADDRESS_REFRESH_S
        if name not in self._known and stale:
            self._known, self._read_at = self.addresses(), now
        return name in self._known


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def check(
    method: str,
    headers: Mapping[str, str],
    hosts: Hosts,
    cors_origins: Iterable[str],
) -> None:
    """Refusal (403) for a request a browser page must not make; see the module."""
    host = headers.get("Host")
    if host is not None and not hosts.allows(host):
        raise Refusal(
            403,
            "forbidden_host",
            f"Host {host[:100]!r} is not a name of this server; add it to http.allowed_hosts "
            "if clients reach the server by it",
        )
    origin = headers.get("Origin")
    if origin is not None:
        if not _origin_allowed(origin, host, cors_origins):
            raise Refusal(
                403,
                "forbidden_origin",
                f"a request from the web page at {origin[:100]!r} is refused: add the "
                "origin to http.cors_origins to allow it",
            )
    elif _from_another_site(headers) and method not in _SAFE_METHODS:
        raise Refusal(
            403,
            "forbidden_origin",
            "a request from another site's web page is refused (Sec-Fetch-Site: "
            f"{headers.get('Sec-Fetch-Site')})",
        )


def _origin_allowed(origin: str, host: str | None, cors_origins: Iterable[str]) -> bool:
    allowed = tuple(cors_origins)
    if "*" in allowed or origin in allowed:
        return True
    parsed = urllib.parse.urlsplit(origin)
    # The server's own origin: the page was loaded from the name the request is sent to
    # (which passed the Host check above).
    return host is not None and parsed.scheme in ("http", "https") and parsed.netloc == host.lower()


def _from_another_site(headers: Mapping[str, str]) -> bool:
    return headers.get("Sec-Fetch-Site", "").strip().lower() not in _NOT_FROM_A_PAGE


def media_type(headers: Mapping[str, str]) -> str:
    """The Content-Type without its parameters, lower-case; "" when there is none."""
    return headers.get("Content-Type", "").partition(";")[0].strip().lower()


def require_json(headers: Mapping[str, str]) -> None:
    """415 unless the body is declared application/json: the one type a page on another
    origin cannot send without a CORS preflight."""
    given = media_type(headers)
    if given != JSON_TYPE:
        raise Refusal(
            415,
            "unsupported_media_type",
            f"the body must be JSON, sent as Content-Type: {JSON_TYPE} (got "
            f"{given[:60] or 'none'!r})",
        )


def may_send_plain_text(headers: Mapping[str, str], token_checked: bool) -> bool:
    """A body other than JSON is taken only from a client that is not a web page: one
    that sent the token, or one that sent neither an Origin nor a Sec-Fetch-Site of
    another site (curl, scripts, Node-RED)."""
    return token_checked or ("Origin" not in headers and not _from_another_site(headers))
