"""`/openapi.json`: a valid OpenAPI 3.1 document, generated from the models, naming every
route the app serves (the fuzzing against it is in tests/demo/test_fuzz.py)."""

from __future__ import annotations

from typing import Any, get_args

from openapi_spec_validator import validate

from gateway.errors import ErrorCode
from gateway.http.body import RunBody
from tests.conftest import GatewayFactory

ADMIN_KEY = "admin-secret-0123456789"
NOT_API = {"/", "/test/claude-playground.html", "/playground"}


async def document(make_gateway: GatewayFactory, **settings: Any) -> dict[str, Any]:
    client = await make_gateway(**settings)
    response = await client.get("/openapi.json")
    assert response.status == 200 and response.content_type == "application/json"
    doc: dict[str, Any] = await response.json()
    routes = set()
    for resource in client.app.router.resources():
        path = resource.canonical
        if path not in NOT_API:
            routes.add(path)
    assert set(doc["paths"]) == routes  # every route documented, nothing that is not served
    return doc


async def test_a_valid_openapi_31_document(make_gateway: GatewayFactory) -> None:
    doc = await document(make_gateway)
    assert doc["openapi"].startswith("3.1")
    validate(doc)
    assert "securitySchemes" not in doc["components"] and "security" not in doc


async def test_generated_from_the_models(make_gateway: GatewayFactory) -> None:
    doc = await document(make_gateway, gateway_api_keys="a:k")
    validate(doc)
    schemas = doc["components"]["schemas"]
    assert set(schemas["RunBody"]["properties"]) == set(RunBody.model_fields)
    assert schemas["ErrorDetail"]["properties"]["code"]["enum"] == list(get_args(ErrorCode))
    assert schemas["RunBody"]["properties"]["tools"]["anyOf"][0]["items"]["enum"] == sorted(
        ["echo", "sleep", "fail", "crash", "big"]
    )
    stream = doc["paths"]["/api/stream"]
    assert stream["post"]["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/RunBody"
    }
    assert "text/event-stream" in stream["post"]["responses"]["200"]["content"]
    assert "Retry-After" in stream["post"]["responses"]["429"]["headers"]
    assert [p["name"] for p in stream["get"]["parameters"] if p["required"]] == ["query"]
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert doc["security"] == [{"bearer": []}]
    assert doc["paths"]["/health"]["get"]["security"] == []


async def test_the_admin_routes_are_documented_when_served(
    make_gateway: GatewayFactory, tmp_path: Any
) -> None:
    keys_db = str(tmp_path / "keys.db")
    doc = await document(make_gateway, gateway_admin_key=ADMIN_KEY, gateway_keys_db=keys_db)
    validate(doc)
    admin = doc["paths"]["/api/admin/keys/{key_id}"]
    assert set(admin) == {"get", "patch", "delete"}
    body = doc["components"]["schemas"]["NewKey"]
    assert body["required"] == ["name"] and body["additionalProperties"] is False
    assert set(body["properties"]) == {"name", "models", "limits", "expires_at", "metadata"}
    created = doc["components"]["schemas"]["KeyCreated"]["properties"]
    assert "secret" in created
    assert "secret" not in doc["components"]["schemas"]["KeyView"]["properties"]
    assert "/api/admin/keys" not in (await document(make_gateway))["paths"]
