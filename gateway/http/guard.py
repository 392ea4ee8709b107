"""One rule on every route, before any work: no web page the operator did not allow may
start a run, read an answer or fetch a file, whether or not the server has keys.

    Host            a loopback name (`localhost`, `127.0.0.1`, `[::1]`), the address the
                    server is bound to or the connection arrived at, or one of
                    GATEWAY_ALLOWED_HOSTS (`*`: any), with any port; else 403 `host`.
                    This is what stops DNS rebinding (a page whose own name now points at
                    127.0.0.1). `/health` and `/metrics` answer any Host (probes, Prometheus).
    Origin          when present: the server's own (the scheme://host:port the request was
                    addressed to) or one of GATEWAY_CORS_ORIGINS (`*`: any but `null`;
                    `null` only when listed); else 403 `origin`.
    Sec-Fetch-Site  `cross-site` or `same-site` (another port of this host is the same
                    site) without an Origin, on /api/* and /mcp: 403 `cross_site`. That is
                    an `<img>`, a `<script>`, a link or a download from another page, which
                    carry no Origin.
    Content-Type    a POST (PUT, PATCH) to /api/* or /mcp with a body must say
                    `application/json`; else 415: a form or a `text/plain` fetch, the
                    posts a page may send without a preflight.

The refusals are `PERMISSION_ERROR` with `details.reason`, or `VALIDATION_ERROR` (415),
answered as JSON by `answer_errors` before CORS, authentication and any handler.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Awaitable
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Handler

from gateway.errors import GatewayError, ValidationFailed
from gateway.http import keys
from gateway.settings import Settings

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
ANY_HOST = frozenset({"/health", "/metrics"})
"""Paths that answer any Host: what they say is for probes and scrapes, nothing secret."""
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
OTHER_SITE = frozenset({"cross-site", "same-site"})
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?")


@web.middleware
def guard(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
    """Refuse what a foreign page could send (see the module's docstring). A plain
    function: it hands back the next handler's coroutine, so no frame of its own stays
    for a stream's life."""
    check(request)
    return handler(request)


def check(request: web.Request) -> None:
    settings = request.app[keys.SETTINGS]
    path = request.path
    if path not in ANY_HOST and not host_allowed(request, settings):
        raise _refused("host", "This server does not answer to that Host name")
    origin = request.headers.get("Origin")
    if origin is not None and not origin_allowed(request, origin, settings):
        raise _refused("origin", "Pages on this origin may not call the gateway")
    if not _private(path):
        return
    if origin is None and request.headers.get("Sec-Fetch-Site", "").lower() in OTHER_SITE:
        raise _refused("cross_site", "Pages on other sites may not call the gateway")
    if request.method in BODY_METHODS and not _json_or_empty(request):
        raise ValidationFailed("Send the body as Content-Type: application/json", status=415)


@functools.lru_cache(maxsize=256)  # a run start asks for the same few names every time
def host_name(value: str) -> str | None:
    """The name in a Host header (lower case, without brackets or port), None if malformed."""
    match = _HOST.fullmatch(value.strip())
    if match is None:
        return None
    return match.group(1).strip("[]").lower()


def host_allowed(request: web.Request, settings: Settings) -> bool:
    raw = request.headers.get("Host")
    if raw is None:  # HTTP/1.0 without one: no browser sends that
        return True
    name = host_name(raw)
    if name is None:
        return False
    allowed = _lowered(settings.gateway_allowed_hosts)
    if name in LOOPBACK_NAMES or name in allowed or raw.lower() in allowed or "*" in allowed:
        return True
    return _same_address(name, settings.host) or _same_address(name, _local_address(request))


@functools.lru_cache(maxsize=8)
def _lowered(entries: tuple[str, ...]) -> frozenset[str]:
    return frozenset(entry.lower() for entry in entries)


def origin_allowed(request: web.Request, origin: str, settings: Settings) -> bool:
    listed = settings.gateway_cors_origins
    if origin == "null":  # a file, a sandboxed frame, a redirect: only when listed
        return "null" in listed
    if origin in listed or "*" in listed:
        return True
    return is_own(request, origin)


def is_own(request: web.Request, origin: str) -> bool:
    """The page was served by the name and port this request was addressed to. Browsers
    leave a default port out of both, so the two compare as text."""
    host = request.headers.get("Host")
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return (
        host is not None
        and parts.scheme in ("http", "https")
        and parts.netloc.lower() == host.strip().lower()
    )


def _same_address(name: str, address: str | None) -> bool:
    """`name` is the IP address `address` (a bound wildcard like 0.0.0.0 matches nothing)."""
    if not address:
        return False
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
        return not ip.is_unspecified and ip == ipaddress.ip_address(name)
    except ValueError:
        return name == address.lower()


def _local_address(request: web.Request) -> str | None:
    transport = request.transport
    sockname = transport.get_extra_info("sockname") if transport is not None else None
    if isinstance(sockname, tuple) and sockname:
        return str(sockname[0])
    return None


def _private(path: str) -> bool:
    """Routes that start work or return data (pages, the schema and probes do neither)."""
    return path.startswith("/api/") or path == "/mcp"


def _json_or_empty(request: web.Request) -> bool:
    # An empty body's type does not matter (clients label a bodiless cancel variously).
    if request.headers.get("Content-Type") == "application/json":  # as clients send it
        return True
    return not request.body_exists or request.content_type == "application/json"


def _refused(reason: str, message: str) -> GatewayError:
    return GatewayError("PERMISSION_ERROR", message, {"reason": reason})


def is_loopback_address(host: str) -> bool:
    """A bind address only this machine reaches."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def unauthenticated_exposure(settings: Settings) -> str | None:
    """Why this server must not start (bound off loopback with no keys), or None."""
    if is_loopback_address(settings.host) or settings.gateway_allow_unauthenticated:
        return None
    # Keys made at runtime through the admin API count as keys: with an admin key set,
    # every /api/* route needs one.
    if settings.gateway_api_keys or settings.gateway_api_keys_file or settings.gateway_admin_key:
        return None
    return (
        f"HOST={settings.host} serves other machines, and no key is configured: anyone who "
        "reaches it could run research on this server's model key. Set GATEWAY_API_KEYS "
        "(or GATEWAY_API_KEYS_FILE, or GATEWAY_ADMIN_KEY to make keys at runtime), or "
        "GATEWAY_ALLOW_UNAUTHENTICATED=1 to serve without keys "
        "anyway (behind a proxy that authenticates, say)"
    )
