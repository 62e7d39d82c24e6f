"""A client of the daemon's HTTP server for the tests: the standard library's http.client,
the official `openai` client, and raw sockets for the requests no client would send."""

from __future__ import annotations

import http.client
import json
import socket
from dataclasses import dataclass
from typing import Any

import openai
import psutil

from .daemon_proc import DaemonProcess

WAIT_S = 120.0  # for an answer of the daemon on a busy machine


@dataclass
class Http:
    daemon: DaemonProcess
    port: int
    token: str | None = None

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, http.client.HTTPMessage, bytes]:
        """One request with the standard library's client; (status, headers, body)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT_S)
        sent = dict(headers or {})
        if self.token and "Authorization" not in sent:
            sent["Authorization"] = f"Bearer {self.token}"
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        if isinstance(body, dict):
            sent["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=data, headers=sent)
            response = conn.getresponse()
            return response.status, response.headers, response.read()
        finally:
            conn.close()

    def json(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        status, _, data = self.request(method, path, body)
        return status, json.loads(data)

    def openai(self) -> openai.OpenAI:
        return openai.OpenAI(
            base_url=f"http://127.0.0.1:{self.port}/v1",
            api_key=self.token or "unused",
            max_retries=0,
            timeout=WAIT_S,
        )

    def connections(self) -> int:
        """The daemon's TCP connections from HTTP clients (not its listening socket)."""
        assert self.daemon.proc is not None
        own = psutil.Process(self.daemon.proc.pid).net_connections("tcp")
        return sum(1 for c in own if c.laddr and c.laddr.port == self.port and c.raddr)


def raw(port: int, data: bytes) -> bytes:
    """What the server answers to `data` sent as is, until it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        sock.sendall(data)
        return read_to_end(sock)


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.") else 0


def read_to_end(sock: socket.socket) -> bytes:
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    return got
