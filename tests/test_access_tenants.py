"""Keys as tenants on one process: the admin API (404 without its key), secrets shown once
and never listed, per-key models, limits and budgets, spend per key and model, revocation
ending the key's runs with KEY_REVOKED, bad input refused with nothing stored, audit lines.
Across processes and restarts: test_access_tenants_procs.py."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from gateway.access.keyring import KeyRing
from gateway.access.tenants import Tenants
from gateway.http import keys
from gateway.http.app import create_app
from gateway.settings import Settings
from gateway.store.keys import MemoryKeys, StoredKey
from tests.conftest import GatewayFactory, iter_events, read_events
from tests.fakes.anthropic import FakeAnthropic, Reply, Text

ADMIN_KEY = "admin-secret-0123456789"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
MODEL = "claude-test-model"
PRICE = {"input": 1000.0, "output": 2000.0, "cache_write_5m": 0.0, "cache_read": 0.0}


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def priced(tmp_path: Path) -> str:
    """A price table with the fake's model: $0.01 an input token, $0.02 an output token."""
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {MODEL: PRICE}}))
    return str(path)


async def admin_gateway(make_gateway: GatewayFactory, tmp_path: Path, **settings: Any) -> Any:
    return await make_gateway(
        gateway_admin_key=ADMIN_KEY, gateway_keys_db=str(tmp_path / "keys.db"), **settings
    )


async def new_key(client: TestClient[Any, Any], **body: Any) -> dict[str, Any]:
    response = await client.post("/api/admin/keys", json=body, headers=ADMIN)
    assert response.status == 201, await response.text()
    created: dict[str, Any] = await response.json()
    return created


async def test_no_admin_key_no_admin_routes(make_gateway: GatewayFactory) -> None:
    client = await make_gateway(gateway_api_keys="alice:alice-secret")
    for method in ("GET", "POST"):
        response = await client.request(method, "/api/admin/keys", headers=ADMIN)
        assert response.status == 404
        assert (await response.json())["error"]["code"] == "NOT_FOUND"
    assert (await client.get("/api/admin/keys/key_1")).status == 404


async def test_admin_routes_take_only_the_admin_key(
    make_gateway: GatewayFactory, tmp_path: Path
) -> None:
    client = await admin_gateway(make_gateway, tmp_path, gateway_api_keys="alice:alice-secret")
    for headers in ({}, bearer("alice-secret"), bearer(ADMIN_KEY + "x")):
        response = await client.get("/api/admin/keys", headers=headers)
        assert response.status == 401
        assert (await response.json())["error"]["code"] == "AUTHENTICATION_ERROR"
    # The admin key is no API key, and with the admin API on every /api/* route needs one.
    assert (await client.post("/api/research", json={"query": "x"}, headers=ADMIN)).status == 401
    assert (await client.get("/api/tools")).status == 401


async def test_a_key_is_made_used_listed_without_its_secret_and_read_with_its_spend(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path
) -> None:
    client = await admin_gateway(
        make_gateway,
        tmp_path,
        gateway_api_keys="alice:alice-secret",
        gateway_prices_file=priced(tmp_path),
    )
    made = await new_key(client, name="team-a", metadata={"team": "research"})
    secret = made["secret"]
    assert secret.startswith("rgk_") and made["name"] == "team-a" and made["source"] == "admin"
    fake.add(Reply([Text("hi")], input_tokens=100, output_tokens=7))
    answer = await client.post("/api/research", json={"query": "x"}, headers=bearer(secret))
    assert answer.status == 200, await answer.text()
    await client.app[keys.SPEND].settled()

    listing = await client.get("/api/admin/keys", headers=ADMIN)
    text = await listing.text()
    stored = await client.app[keys.TENANTS].store.all()
    assert secret not in text and stored[0].digest not in text and "digest" not in text
    views = {view["name"]: view for view in (await listing.json())["keys"]}
    assert views["alice"]["source"] == "env" and views["alice"]["read_only"] is True
    assert views["team-a"]["metadata"] == {"team": "research"}

    shown = await (await client.get(f"/api/admin/keys/{made['key_id']}", headers=ADMIN)).json()
    assert "secret" not in shown
    today = shown["spend"]["today"]
    assert today["runs"] == 1 and today["input_tokens"] == 100 and today["output_tokens"] == 7
    assert today["usd"] == pytest.approx(100 * 0.001 + 7 * 0.002)
    assert today["by_model"][MODEL]["runs"] == 1
    assert shown["spend"]["month"]["usd"] == today["usd"]
    own = await (await client.get("/api/keys/self", headers=bearer(secret))).json()
    assert own["name"] == "team-a" and own["spend"] == shown["spend"]
    alice = await (await client.get("/api/keys/self", headers=bearer("alice-secret"))).json()
    assert alice["source"] == "env" and alice["spend"]["today"]["runs"] == 0
    scrape = await (await client.get("/metrics")).text()
    assert f'gateway_key_runs_total{{key="team-a",kind="run",model="{MODEL}"}} 1.0' in scrape
    assert 'gateway_key_tokens_total{class="input",key="team-a"' in scrape


