"""The request middlewares, outermost first (wired in `app.py`):

observe_requests   request id, one server span, duration by route template
answer_errors      every error as the JSON error body, with its code
guard              foreign origins, hosts and sites, non-JSON bodies refused (`guard.py`)
cors               preflight answers and CORS headers (`cors.py`)
authenticate       the caller's name, or 401 (`auth.py`)
"""

from __future__ import annotations

import asyncio
import logging
import time

from aiohttp import web
from aiohttp.typedefs import Handler
from opentelemetry.trace import SpanKind, Tracer

from gateway.errors import ErrorCode, GatewayError, ValidationFailed
from gateway.http import keys
from gateway.http.access_log import CLIENT_CLOSED, LEFT, STREAM
from gateway.http.body import json_response
from gateway.ids import token_hex
from gateway.ops.telemetry import UnrecordedTracer, extract_context

log = logging.getLogger(__name__)

_CODE_BY_STATUS: dict[int, ErrorCode] = {
    401: "AUTHENTICATION_ERROR",
    403: "PERMISSION_ERROR",
    404: "NOT_FOUND",
}


def route_of(request: web.Request) -> str:
    """The route template (never the raw path: ids would explode metric cardinality)."""
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else "unmatched"


def request_id_of(request: web.Request) -> str:
    """The caller's `x-request-id` if it is 1-128 printable ASCII characters, else a new
    one: it goes into every error body and event, which must serialise (a non-UTF-8 byte
    arrives as a lone surrogate, and orjson refuses those)."""
    given = request.headers.get("x-request-id", "")
    if 0 < len(given) <= 128 and all(" " <= c <= "~" for c in given):
        return given
    return token_hex(16)


@web.middleware
async def observe_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    """One server span per request (continuing the caller's `traceparent`), its duration
    by route template, and `x-request-id` on every response."""
    request[keys.REQUEST_ID] = request_id_of(request)
    request[LEFT] = None  # whole, until a handler or `_left` says otherwise
    route = route_of(request)
    started = time.perf_counter()
    status = 500
    tracer = request.app[keys.TRACER]
    with tracer.start_as_current_span(
        f"{request.method} {route}",
        context=extract_context(request.headers),
        kind=SpanKind.SERVER,
        attributes=_server_attributes(request, route, tracer),
    ) as span:
        try:
            response = await handler(request)
            status = response.status
            if not response.prepared:
                response.headers["x-request-id"] = request[keys.REQUEST_ID]
            return response
        except asyncio.CancelledError:  # the connection closed under the handler
            status = _left(request, started)
            raise
        finally:
            span.set_attribute("http.response.status_code", status)
            elapsed_ms = (time.perf_counter() - started) * 1000
            metrics = request.app[keys.METRICS]
            metrics.request_duration_ms.labels(request.method, route, str(status)).observe(
                elapsed_ms
            )


def _server_attributes(request: web.Request, route: str, tracer: Tracer) -> dict[str, str] | None:
    """The server span's attributes; none without an exporter (nothing would keep them)."""
    if type(tracer) is UnrecordedTracer:  # not isinstance: Tracer is an ABC, its check slow
        return None
    return {
        "http.request.method": request.method,
        "http.route": route,
        "url.path": request.path,
        "gateway.request_id": request[keys.REQUEST_ID],
    }


def _left(request: web.Request, started: float) -> int:
    """The status of a request whose client left (aiohttp cancels its handler): what the
    client was sent (a stream that began is a 200), else 499; and its access line, which
    aiohttp writes only for a handler that returns."""
    response = request.get(STREAM)
    if response is None or not response.prepared:
        response = web.Response(status=CLIENT_CLOSED)
    if request.get(LEFT) is None:
        runs = request.app.get(keys.RUNS)
        request[LEFT] = "closed_at_shutdown" if runs and runs.stopping else "client_left"
    logger = request.protocol.access_logger
    if logger is not None and logger.enabled:
        logger.log(request, response, time.perf_counter() - started)
    return response.status


@web.middleware
async def answer_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A `GatewayError` or an HTTP error as `{"error": {...}}` with its status."""
    try:
        return await handler(request)
    except GatewayError as exc:
        error = exc
    except web.HTTPRequestEntityTooLarge:
        limit = request.app[keys.SETTINGS].gateway_max_body_bytes
        error = ValidationFailed(f"The request body is larger than {limit} bytes", status=413)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        code = _CODE_BY_STATUS.get(exc.status, "VALIDATION_ERROR")
        error = GatewayError(code, exc.reason, status=exc.status)
    request.app[keys.METRICS].errors.labels(error.code, route_of(request)).inc()
    response = json_response({"error": error.body(request[keys.REQUEST_ID])}, error.status)
    response.headers.update(error.headers)
    return response
