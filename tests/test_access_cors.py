"""CORS: preflights answered for allowed origins (before authentication), the headers on
every response to them (SSE streams and error answers included), nothing for others."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.conftest import GatewayFactory, iter_events, read_events
from tests.fakes.anthropic import FakeAnthropic, Reply, Text

Client = TestClient[Any, Any]
APP = "https://app.example"
OTHER = "https://evil.example"
KEY = {"Authorization": "Bearer k"}
SLOW = "word " * 200


def preflight(origin: str, method: str = "POST") -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": "authorization, content-type, last-event-id",
    }


async def cors_gateway(make_gateway: GatewayFactory, **settings: Any) -> Client:
    return await make_gateway(
        gateway_api_keys="web:k", gateway_cors_origins=f"{APP}, https://b.example", **settings
    )


async def test_preflight_for_an_allowed_origin_only(make_gateway: GatewayFactory) -> None:
    client = await cors_gateway(make_gateway)
    for path in ("/api/stream", "/api/stream/run_x", "/api/runs/run_x/cancel"):
        answer = await client.options(path, headers=preflight(APP))
        assert answer.status == 204, path  # no key: a preflight never carries one
        headers = answer.headers
        assert headers["Access-Control-Allow-Origin"] == APP
        assert {"GET", "POST"} <= set(headers["Access-Control-Allow-Methods"].split(", "))
        allowed = headers["Access-Control-Allow-Headers"].lower().split(", ")
        assert {"authorization", "content-type", "last-event-id", "x-request-id"} <= set(allowed)
    denied = await client.options("/api/stream", headers=preflight(OTHER))
    assert denied.status == 403
    assert "Access-Control-Allow-Origin" not in denied.headers


async def test_actual_requests_from_an_allowed_origin(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await cors_gateway(make_gateway, gateway_resume_grace_s=5.0)
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.01))
    origin = {"Origin": APP, **KEY}
    response = await client.post("/api/stream", json={"query": "x"}, headers=origin)
    assert response.headers["Access-Control-Allow-Origin"] == APP  # on the SSE stream too
    exposed = response.headers["Access-Control-Expose-Headers"].lower().split(", ")
    assert {"x-request-id", "x-run-id", "retry-after"} <= set(exposed)
    run_id = (await anext(iter_events(response)))["run_id"]
    follower = await client.get(f"/api/stream/{run_id}", headers=origin)
    assert follower.headers["Access-Control-Allow-Origin"] == APP
    cancel = await client.post(f"/api/runs/{run_id}/cancel", headers=origin)
    assert cancel.headers["Access-Control-Allow-Origin"] == APP
    assert (await cancel.json())["cancelled"] is True
    assert (await read_events(follower))[-1]["outcome"] == "cancelled"
    response.close()
    # An error answer must be readable by the page too, or it cannot say what went wrong.
    unauthorised = await client.get("/api/tools", headers={"Origin": APP})
    assert unauthorised.status == 401
    assert unauthorised.headers["Access-Control-Allow-Origin"] == APP


async def test_no_cors_headers_for_other_origins(make_gateway: GatewayFactory) -> None:
    client = await cors_gateway(make_gateway)
    answer = await client.get("/api/tools", headers={"Origin": OTHER, **KEY})
    assert answer.status == 403  # refused outright (guard.py), with nothing to read
    assert "Access-Control-Allow-Origin" not in answer.headers
    plain = await make_gateway(gateway_api_keys="web:k")  # no allow-list: CORS is off
    answer = await plain.get("/api/tools", headers={"Origin": APP, **KEY})
    assert answer.status == 403
    assert "Access-Control-Allow-Origin" not in answer.headers
    assert (await plain.options("/api/stream", headers=preflight(APP))).status == 403


async def test_a_wildcard_allows_any_origin(make_gateway: GatewayFactory) -> None:
    client = await make_gateway(gateway_cors_origins="*")
    answer = await client.get("/api/tools", headers={"Origin": OTHER})
    assert answer.headers["Access-Control-Allow-Origin"] == "*"
