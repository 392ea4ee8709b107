"""A revoked key's batches end on every worker, for real: two `python -m gateway`
processes with the admin API on one redis-server of the test's own, both on one demo
Messages + Batches API served by the test. The key has a batch driven by each worker; it
is revoked on one of them, and each worker (through its poll of the key store) cancels
its own: every question ends `KEY_REVOKED`, both Message Batches are cancelled, the key's
reads are 401."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from pytest_aiohttp import AiohttpServer

from demo_model import create_demo_app
from demo_model.batches import BATCHES
from tests.demo.test_batch_research import priced
from tests.procs.gateway import GatewayProcess, gateway_process
from tests.procs.redis import redis_server

pytestmark = pytest.mark.redis

ADMIN_KEY = "admin-secret-0123456789"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
QUESTIONS = ["What was Apple's net income last year?", "What is the CIK of Tesla?"]


async def post(
    session: aiohttp.ClientSession, url: str, body: dict[str, Any], headers: dict[str, str]
) -> dict[str, Any]:
    async with session.post(url, json=body, headers=headers) as response:
        assert response.status in (201, 202), await response.text()
        answer: dict[str, Any] = await response.json()
        return answer


async def in_round(
    session: aiohttp.ClientSession, worker: GatewayProcess, batch_id: str, key: dict[str, str]
) -> None:
    async with asyncio.timeout(60):
        while True:
            async with session.get(f"{worker.url}/api/batches/{batch_id}", headers=key) as r:
                rounds = (await r.json())["rounds"]
            if any(round_["state"] == "submitted" for round_ in rounds):
                return
            await asyncio.sleep(0.05)


async def batch_end(audit: Path, batch_id: str) -> dict[str, Any]:
    """The batch's `batch_end` audit line, once written."""
    async with asyncio.timeout(30):
        while True:
            for line in map(orjson.loads, await asyncio.to_thread(_lines, audit)):
                if line["event"] == "batch_end" and line["batch_id"] == batch_id:
                    found: dict[str, Any] = line
                    return found
            await asyncio.sleep(0.05)


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines() if path.exists() else []


async def test_revoking_a_key_ends_its_batches_on_every_worker(
    tmp_path: Path, aiohttp_server: AiohttpServer
) -> None:
    demo = create_demo_app(delay_s=0)
    demo_url = str((await aiohttp_server(demo)).make_url("")).rstrip("/")
    demo[BATCHES].processing_s = 120.0  # each round in flight until cancelled
    async with redis_server(tmp_path) as redis:
        env = {
            "REDIS_URL": redis.url, "REDIS_KEY_PREFIX": f"t{uuid.uuid4().hex[:6]}:",
            "GATEWAY_UPSTREAM": "anthropic", "ANTHROPIC_API_KEY": "sk-demo",
            "ANTHROPIC_BASE_URL": demo_url, "SDK_MODEL": "demo",
            "GATEWAY_PRICES_FILE": priced(tmp_path), "SEC_SOURCE": "offline",
            "SEARCH_BACKEND": "offline", "GATEWAY_BATCH_POLL_S": "0.05",
            "GATEWAY_ADMIN_KEY": ADMIN_KEY,
        }  # fmt: skip
        audits = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
        async with (
            gateway_process(tmp_path, **env, GATEWAY_AUDIT_LOG=str(audits[0])) as a,
            gateway_process(tmp_path, **env, GATEWAY_AUDIT_LOG=str(audits[1])) as b,
            aiohttp.ClientSession() as session,
        ):
            made = await post(session, f"{a.url}/api/admin/keys", {"name": "alice"}, ADMIN)
            alice = {"Authorization": f"Bearer {made['secret']}"}
            batches = []
            for worker in (a, b):  # one batch driven by each worker
                body = {"questions": QUESTIONS}
                batch_id = (await post(session, f"{worker.url}/api/batches", body, alice))[
                    "batch_id"
                ]
                await in_round(session, worker, batch_id, alice)
                batches.append(batch_id)

            async with session.delete(
                f"{b.url}/api/admin/keys/{made['key_id']}", headers=ADMIN
            ) as revoked:
                assert revoked.status == 200
            for audit, batch_id in zip(audits, batches, strict=True):
                ended = await batch_end(audit, batch_id)
                assert ended["key"] == "alice" and ended["outcome"] == "cancelled"
                assert ended["counts"] == {"KEY_REVOKED": len(QUESTIONS)}
            api_batches = demo[BATCHES].page(before_id=None, after_id=None, limit=10)[0]
            assert len(api_batches) == 2
            assert all(api.cancel_initiated_at is not None for api in api_batches)
            for worker, batch_id in zip((a, b), batches, strict=True):
                async with session.get(
                    f"{worker.url}/api/batches/{batch_id}", headers=alice
                ) as response:
                    assert response.status == 401
