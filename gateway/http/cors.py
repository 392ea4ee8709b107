"""CORS for browsers on other origins: an allow-list (`GATEWAY_CORS_ORIGINS`, `*` for any
but `null`, which must be listed itself).

Which origins may call at all is the guard's rule (`guard.py`, before this middleware): a
request from any other origin never gets here. A preflight (`OPTIONS` with
`Access-Control-Request-Method`) from an allowed origin is answered 204 here, before
authentication: browsers never send credentials on a preflight. Every other response to an
allowed origin, SSE streams included, gets its headers in `on_response_prepare`, which
aiohttp calls just before the headers go out, so handlers that prepare their own stream
need not know about CORS. The server's own pages need no headers: they are same-origin.

No `Access-Control-Allow-Credentials`: the API authenticates with a bearer header, not
cookies, so there is nothing for a browser to send implicitly.
"""

from __future__ import annotations

from collections.abc import Awaitable

from aiohttp import web
from aiohttp.typedefs import Handler

from gateway.errors import GatewayError
from gateway.http import keys

ALLOW_METHODS = "GET, POST, OPTIONS"
ALLOW_HEADERS = "Authorization, Content-Type, Last-Event-ID, x-request-id"
EXPOSE_HEADERS = (
    "x-request-id, x-run-id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset"
)
MAX_AGE_S = "600"  # how long a browser may reuse a preflight answer


def allowed_origin(request: web.Request) -> str | None:
    """The value for `Access-Control-Allow-Origin`, or None for no CORS headers."""
    origin = request.headers.get("Origin")
    allowed = request.app[keys.SETTINGS].gateway_cors_origins
    if origin is None or not allowed:
        return None
    if origin in allowed:
        return origin
    return "*" if "*" in allowed and origin != "null" else None


@web.middleware
def cors(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
    """Answer preflights; everything else goes on (its headers come at prepare). A plain
    function: it hands back the next handler's coroutine, so no frame of its own stays
    for a stream's life."""
    if request.method != "OPTIONS" or "Access-Control-Request-Method" not in request.headers:
        return handler(request)
    return _preflight(request)


async def _preflight(request: web.Request) -> web.StreamResponse:
    origin = allowed_origin(request)
    if origin is None:
        raise GatewayError(
            "PERMISSION_ERROR", "This origin may not call the API", {"reason": "origin"}
        )
    return web.Response(
        status=204,
        headers={
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Allow-Methods": ALLOW_METHODS,
            "Access-Control-Allow-Headers": ALLOW_HEADERS,
            "Access-Control-Max-Age": MAX_AGE_S,
            "Vary": "Origin",
        },
    )


async def add_cors_headers(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare`: CORS headers on every response to an allowed origin."""
    origin = allowed_origin(request)
    if origin is None or "Access-Control-Allow-Origin" in response.headers:
        return
    response.headers["Access-Control-Allow-Origin"] = origin
    response.headers["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
    response.headers["Vary"] = "Origin"