async def test_env_keys_are_read_only_and_names_are_unique(
    make_gateway: GatewayFactory, tmp_path: Path
) -> None:
    client = await admin_gateway(make_gateway, tmp_path, gateway_api_keys="alice:alice-secret")
    for method in ("PATCH", "DELETE"):
        response = await client.request(
            method, "/api/admin/keys/env:alice", json={"metadata": {}}, headers=ADMIN
        )
        assert response.status == 400
        assert (await response.json())["error"]["details"]["reason"] == "read_only"
    for name in ("alice", "anonymous", "bob", "bob"):
        response = await client.post("/api/admin/keys", json={"name": name}, headers=ADMIN)
        if name == "bob" and response.status == 201:
            continue
        assert response.status == 400
        assert (await response.json())["error"]["details"]["reason"] == "name_taken"


BAD_BODIES: list[Any] = [
    [],
    "x",
    {},
    {"name": ""},
    {"name": "a b"},
    {"name": "x" * 65},
    {"name": "ok", "extra": 1},
    {"name": "ok", "models": []},
    {"name": "ok", "models": ["bad model"]},
    {"name": "ok", "models": "claude"},
    {"name": "ok", "limits": {"runs_per_minute": -1}},
    {"name": "ok", "limits": {"runs_per_minute": "5"}},
    {"name": "ok", "limits": {"x": 1}},
    {"name": "ok", "limits": {"daily_usd": True}},
    {"name": "ok", "limits": []},
    {"name": "ok", "expires_at": "2001-01-01T00:00:00Z"},
    {"name": "ok", "expires_at": "soon"},
    {"name": "ok", "expires_at": "2099-01-01T00:00:00"},
    {"name": "ok", "metadata": []},
    {"name": "ok", "metadata": {"big": "x" * 5000}},
    {"name": 5},
]


async def test_bad_input_to_every_admin_route_is_a_400_and_stores_nothing(
    make_gateway: GatewayFactory, tmp_path: Path
) -> None:
    client = await admin_gateway(make_gateway, tmp_path)
    made = await new_key(client, name="kept", limits={"daily_tokens": 5})
    store = client.app[keys.TENANTS].store
    assert store is not None
    before = await store.all()
    path = f"/api/admin/keys/{made['key_id']}"
    for body in BAD_BODIES:
        for method, url in (("POST", "/api/admin/keys"), ("PATCH", path)):
            if method == "PATCH" and isinstance(body, dict) and body.get("name") == "ok":
                body = {k: v for k, v in body.items() if k != "name"}
            response = await client.request(method, url, json=body, headers=ADMIN)
            assert response.status == 400, (method, body, await response.text())
            assert (await response.json())["error"]["code"] == "VALIDATION_ERROR"
    not_json = await client.post(
        "/api/admin/keys", data=b"{", headers={**ADMIN, "Content-Type": "application/json"}
    )
    assert not_json.status == 400
    wrong_type = await client.post("/api/admin/keys", data=b"name=x", headers=ADMIN)
    assert wrong_type.status == 415
    for method in ("GET", "PATCH", "DELETE"):
        response = await client.request(
            method, "/api/admin/keys/key_unknown", json={"metadata": {}}, headers=ADMIN
        )
        assert response.status == 404
    assert await store.all() == before


