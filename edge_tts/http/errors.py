"""Every error the HTTP server answers: JSON in OpenAI's shape, never a traceback.

`{"error": {"message", "type", "code", "param"}}` is what the official `openai` client
reads into its APIStatusError; the other routes answer the same shape, so a client has
one to parse. Every error is counted in telemetry and logged with the client's address.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from aiohttp import web

_LOGGER = logging.getLogger("edge_tts.http")

_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error"}


class ApiError(Exception):
    """An answer other than success: `status`, a machine-readable `code` and a `message`
    a person can act on; `param` names the field at fault."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        param: str | None = None,
        headers: Mapping[str, str] | None = None,
        close: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.param = param
        self.headers = dict(headers or {})
        self.close = close  # the connection cannot serve another request after this one


def bad_request(message: str, param: str | None = None, code: str = "invalid_value") -> ApiError:
    return ApiError(400, code, message, param=param)


def error_body(status: int, code: str, message: str, param: str | None = None) -> bytes:
    kind = _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    error = {"message": message, "type": kind, "code": code, "param": param}
    return json.dumps({"error": error}).encode()


def error_response(err: ApiError) -> web.Response:
    response = web.Response(
        status=err.status,
        body=error_body(err.status, err.code, err.message, err.param),
        content_type="application/json",
        headers=err.headers,
    )
    if err.close:
        response.force_close()
    return response


def log_error(peer: str | None, what: str, status: int, message: str) -> None:
    """One line per error, with the client's address (the journal's only trace of it)."""
    level = logging.WARNING if status < 500 or status == 503 else logging.ERROR
    _LOGGER.log(level, "HTTP %s: %s: %d %s", peer or "?", what, status, message)
