"""The admin API (GATEWAY_ADMIN_KEY): keys made, listed, read with their spend, changed
and revoked at runtime; and `/api/keys/self`, where any key reads its own name, limits
and spend. Every admin action is an audit line (`admin_key_*`) and a log line; bad input
is a 400 before anything is stored.
"""

from __future__ import annotations

import logging
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError

from gateway.access import key_admin
from gateway.access.budgets import budgets_for, limits_for
from gateway.access.key_admin import KeyChanges, NewKey
from gateway.access.tenants import Tenants
from gateway.errors import GatewayError, ValidationFailed
from gateway.http import keys
from gateway.http.auth import caller_of
from gateway.http.body import json_response, read_json_body
from gateway.settings import Settings
from gateway.store.keys import StoredKey

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)


def routes(settings: Settings) -> list[web.AbstractRouteDef]:
    """`/api/keys/self` always; the admin routes only with an admin key."""
    found: list[web.AbstractRouteDef] = [web.get("/api/keys/self", own_key, allow_head=False)]
    if settings.gateway_admin_key:
        found += [
            web.post("/api/admin/keys", create),
            web.get("/api/admin/keys", listing, allow_head=False),
            web.get("/api/admin/keys/{key_id}", show, allow_head=False),
            web.patch("/api/admin/keys/{key_id}", change),
            web.delete("/api/admin/keys/{key_id}", revoke),
        ]
    return found


async def create(request: web.Request) -> web.Response:
    new = _parse(NewKey, await read_json_body(request))
    key, secret = await key_admin.create(_tenants(request), new)
    _audit(request, "admin_key_create", key)
    return json_response({**key_admin.key_view(key), "secret": secret}, 201)


async def listing(request: web.Request) -> web.Response:
    tenants = _tenants(request)
    stored = await tenants.store.all() if tenants.store is not None else []
    views = key_admin.static_views(tenants) + [key_admin.key_view(k) for k in stored]
    _audit(request, "admin_key_list", None, {"keys": len(views)})
    return json_response({"keys": views})


async def show(request: web.Request) -> web.Response:
    key_id = request.match_info["key_id"]
    static = _static(request, key_id)
    view = static or key_admin.key_view(await _stored(request, key_id))
    _audit(request, "admin_key_read", None, {"key_id": key_id})
    return json_response({**view, "spend": await _spend(request, view["name"])})


async def change(request: web.Request) -> web.Response:
    key_id = request.match_info["key_id"]
    _refuse_static(request, key_id)
    key = await _stored(request, key_id)
    changes = _parse(KeyChanges, await read_json_body(request))
    changed = await key_admin.change(_tenants(request), key, changes)
    _audit(request, "admin_key_update", changed, {"fields": sorted(changes.model_fields_set)})
    return json_response(key_admin.key_view(changed))


async def revoke(request: web.Request) -> web.Response:
    key_id = request.match_info["key_id"]
    _refuse_static(request, key_id)
    revoked = await key_admin.revoke(_tenants(request), await _stored(request, key_id))
    _audit(request, "admin_key_revoke", revoked)
    return json_response(key_admin.key_view(revoked))


async def own_key(request: web.Request) -> web.Response:
    """The caller's key: its name, where it comes from, its models, limits and spend."""
    app = request.app
    name, tenant = caller_of(request), request.get(keys.TENANT)
    limits = limits_for(tenant, app[keys.LIMITS].limits)
    owed = budgets_for(tenant, app[keys.SETTINGS])
    body = {
        "name": name,
        "key_id": tenant.key_id if tenant is not None else None,
        "source": tenant.source if tenant is not None else "open",
        "models": list(tenant.models) if tenant and tenant.models is not None else None,
        "limits": {
            "runs_per_minute": limits.per_minute,
            "concurrent_runs": limits.concurrent,
            "daily_tokens": limits.daily_tokens,
            "daily_usd": owed.daily_usd,
            "monthly_usd": owed.monthly_usd,
        },
        "spend": await _spend(request, name),
    }
    return json_response(body)


def _parse(model: type[M], data: Any) -> M:
    if not isinstance(data, dict):
        raise ValidationFailed("The request body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = [
            {"field": ".".join(str(p) for p in e["loc"]), "message": e["msg"]}
            for e in exc.errors(include_url=False)
        ]
        summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        raise ValidationFailed(f"Invalid request: {summary}", {"errors": errors}) from None


def _tenants(request: web.Request) -> Tenants:
    return request.app[keys.TENANTS]


async def _stored(request: web.Request, key_id: str) -> StoredKey:
    store = _tenants(request).store
    key = await store.get(key_id) if store is not None and key_id.startswith("key_") else None
    if key is None:
        raise GatewayError("NOT_FOUND", f"No key {key_id!r}", {"key_id": key_id})
    return key


def _static(request: web.Request, key_id: str) -> dict[str, Any] | None:
    views = key_admin.static_views(_tenants(request))
    return next((view for view in views if view["key_id"] == key_id), None)


def _refuse_static(request: web.Request, key_id: str) -> None:
    if _static(request, key_id) is not None:
        raise ValidationFailed(
            f"Key {key_id!r} comes from GATEWAY_API_KEYS or GATEWAY_API_KEYS_FILE: change "
            "it there (it is read-only here)",
            {"reason": "read_only", "key_id": key_id},
        )


async def _spend(request: web.Request, name: str) -> dict[str, Any]:
    try:
        return await request.app[keys.SPEND].report(name)
    except Exception as exc:
        log.warning("spend: the ledger did not answer (%s)", exc)
        raise GatewayError("UNKNOWN_ERROR", "The spend ledger did not answer") from None


def _audit(
    request: web.Request, event: str, key: StoredKey | None, extra: dict[str, Any] | None = None
) -> None:
    fields: dict[str, Any] = {"key": caller_of(request), "request_id": request[keys.REQUEST_ID]}
    if key is not None:
        fields |= {"key_id": key.key_id, "name": key.name}
    fields |= extra or {}
    log.info("admin: %s %s", event, fields)
    if keys.AUDIT in request.app:
        request.app[keys.AUDIT].write(event, fields)