async def test_a_key_runs_only_its_models_and_no_upstream_call_is_made_otherwise(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path
) -> None:
    client = await admin_gateway(make_gateway, tmp_path)
    other = await new_key(client, name="other-models", models=["claude-opus-5"])
    response = await client.post(
        "/api/stream", json={"query": "x"}, headers=bearer(other["secret"])
    )
    assert response.status == 403 and response.content_type == "application/json"
    error = (await response.json())["error"]
    assert error["code"] == "PERMISSION_ERROR" and error["details"]["reason"] == "model"
    assert fake.requests == []
    changed = await client.patch(
        f"/api/admin/keys/{other['key_id']}", json={"models": [MODEL]}, headers=ADMIN
    )
    assert (await changed.json())["models"] == [MODEL]
    fake.add(Reply([Text("hi")]))
    allowed = await client.post(
        "/api/research", json={"query": "x"}, headers=bearer(other["secret"])
    )
    assert allowed.status == 200


async def test_a_usd_budget_never_meets_an_unpriced_model(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path
) -> None:
    client = await admin_gateway(make_gateway, tmp_path)  # the fake's model has no price
    budgeted = await new_key(client, name="budgeted", limits={"monthly_usd": 5})
    response = await client.post(
        "/api/stream", json={"query": "x"}, headers=bearer(budgeted["secret"])
    )
    assert response.status == 400
    error = (await response.json())["error"]
    assert error["details"] == {"reason": "unpriced_model", "model": MODEL}
    assert MODEL in error["message"] and "GATEWAY_PRICES_FILE" in error["message"]
    assert fake.requests == []
    free = await new_key(client, name="free")  # no budget: runs, its dollars unknown
    fake.add(Reply([Text("hi")]))
    assert (
        await client.post("/api/research", json={"query": "x"}, headers=bearer(free["secret"]))
    ).status == 200


def test_a_global_usd_budget_on_an_unpriced_model_refuses_to_start(tmp_path: Path) -> None:

    settings = Settings(
        _env_file=None,
        anthropic_api_key="sk-test",
        gateway_upstream="anthropic",
        sdk_model="claude-unpriced-9",
        gateway_daily_usd_budget=5,
    )
    with pytest.raises(ValueError, match="claude-unpriced-9 has no price"):
        create_app(settings)


async def test_over_its_monthly_usd_a_key_is_refused(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path
) -> None:
    client = await admin_gateway(make_gateway, tmp_path, gateway_prices_file=priced(tmp_path))
    made = await new_key(client, name="thrifty", limits={"monthly_usd": 0.05})
    fake.add(Reply([Text("hi")], input_tokens=100, output_tokens=5))  # $0.11
    first = await client.post("/api/research", json={"query": "x"}, headers=bearer(made["secret"]))
    assert first.status == 200
    await client.app[keys.SPEND].settled()
    refused = await client.post("/api/stream", json={"query": "x"}, headers=bearer(made["secret"]))
    assert refused.status == 429 and "Retry-After" in refused.headers
    assert (await refused.json())["error"]["details"]["limit"] == "monthly_usd"
    raised = await client.patch(
        f"/api/admin/keys/{made['key_id']}", json={"limits": {"monthly_usd": 10}}, headers=ADMIN
    )
    assert (await raised.json())["limits"] == {"monthly_usd": 10}
    fake.add(Reply([Text("hi")]))
    again = await client.post("/api/research", json={"query": "x"}, headers=bearer(made["secret"]))
    assert again.status == 200


async def test_limits_differ_per_key(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path
) -> None:
    client = await admin_gateway(make_gateway, tmp_path, gateway_resume_grace_s=5.0)
    one = await new_key(client, name="one-at-a-time", limits={"concurrent_runs": 1})
    many = await new_key(client, name="many")
    fake.add(*(Reply([Text("word " * 100, chunk=5)], delay_s=0.01) for _ in range(3)))
    running = await client.post("/api/stream", json={"query": "x"}, headers=bearer(one["secret"]))
    assert running.status == 200
    second = await client.post("/api/stream", json={"query": "x"}, headers=bearer(one["secret"]))
    assert second.status == 429
    assert (await second.json())["error"]["details"]["limit"] == "concurrent"
    streams = [
        await client.post("/api/stream", json={"query": "x"}, headers=bearer(many["secret"]))
        for _ in range(2)
    ]
    assert [s.status for s in streams] == [200, 200]
    own = await (await client.get("/api/keys/self", headers=bearer(one["secret"]))).json()
    assert own["limits"]["concurrent_runs"] == 1
    for response in (running, *streams):
        await read_events(response)


