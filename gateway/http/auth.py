"""Authentication as its own middleware: it finds the caller's name for every /api/*
request and records it on the request (`keys.CALLER`, and its key as `keys.TENANT`) and on
the request's span (`enduser.id`). The name, never the key, travels with the run: logs,
spans, audit lines.

`/api/admin/*` takes only the admin key (GATEWAY_ADMIN_KEY), and is 404 without one.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler
from opentelemetry import trace

from gateway.access.tenants import Tenant, Tenants
from gateway.errors import GatewayError
from gateway.http import keys
from gateway.runs.run import ANONYMOUS

ADMIN = "(admin)"
"""The caller's name on admin requests (no key can be named so)."""

CALLER_VAR: ContextVar[str] = ContextVar("gateway_caller", default="-")
"""The caller's name for log records. Set per request; a run's task inherits it, because
asyncio copies the context into every task it creates."""


def install_log_key() -> None:
    """Give every log record a `key` attribute: the caller's name (`-` outside a request),
    for a log format with `%(key)s`."""
    previous: Callable[..., logging.LogRecord] = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        record.key = CALLER_VAR.get()
        return record

    logging.setLogRecordFactory(factory)


def caller_of(request: web.Request) -> str:
    return request[keys.CALLER]  # the auth middleware sets it on every request


def _protected(request: web.Request) -> bool:
    # Preflights carry no credentials by design; the CORS middleware answers them.
    path = request.path
    return (path.startswith("/api/") or path == "/mcp") and request.method != "OPTIONS"


@web.middleware
def authenticate(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
    """Record the caller's name on the request (and its span); 401 for /api/* without a
    valid `Authorization: Bearer <key>` when keys are configured. A plain function (as
    `_as`): an open request goes on with no frame of this middleware held for a stream's
    life; only a key's lookup awaits."""
    if request.path.startswith("/api/admin/") and request.method != "OPTIONS":
        return _admin(request, handler)
    tenants = request.app[keys.TENANTS]
    if tenants.open or not _protected(request):
        return _as(request, handler, ANONYMOUS, None)
    return _keyed(request, handler, tenants)


async def _keyed(request: web.Request, handler: Handler, tenants: Tenants) -> web.StreamResponse:
    token = bearer(request)
    tenant = await tenants.identify(token) if token is not None else None
    if tenant is None:
        raise GatewayError(
            "AUTHENTICATION_ERROR", "Send Authorization: Bearer <key> for /api/* and /mcp"
        )
    trace.get_current_span().set_attribute("enduser.id", tenant.name)
    return await _as(request, handler, tenant.name, tenant)


def bearer(request: web.Request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    # A key is printable ASCII; other bytes arrive as lone surrogates no digest can take.
    usable = scheme.lower() == "bearer" and token.isascii() and token.isprintable()
    return token if usable and token else None


async def _admin(request: web.Request, handler: Handler) -> web.StreamResponse:
    admin_key = request.app[keys.SETTINGS].gateway_admin_key
    if not admin_key:
        raise web.HTTPNotFound()  # as any route that does not exist
    token = bearer(request) or ""
    digest = hashlib.sha256(token.encode()).digest()
    if not hmac.compare_digest(digest, hashlib.sha256(admin_key.encode()).digest()):
        raise GatewayError("AUTHENTICATION_ERROR", "Send Authorization: Bearer <admin key>")
    return await _as(request, handler, ADMIN, None)


def _as(
    request: web.Request, handler: Handler, name: str, tenant: Tenant | None
) -> Awaitable[web.StreamResponse]:
    request[keys.CALLER] = name
    # None too: `request.get` of a key never set raises and catches a KeyError inside
    # aiohttp (~0.3 us), and every run start reads this one.
    request[keys.TENANT] = tenant
    # Not reset afterwards: aiohttp runs each request in a task of its own (a copy of the
    # context), so the name stays for that request's access log line and goes no further.
    CALLER_VAR.set(name)
    return handler(request)
