"""Authentication as its own middleware: it finds the caller's name for every /api/*
request and records it on the request (`keys.CALLER`) and on the request's span
(`enduser.id`). The name, never the key, travels with the run: logs, spans, audit lines.
"""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Handler
from opentelemetry import trace

from gateway import keys
from gateway.errors import GatewayError
from gateway.keyring import ANONYMOUS


def caller_of(request: web.Request) -> str:
    return request[keys.CALLER]  # the auth middleware sets it on every request


def _protected(request: web.Request) -> bool:
    # Preflights carry no credentials by design; the CORS middleware answers them.
    return request.path.startswith("/api/") and request.method != "OPTIONS"


@web.middleware
async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Record the caller's name on the request (and its span); 401 for /api/* without a
    valid `Authorization: Bearer <key>` when keys are configured."""
    ring = request.app[keys.KEYRING]
    if ring.open or not _protected(request):
        request[keys.CALLER] = ANONYMOUS
        return await handler(request)
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    name = ring.identify(token.strip()) if scheme.lower() == "bearer" else None
    if name is None:
        raise GatewayError("AUTHENTICATION_ERROR", "Send Authorization: Bearer <key> for /api/*")
    request[keys.CALLER] = name
    trace.get_current_span().set_attribute("enduser.id", name)
    return await handler(request)