async def test_revoking_ends_the_keys_runs_and_refuses_it_everywhere(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    client = await admin_gateway(
        make_gateway, tmp_path, gateway_resume_grace_s=5.0, gateway_audit_log=str(audit)
    )
    made = await new_key(client, name="leaked")
    fake.add(Reply([Text("word " * 400, chunk=5)], delay_s=0.01))
    response = await client.post("/api/stream", json={"query": "x"}, headers=bearer(made["secret"]))
    events = iter_events(response)
    run_id = (await anext(events))["run_id"]
    revoked = await client.delete(f"/api/admin/keys/{made['key_id']}", headers=ADMIN)
    assert (await revoked.json())["status"] == "revoked"
    rest = [event async for event in events]
    assert rest[-1]["type"] == "error" and rest[-1]["error"]["code"] == "KEY_REVOKED"
    for attempt in (
        client.get(f"/api/stream/{run_id}", headers=bearer(made["secret"])),
        client.get("/api/keys/self", headers=bearer(made["secret"])),
        client.post("/api/research", json={"query": "x"}, headers=bearer(made["secret"])),
    ):
        assert (await attempt).status == 401
    again = await client.patch(
        f"/api/admin/keys/{made['key_id']}", json={"metadata": {}}, headers=ADMIN
    )
    assert again.status == 400 and (await again.json())["error"]["details"]["reason"] == "revoked"
    shown = await (await client.get(f"/api/admin/keys/{made['key_id']}", headers=ADMIN)).json()
    assert shown["revoked_at"] is not None and shown["spend"]["today"]["runs"] == 1
    await client.app[keys.AUDIT].close()  # flush
    lines = [orjson.loads(line) for line in audit.read_bytes().splitlines()]
    admin_lines = [line for line in lines if line["event"].startswith("admin_key_")]
    assert [line["event"] for line in admin_lines] == [
        "admin_key_create",
        "admin_key_revoke",
        "admin_key_read",
    ]
    assert all(line["name"] == "leaked" for line in admin_lines[:2])
    assert made["secret"] not in audit.read_text()


async def test_an_expired_key_is_refused(make_gateway: GatewayFactory, tmp_path: Path) -> None:
    client = await admin_gateway(make_gateway, tmp_path)
    made = await new_key(client, name="brief", expires_at="2099-01-01T00:00:00+00:00")
    assert (await client.get("/api/keys/self", headers=bearer(made["secret"]))).status == 200
    store = client.app[keys.TENANTS].store
    assert store is not None

    stored = await store.get(made["key_id"])
    assert stored is not None
    await store.put(dataclasses.replace(stored, expires_at="2001-01-01T00:00:00+00:00"))
    await client.app[keys.TENANTS].refresh()
    assert (await client.get("/api/keys/self", headers=bearer(made["secret"]))).status == 401


async def test_a_change_on_the_store_reaches_a_worker_by_its_poll(
    make_gateway: GatewayFactory, tmp_path: Path
) -> None:
    """Two apps on one SQLite file stand for two workers: a revocation made through one is
    seen by the other within its poll (0.25 s), with no request to prompt it."""
    first = await admin_gateway(make_gateway, tmp_path)
    second = await admin_gateway(make_gateway, tmp_path)
    made = await new_key(first, name="shared")
    assert (await second.get("/api/keys/self", headers=bearer(made["secret"]))).status == 200
    await first.delete(f"/api/admin/keys/{made['key_id']}", headers=ADMIN)
    await asyncio.sleep(0.6)
    assert await second.app[keys.TENANTS].identify(made["secret"]) is None


async def test_a_revoked_keys_runs_are_looked_for_again_for_a_while() -> None:
    """A run of a revoked key that a worker takes over after the revocation (its own
    worker died) is ended by the next polls: each hands the key over again for a minute,
    on a worker that saw it revoked and on one that started after."""

    store = MemoryKeys()
    now = "2026-12-05T00:00:00.000Z"
    await store.add(StoredKey("key_1", "leaked", "d1", now))
    handed: list[str] = []
    seen = Tenants(KeyRing(), store, b"s" * 32, refresh_s=0.02, on_revoked=handed.append)
    await seen.start()
    old = await store.get("key_1")
    assert old is not None

    revoked_at = datetime.now(UTC).isoformat()
    await store.put(dataclasses.replace(old, revoked_at=revoked_at))
    later: list[str] = []
    fresh = Tenants(KeyRing(), store, b"s" * 32, refresh_s=0.02, on_revoked=later.append)
    await fresh.start()
    await asyncio.sleep(0.2)
    await seen.close()
    await fresh.close()
    assert handed.count("leaked") > 2 and later.count("leaked") > 2
