"""Request id, timing, authentication and JSON errors for every request."""

from __future__ import annotations

import hmac
import logging
import time
import uuid

from aiohttp import web
from aiohttp.typedefs import Handler
from opentelemetry.trace import SpanKind

from gateway import keys
from gateway.errors import ErrorCode, GatewayError, ValidationFailed
from gateway.handlers import json_response
from gateway.telemetry import extract_context

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


@web.middleware
async def observe_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    """One server span per request (continuing the caller's `traceparent`), its duration
    by route template, and `x-request-id` on every response."""
    request_id = request.headers.get("x-request-id") or uuid.uuid4().hex
    request[keys.REQUEST_ID] = request_id[:128]
    route = route_of(request)
    started = time.perf_counter()
    status = 500
    with request.app[keys.TRACER].start_as_current_span(
        f"{request.method} {route}",
        context=extract_context(request.headers),
        kind=SpanKind.SERVER,
        attributes={"http.request.method": request.method, "http.route": route,
                    "url.path": request.path, "gateway.request_id": request[keys.REQUEST_ID]},
    ) as span:  # fmt: skip
        try:
            response = await _answer_errors(request, handler)
            status = response.status
            if not response.prepared:
                response.headers["x-request-id"] = request[keys.REQUEST_ID]
            return response
        finally:
            span.set_attribute("http.response.status_code", status)
            elapsed_ms = (time.perf_counter() - started) * 1000
            duration = request.app[keys.METRICS].request_duration_ms
            duration.labels(request.method, route, str(status)).observe(elapsed_ms)


async def _answer_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        _authenticate(request)
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
    return json_response({"error": error.body(request[keys.REQUEST_ID])}, error.status)


def _authenticate(request: web.Request) -> None:
    allowed = request.app[keys.SETTINGS].gateway_api_keys
    if not allowed or not request.path.startswith("/api/"):
        return
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and any(
        hmac.compare_digest(token.encode(), key.encode()) for key in allowed
    ):
        return
    raise GatewayError("AUTHENTICATION_ERROR", "Send Authorization: Bearer <key> for /api/*")
