"""The OpenAPI part of the keys: `/api/keys/self` always, the admin routes when
GATEWAY_ADMIN_KEY is set. The request bodies are the admin API's own models
(`access/key_admin.py`); the answers are the small models below."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from gateway.access.key_admin import KeyChanges, NewKey

REF = "#/components/schemas/{model}"


class SpendTotals(BaseModel):
    period: str
    runs: int
    batch_questions: int
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    usd: float
    by_model: dict[str, dict[str, float]]


class KeySpend(BaseModel):
    """A key's spend this UTC day and month."""

    today: SpendTotals
    month: SpendTotals


class KeyView(BaseModel):
    """A key as listed: never its secret or hash."""

    key_id: str
    name: str
    source: Literal["admin", "env", "file"]
    read_only: bool
    models: list[str] | None
    limits: dict[str, float]
    expires_at: str | None
    metadata: dict[str, Any]
    created_at: str | None
    revoked_at: str | None
    status: Literal["active", "expired", "revoked"]


class KeyCreated(KeyView):
    secret: str
    """The key itself: shown here only, never again."""


class KeyDetail(KeyView):
    spend: KeySpend


class KeyList(BaseModel):
    keys: list[KeyView]


class OwnKey(BaseModel):
    """`/api/keys/self`: the caller's key, the limits that apply to it, its spend."""

    name: str
    key_id: str | None
    source: Literal["admin", "env", "file", "open"]
    models: list[str] | None
    limits: dict[str, float]
    spend: KeySpend


MODELS: list[tuple[type[BaseModel], Literal["serialization", "validation"]]] = [
    *((m, "serialization") for m in (KeyView, KeyCreated, KeyDetail, KeyList, OwnKey)),
    (NewKey, "validation"),
    (KeyChanges, "validation"),
]


def _json(model: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": REF.format(model=model)}}}


def _body(model: str) -> dict[str, Any]:
    return {"required": True, "content": _json(model)}


def _answer(description: str, model: str) -> dict[str, Any]:
    return {"description": description, "content": _json(model)}


def key_paths(admin: bool, errors: dict[str, Any], not_found: dict[str, Any]) -> dict[str, Any]:
    """The paths; `errors` are the answers every one may give, `not_found` a 404's."""
    own = {
        "/api/keys/self": {
            "get": {
                "summary": "The caller's key: its name, models, limits, spend today and this month",
                "responses": {"200": _answer("The key", "OwnKey"), **errors},
            }
        }
    }
    if not admin:
        return own
    key_id = {"name": "key_id", "in": "path", "required": True, "schema": {"type": "string"}}
    one = {**errors, "404": not_found}
    return own | {
        "/api/admin/keys": {
            "post": {
                "summary": "Make a key (its secret is in this answer only)",
                "requestBody": _body("NewKey"),
                "responses": {"201": _answer("Made", "KeyCreated"), **errors},
            },
            "get": {
                "summary": "Every key, without secrets (environment and file keys too)",
                "responses": {"200": _answer("The keys", "KeyList"), **errors},
            },
        },
        "/api/admin/keys/{key_id}": {
            "get": {
                "summary": "One key with its spend",
                "parameters": [key_id],
                "responses": {"200": _answer("The key", "KeyDetail"), **one},
            },
            "patch": {
                "summary": "Change a key's models, limits, expiry or metadata",
                "parameters": [key_id],
                "requestBody": _body("KeyChanges"),
                "responses": {"200": _answer("Changed", "KeyView"), **one},
            },
            "delete": {
                "summary": "Revoke a key: its requests get 401 within a second on "
                "every worker, its runs end with KEY_REVOKED",
                "parameters": [key_id],
                "responses": {"200": _answer("Revoked", "KeyView"), **one},
            },
        },
    }
