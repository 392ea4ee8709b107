"""The admin API's work on keys, below HTTP: the request bodies (validated, strictly),
creating a key (its secret returned once), changing and revoking one, and the views that
list and show keys. No view ever holds a secret or a hash.

A key's own limits replace the configured ones for that key (0: no limit); one it does
not set is the configured one. Keys of GATEWAY_API_KEYS / GATEWAY_API_KEYS_FILE are
listed (`source` `env` or `file`, `read_only`) and cannot be changed here.
"""

from __future__ import annotations

import dataclasses
import secrets
from datetime import UTC, datetime
from typing import Annotated, Any

import orjson
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints

from gateway.access.tenants import Tenants
from gateway.errors import GatewayError, ValidationFailed
from gateway.runs.run import ANONYMOUS
from gateway.store.keys import StoredKey

NAME_PATTERN = r"^[A-Za-z0-9_.@-]{1,64}$"
MODEL_PATTERN = r"^[A-Za-z0-9._:@/-]{1,128}$"
METADATA_MAX_BYTES = 4096
SECRET_PREFIX = "rgk_"

ModelId = Annotated[str, StringConstraints(pattern=MODEL_PATTERN)]


class KeyLimits(BaseModel):
    """A key's own limits; a field left out (or null) is the configured limit, 0 is none."""

    model_config = ConfigDict(extra="forbid", strict=True)
    runs_per_minute: int | None = Field(None, ge=0, le=1_000_000)
    """Run starts per minute (sliding window)."""
    concurrent_runs: int | None = Field(None, ge=0, le=1_000_000)
    """Runs in progress at once."""
    daily_tokens: int | None = Field(None, ge=0, le=10**15)
    """Input + output tokens per UTC day."""
    daily_usd: float | None = Field(None, ge=0, le=10**9, allow_inf_nan=False)
    """Dollars per UTC day."""
    monthly_usd: float | None = Field(None, ge=0, le=10**9, allow_inf_nan=False)
    """Dollars per UTC month."""


class KeyChanges(BaseModel):
    """`PATCH /api/admin/keys/{key_id}`: the fields to change (at least one)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    models: list[ModelId] | None = Field(None, min_length=1, max_length=100)
    """The models the key may run; null: any model."""
    limits: KeyLimits | None = None
    """Merged into the key's limits (a null field goes back to the configured limit)."""
    expires_at: AwareDatetime | None = Field(None, strict=False)
    """When the key stops working (an ISO 8601 time with its offset); null: never."""
    metadata: dict[str, Any] | None = None
    """Free-form JSON of yours (at most 4 KiB), returned as given."""


class NewKey(KeyChanges):
    """`POST /api/admin/keys`."""

    name: str = Field(pattern=NAME_PATTERN)
    """Unique, for good: runs, files, spend, logs and metrics carry it."""


def key_view(key: StoredKey) -> dict[str, Any]:
    """A stored key as the admin API shows it: never its secret or hash."""
    return {
        "key_id": key.key_id,
        "name": key.name,
        "source": "admin",
        "read_only": False,
        "models": list(key.models) if key.models is not None else None,
        "limits": key.limits,
        "expires_at": key.expires_at,
        "metadata": key.metadata,
        "created_at": key.created_at,
        "revoked_at": key.revoked_at,
        "status": status_of(key),
    }


def status_of(key: StoredKey) -> str:
    if key.revoked_at is not None:
        return "revoked"
    if key.expires_at is not None and datetime.fromisoformat(key.expires_at) <= _now():
        return "expired"
    return "active"


def static_views(tenants: Tenants) -> list[dict[str, Any]]:
    ring = tenants.ring
    return [
        {
            "key_id": static_id(name, ring.from_file),
            "name": name,
            "source": "file" if name in ring.from_file else "env",
            "read_only": True,
            "models": None,
            "limits": {},
            "expires_at": None,
            "metadata": {},
            "created_at": None,
            "revoked_at": None,
            "status": "active",
        }
        for name in ring.names()
    ]


def static_id(name: str, from_file: frozenset[str]) -> str:
    return f"{'file' if name in from_file else 'env'}:{name}"


async def create(tenants: Tenants, new: NewKey) -> tuple[StoredKey, str]:
    """Store a new key; it and its secret (shown this once)."""
    if new.name == ANONYMOUS or new.name in tenants.ring.names():
        raise _name_taken(new.name)
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    key = StoredKey(
        key_id=f"key_{secrets.token_hex(12)}",
        name=new.name,
        digest=tenants.digest(secret),
        created_at=_iso(_now()),
        models=tuple(new.models) if new.models is not None else None,
        limits=_limits({}, new.limits),
        expires_at=_expiry(new.expires_at),
        metadata=_metadata(new.metadata or {}),
    )
    assert tenants.store is not None
    if not await tenants.store.add(key):
        raise _name_taken(new.name)
    await tenants.refresh()
    return key, secret


async def change(tenants: Tenants, key: StoredKey, changes: KeyChanges) -> StoredKey:
    given = changes.model_fields_set
    if key.revoked_at is not None:
        raise ValidationFailed(f"Key {key.key_id!r} is revoked", {"reason": "revoked"})
    if not given:
        raise ValidationFailed("Send at least one of models, limits, expires_at, metadata")
    fields: dict[str, Any] = {}
    if "models" in given:
        fields["models"] = tuple(changes.models) if changes.models is not None else None
    if "limits" in given:
        fields["limits"] = _limits(key.limits, changes.limits)
    if "expires_at" in given:
        fields["expires_at"] = _expiry(changes.expires_at)
    if "metadata" in given:
        fields["metadata"] = _metadata(changes.metadata or {})
    changed = dataclasses.replace(key, **fields)
    assert tenants.store is not None
    await tenants.store.put(changed)
    await tenants.refresh()
    return changed


async def revoke(tenants: Tenants, key: StoredKey) -> StoredKey:
    """Revoke a key (again: nothing changes); its runs here end at once, elsewhere at the
    next poll."""
    if key.revoked_at is not None:
        return key
    revoked = dataclasses.replace(key, revoked_at=_iso(_now()))
    assert tenants.store is not None
    await tenants.store.put(revoked)
    await tenants.refresh()
    return revoked


def _limits(current: dict[str, float], changes: KeyLimits | None) -> dict[str, float]:
    if changes is None:
        return {}
    merged = dict(current)
    for name in changes.model_fields_set:
        value = getattr(changes, name)
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = value
    return merged


def _expiry(when: datetime | None) -> str | None:
    if when is None:
        return None
    if when <= _now():
        raise ValidationFailed("expires_at is in the past", {"field": "expires_at"})
    return _iso(when)


def _metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    if len(orjson.dumps(metadata)) > METADATA_MAX_BYTES:
        message = f"metadata is larger than {METADATA_MAX_BYTES} bytes as JSON"
        raise ValidationFailed(message, {"field": "metadata"})
    return metadata


def _name_taken(name: str) -> GatewayError:
    return ValidationFailed(
        f"A key named {name!r} exists (or existed: names of revoked keys stay taken)",
        {"field": "name", "reason": "name_taken"},
    )


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
