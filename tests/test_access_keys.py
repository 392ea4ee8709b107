"""Named keys: parsing, the key file of SHA-256 digests, the auth middleware, the caller's
name on spans, and run ownership on one process (across processes: test_access_redis.py)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from pytest_aiohttp import AiohttpClient

from gateway.access.keyring import KeyFileError, load_keyring, parse_keys
from gateway.http.app import create_app
from gateway.http.auth import install_log_key
from gateway.runs.tools import StaticToolset
from tests.conftest import GatewayFactory, iter_events, read_events, settings_for
from tests.fakes.anthropic import FakeAnthropic, Reply, Text
from tests.test_telemetry import by_name, memory_provider
from tools.registry import ToolRegistry

ALICE = {"Authorization": "Bearer alice-secret"}
BOB = {"Authorization": "Bearer bob-secret"}
SLOW = "word " * 200


def sha(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def test_pairs_are_named_and_bare_keys_take_their_position() -> None:
    ring = load_keyring(("alice:k-a", "k-bare", "bob:k-b:with-colon"), None)
    assert ring.names() == ["alice", "key2", "bob"]
    assert ring.identify("k-a") == "alice"
    assert ring.identify("k-bare") == "key2"
    assert ring.identify("k-b:with-colon") == "bob"
    assert ring.identify("alice:k-a") is None and ring.identify("") is None
    # A value whose "name" part is not a name is a bare key, colon and all.
    assert parse_keys(("not a name:xyz",))[0][0] == "key1"


def test_the_key_file_holds_digests_and_rejects_bad_lines(tmp_path: Path) -> None:
    good = tmp_path / "keys"
    good.write_text(f"# who may call\ncarol {sha('c-key')}\n\ndave {sha('d-key').upper()}\n")
    ring = load_keyring(("alice:a",), str(good))
    assert ring.names() == ["alice", "carol", "dave"]
    assert ring.identify("d-key") == "dave" and ring.identify(sha("c-key")) is None
    bad = tmp_path / "bad"
    bad.write_text("carol not-hex\n")
    with pytest.raises(KeyFileError, match="line 1"):
        load_keyring((), str(bad))
    with pytest.raises(KeyFileError, match="unique: carol"):
        load_keyring(("carol:x",), str(good))
    with pytest.raises(KeyFileError, match="missing"):
        load_keyring((), str(tmp_path / "missing"))


async def test_a_named_key_is_the_caller_on_the_spans(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path
) -> None:
    keyfile = tmp_path / "keys"
    keyfile.write_text(f"bob {sha('bob-secret')}\n")
    provider, exporter = memory_provider()
    client = await make_gateway(
        tracer_provider=provider,
        gateway_api_keys="alice:alice-secret",
        gateway_api_keys_file=str(keyfile),
    )
    fake.add(Reply([Text("hi")]))
    unauthorised = await client.post("/api/stream", json={"query": "x"})
    assert unauthorised.status == 401
    assert (await unauthorised.json())["error"]["code"] == "AUTHENTICATION_ERROR"
    response = await client.post("/api/stream", json={"query": "x"}, headers=BOB)
    assert (await read_events(response))[-1]["outcome"] == "completed"
    await asyncio.sleep(0.05)
    spans = exporter.get_finished_spans()
    refused, server = by_name(spans, "POST /api/stream")
    assert refused.attributes is not None and "enduser.id" not in refused.attributes
    [agent] = by_name(spans, "invoke_agent")
    assert server.attributes is not None and agent.attributes is not None
    assert server.attributes["enduser.id"] == agent.attributes["enduser.id"] == "bob"
    assert (await client.get("/health")).status == 200  # outside /api/: no key needed


async def test_only_the_owner_reattaches_and_cancels(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(
        gateway_api_keys="alice:alice-secret,bob:bob-secret", gateway_resume_grace_s=5.0
    )
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.01))
    response = await client.post("/api/stream", json={"query": "x"}, headers=ALICE)
    first = await anext(iter_events(response))
    run_id = first["run_id"]
    for attempt in (
        client.get(f"/api/stream/{run_id}", headers=BOB),
        client.post(f"/api/runs/{run_id}/cancel", headers=BOB),
    ):
        denied = await attempt
        assert denied.status == 404
        assert (await denied.json())["error"]["code"] == "NOT_FOUND"
    follower = await client.get(f"/api/stream/{run_id}", headers=ALICE)
    assert follower.status == 200
    cancel = await client.post(f"/api/runs/{run_id}/cancel", headers=ALICE)
    assert (await cancel.json())["cancelled"] is True
    assert (await read_events(follower))[-1]["outcome"] == "cancelled"
    response.close()


async def test_without_keys_everybody_is_one_anonymous_caller(
    gateway: Any, fake: FakeAnthropic
) -> None:
    fake.add(Reply([Text("hi")]))
    response = await gateway.post("/api/stream", json={"query": "x"})
    run_id = (await read_events(response))[0]["run_id"]
    again = await gateway.get(f"/api/stream/{run_id}")
    assert again.status == 200 and (await read_events(again))[-1]["type"] == "final"


async def test_log_records_carry_the_callers_name(
    fake_server: TestServer, registry: ToolRegistry, aiohttp_client: AiohttpClient,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    async def whoami(request: web.Request) -> web.Response:
        logging.getLogger("test.whoami").info("asked")
        return web.Response(text="ok")

    settings = settings_for(fake_server, gateway_api_keys="alice:alice-secret")
    app = create_app(settings, toolset=StaticToolset(registry, backends={}))
    app.router.add_get("/api/whoami", whoami)  # a probe behind the real middlewares
    client = await aiohttp_client(app)
    previous = logging.getLogRecordFactory()
    install_log_key()
    try:
        with caplog.at_level(logging.INFO):
            assert (await client.get("/api/whoami", headers=ALICE)).status == 200
            assert (await client.get("/api/whoami")).status == 401
            logging.getLogger("test.whoami").info("outside")
    finally:
        logging.setLogRecordFactory(previous)
    seen = [(r.name, getattr(r, "key", None)) for r in caplog.records]
    assert [key for name, key in seen if name == "test.whoami"] == ["alice", "-"]
    assert [key for name, key in seen if name == "aiohttp.access"] == ["alice", "-"]
