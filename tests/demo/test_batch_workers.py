"""A batch outlives its worker, for real: two `python -m gateway` processes on one
redis-server of the test's own, both on one demo Messages + Batches API (served by the
test, which counts the custom_ids submitted to it). The worker driving a batch is killed
(SIGKILL) between rounds; the other takes the batch over and finishes it: every question
answered as `/api/research` answers it alone, each custom_id submitted once, the usage
counted once."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from pytest_aiohttp import AiohttpServer

from demo_model import create_demo_app
from demo_model.batches import BATCHES
from tests.demo.test_batch_redis import count_submitted
from tests.demo.test_batch_research import comparable, priced
from tests.procs.gateway import gateway_process
from tests.procs.redis import redis_server
from tests.test_batches_faults import call

pytestmark = pytest.mark.redis

QUESTIONS = ["What was Apple's net income last year?", "What is the CIK of Tesla?",
             "Show NVIDIA's EPS history", "How has Microsoft's revenue grown?",
             "What is Meta's gross margin?", "Find Apple's 10-K filings since 2020"]  # fmt: skip
TAKEOVER_S = 2.0


async def get(session: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    async with session.get(url) as response:
        assert response.status == 200, await response.text()
        body: dict[str, Any] = await response.json()
        return body


@pytest.mark.parametrize(
    ("rounds", "state"),
    [(1, "ended"), (2, "submitted")],
    ids=["round-1-answered", "round-2-in-flight"],
)
async def test_a_killed_workers_batch_finishes_on_another(
    tmp_path: Path, aiohttp_server: AiohttpServer, rounds: int, state: str
) -> None:
    demo = create_demo_app(delay_s=0)
    submitted = count_submitted(demo)
    live_calls: list[str] = []

    @web.middleware
    async def live(request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path == "/v1/messages":
            live_calls.append(request.path)
        response: web.StreamResponse = await handler(request)
        return response

    demo.middlewares.append(live)
    demo_url = str((await aiohttp_server(demo)).make_url("")).rstrip("/")
    demo[BATCHES].processing_s = 0.5  # each round in flight for a while
    async with redis_server(tmp_path) as redis:
        env = {
            "REDIS_URL": redis.url, "REDIS_KEY_PREFIX": f"t{uuid.uuid4().hex[:6]}:",
            "GATEWAY_UPSTREAM": "anthropic", "ANTHROPIC_API_KEY": "sk-demo",
            "ANTHROPIC_BASE_URL": demo_url, "SDK_MODEL": "demo",
            "GATEWAY_PRICES_FILE": priced(tmp_path), "SEC_SOURCE": "offline",
            "SEARCH_BACKEND": "offline", "GATEWAY_BATCH_POLL_S": "0.05",
            "GATEWAY_TAKEOVER_S": str(TAKEOVER_S),
        }  # fmt: skip
        async with (
            gateway_process(tmp_path, **env) as a,
            gateway_process(tmp_path, **env) as b,
            aiohttp.ClientSession() as session,
        ):
            async with session.post(a.url + "/api/batches", json={"questions": QUESTIONS}) as r:
                assert r.status == 202, await r.text()
                batch_id = (await r.json())["batch_id"]
            async with asyncio.timeout(60):
                while True:
                    progress = await get(session, f"{a.url}/api/batches/{batch_id}")
                    recorded = progress["rounds"]
                    if len(recorded) >= rounds and recorded[rounds - 1]["state"] == state:
                        break
                    await asyncio.sleep(0.01)
            assert a.process is not None
            a.process.kill()
            killed_at = time.monotonic()
            assert progress["state"] == "running"

            async with asyncio.timeout(60):  # B reads the journal, then drives the batch
                while (progress := await get(session, f"{b.url}/api/batches/{batch_id}"))[
                    "state"
                ] != "ended":
                    await asyncio.sleep(0.05)
            took_s = time.monotonic() - killed_at
            async with session.get(f"{b.url}/api/batches/{batch_id}/results") as response:
                assert response.status == 200
                lines = [orjson.loads(line) for line in (await response.read()).splitlines()]
            assert live_calls == []  # every model call went through Message Batches
            assert progress["counts"] == {"completed": len(QUESTIONS)}
            assert [line["index"] for line in lines] == list(range(len(QUESTIONS)))

            assert len(submitted) == len(set(submitted)), submitted  # none submitted twice
            expected = {f"q{i}-t{t}" for i, line in enumerate(lines)
                        for t in range(1, line["turns"] + 1)}  # fmt: skip
            assert {call(cid) for cid in submitted} == expected  # and none lost
            for key in ("input_tokens", "output_tokens", "batch_requests"):  # counted once
                assert progress["usage"][key] == sum(line["usage"][key] for line in lines), key
            assert progress["usage"]["batch_requests"] == len(submitted)
            for question, line in zip(QUESTIONS, lines, strict=True):
                async with session.post(f"{b.url}/api/research", json={"query": question}) as r:
                    assert comparable(line) == comparable(await r.json()), question
            assert took_s < 30
            assert "taking" in b.output() and batch_id in b.output()
