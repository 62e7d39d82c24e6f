"""The application: every route, and the one middleware every request passes through
(what a browser may do, the token, CORS, the body's size, counting, errors into JSON)."""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from . import browser, info_api, invoke_api, say_api, speech_api
from .errors import ApiError, error_response, log_error
from .metrics import CONTENT_TYPE, exposition, registry_for
from .shared import DOOR, Door

_LOGGER = logging.getLogger("edge_tts.http")

OPEN_PATHS = frozenset({"/health"})  # no token needed: what a load balancer polls
# The routes that take a JSON body, and only that (browser.py); /say takes plain text too.
JSON_PATHS = frozenset({"/v1/audio/speech", "/synthesize", "/", "/invoke"})
SAY_PATH = "/say"
_CORS = "edge_tts.cors"  # the request's CORS headers, for _add_cors
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def make_app(door: Door, max_body: int) -> web.Application:
    app = web.Application(client_max_size=max_body, middlewares=[guard])
    app[DOOR] = door
    app.on_response_prepare.append(_add_cors)
    registry = registry_for(door.telemetry, door.gauges)

    async def metrics(_request: web.Request) -> web.Response:
        # Off the loop: reading the process' figures touches /proc.
        body = await asyncio.to_thread(exposition, registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    # "100 Continue" is sent by the middleware, once the request has passed its checks.
    post = {"expect_handler": _later}
    app.router.add_post("/v1/audio/speech", speech_api.openai_speech, **post)
    app.router.add_post("/synthesize", speech_api.piper_synthesize, **post)
    app.router.add_post("/", speech_api.piper_synthesize, **post)  # Piper 1.3's documented one
    app.router.add_get("/info", speech_api.piper_info)
    app.router.add_post("/invoke", invoke_api.invoke, **post)
    app.router.add_get("/download", invoke_api.download)
    app.router.add_post(SAY_PATH, say_api.say, **post)
    app.router.add_get("/requests/{request_id}", say_api.request_state)
    app.router.add_get("/voices", info_api.voices)
    app.router.add_get("/health", info_api.health)
    app.router.add_get("/metrics", metrics)
    return app


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    door = request.app[DOOR]
    door.telemetry.count("http_requests")
    cors = request[_CORS] = _cors_headers(request, door)
    try:
        _check_browser(request, door)
        if request.method == "OPTIONS" and cors:
            return web.Response(status=204, headers=cors)
        _check_token(request, door)
        _check_body(request, door)
        if "Expect" in request.headers:
            await _continue(request)
        response = await handler(request)
    except ApiError as err:
        response = _failed(request, door, err)
        if err.close:
            await _close_after(request, response)
    except web.HTTPException as err:  # the router's 404 and 405
        code = err.reason.lower().replace(" ", "_")
        response = _failed(request, door, ApiError(err.status, code, err.reason))
        response.headers.update({k: v for k, v in err.headers.items() if k == "Allow"})
    except (ConnectionError, asyncio.CancelledError):
        raise  # the client is gone: nobody to answer
    except Exception as err:
        _LOGGER.exception("HTTP %s: %s %s failed", request.remote, request.method, request.path)
        response = _failed(request, door, ApiError(500, "internal_error", f"internal error: {err}"))
    return response


async def _add_cors(request: web.Request, response: web.StreamResponse) -> None:
    """As every response goes out, a streamed one too (its headers leave with its first
    audio, inside the route)."""
    response.headers.update(request.get(_CORS) or {})


async def _later(_request: web.Request) -> None:
    """A route's Expect handler: nothing yet (see `guard`)."""


def _failed(request: web.Request, door: Door, err: ApiError) -> web.Response:
    door.telemetry.count("http_busy" if err.status == 503 else "http_errors")
    log_error(request.remote, f"{request.method} {request.path}", err.status, err.message)
    return error_response(err)


async def _close_after(request: web.Request, response: web.Response) -> None:
    """Send `response`, then close at once: aiohttp would otherwise read and drop the
    rest of the body for up to its lingering time (a stalled or too large one)."""
    await response.prepare(request)
    await response.write_eof()
    request.protocol.force_close()  # the transport sends what it holds, then closes


def _check_browser(request: web.Request, door: Door) -> None:
    try:
        browser.check(request.method, request.headers, door.hosts, door.settings.cors_origins)
    except browser.Refusal as refusal:
        raise ApiError(refusal.status, refusal.code, refusal.message) from None


def _check_body(request: web.Request, door: Door) -> None:
    """The body's declared size and type, before any of it is read."""
    if request.method != "POST":
        return
    size = request.content_length
    if size is not None and size > door.max_body:
        message = f"the body is {size} bytes; the limit is {door.max_body}"
        raise ApiError(413, "too_large", message, close=True)
    try:
        if request.path in JSON_PATHS or (
            request.path == SAY_PATH
            and not browser.may_send_plain_text(request.headers, door.token is not None)
        ):
            browser.require_json(request.headers)
    except browser.Refusal as refusal:
        raise ApiError(refusal.status, refusal.code, refusal.message) from None


async def _continue(request: web.Request) -> None:
    """Expect: 100-continue answered once the request has passed every check that needs
    no body (so a refused or too large one is told at once, not after sending it)."""
    if request.headers["Expect"].strip().lower() != "100-continue":
        raise ApiError(417, "expectation_failed", "only Expect: 100-continue is understood")
    if request.version >= (1, 1):
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0  # the response proper has not started


def _check_token(request: web.Request, door: Door) -> None:
    if door.token is None or request.path in OPEN_PATHS:
        return
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        given.strip().encode(), door.token.encode()
    ):
        raise ApiError(
            401,
            "invalid_token",
            "a valid bearer token is needed (Authorization: Bearer <token>)",
            headers={"WWW-Authenticate": 'Bearer realm="edge-tts"'},
        )


def _cors_headers(request: web.Request, door: Door) -> dict[str, str]:
    """CORS headers for an allowed origin (`http.cors_origins`); none for any other."""
    origin = request.headers.get("Origin")
    allowed = door.settings.cors_origins
    if origin is None or not ("*" in allowed or origin in allowed):
        return {}
    return {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
        "Access-Control-Allow-Headers": "Authorization, Content-Type",
        "Access-Control-Expose-Headers": "X-Sample-Rate, X-Sample-Width, X-Channels, Retry-After",
        "Access-Control-Max-Age": "600",
        "Vary": "Origin",
    }
