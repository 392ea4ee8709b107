"""A worker killed (SIGKILL) at each step of a round, with two keys' batches of the same
shape in flight: two `python -m gateway` processes on a redis-server of the test's own and
one demo Messages + Batches API served by the test, which holds alice's round at the step
(its create before or after the API made the batch, a poll, the results) while the worker
driving it is killed. Bob's batch goes out on the other worker meanwhile, of the same size
and in the window alice's lookup reads. Both end on the survivor with every question
answered from its own request (as `/api/research` answers it) and each custom_id
submitted once."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from pytest_aiohttp import AiohttpServer

from demo_model import create_demo_app
from demo_model.batches import BATCHES
from tests.demo.test_batch_http import ALICE, BOB, KEYS
from tests.demo.test_batch_redis import count_submitted
from tests.demo.test_batch_research import comparable, priced
from tests.procs.gateway import gateway_process
from tests.procs.redis import redis_server
from tests.test_batches_faults import call

pytestmark = pytest.mark.redis

ALICES = ["What was Apple's net income last year?", "Show NVIDIA's EPS history"]
BOBS = ["What is the CIK of Tesla?", "What is Meta's gross margin?"]
STEPS = ["before-journal", "before-create", "after-create", "polling", "reading-results"]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Gate:
    """Holds alice's round at one step until the test has killed her worker."""

    def __init__(self, step: str) -> None:
        self.step = step
        self.key = ""  # alice's gateway batch, once the test knows it
        self.known = asyncio.Event()
        self.held = asyncio.Event()
        self.release = asyncio.Event()
        self.ours: set[str] = set()  # the API batches of alice's rounds

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        parts = request.path.strip("/").split("/")  # v1 messages batches [id] [results]
        if parts[:3] != ["v1", "messages", "batches"] or self.held.is_set():
            return await handler(request)
        if len(parts) == 3 and request.method == "POST":
            return await self._create(request, handler)
        if len(parts) >= 4 and parts[3] in self.ours:
            return await self._read(request, handler, results=parts[-1] == "results")
        return await handler(request)

    async def _create(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        body = orjson.loads(await request.read())
        await self.known.wait()
        alices = any(self.key in r["custom_id"] for r in body["requests"])
        if alices and self.step == "before-create":
            await self._hold()  # the API never sees this create
            error = {"type": "error", "error": {"type": "api_error", "message": "held"}}
            return web.json_response(error, status=500)
        response = await handler(request)
        if alices:
            assert isinstance(response, web.Response) and isinstance(response.body, bytes)
            self.ours.add(orjson.loads(response.body)["id"])
            if self.step == "after-create":
                await self._hold()  # made (and billed), its answer never arrives
        return response

    async def _read(
        self, request: web.Request, handler: Handler, *, results: bool
    ) -> web.StreamResponse:
        if (self.step == "polling" and not results) or (self.step == "reading-results" and results):
            await self._hold()
        elif self.step == "before-journal" and results:
            response = await handler(request)
            self.held.set()  # killed as it goes on from its results to the next round
            return response
        return await handler(request)

    async def _hold(self) -> None:
        self.held.set()
        await self.release.wait()


async def get(session: aiohttp.ClientSession, url: str, key: dict[str, str]) -> Any:
    async with session.get(url, headers=key) as response:
        assert response.status == 200, await response.text()
        if response.content_type == "application/x-ndjson":
            return [orjson.loads(line) for line in (await response.read()).splitlines()]
        return await response.json()


async def post(session: aiohttp.ClientSession, url: str, key: dict[str, str], body: Any) -> Any:
    async with session.post(url, json=body, headers=key) as response:
        assert response.status in (200, 202), await response.text()
        return await response.json()


async def ended(session: aiohttp.ClientSession, url: str, key: dict[str, str]) -> Any:
    async with asyncio.timeout(90):
        while (progress := await get(session, url, key))["state"] != "ended":
            await asyncio.sleep(0.05)
    return progress


@pytest.mark.parametrize("step", STEPS)
async def test_a_worker_killed_at_each_step_of_a_round(
    tmp_path: Path, aiohttp_server: AiohttpServer, step: str
) -> None:
    demo = create_demo_app(delay_s=0)
    gate = Gate(step)
    demo.middlewares.append(gate.middleware)  # outermost: a held create is never counted
    submitted = count_submitted(demo)
    demo_url = str((await aiohttp_server(demo)).make_url("")).rstrip("/")
    demo[BATCHES].processing_s = 0.3
    async with redis_server(tmp_path) as redis:
        env = {
            "REDIS_URL": redis.url, "REDIS_KEY_PREFIX": f"t{uuid.uuid4().hex[:6]}:",
            "GATEWAY_UPSTREAM": "anthropic", "ANTHROPIC_API_KEY": "sk-demo",
            "ANTHROPIC_BASE_URL": demo_url, "SDK_MODEL": "demo", "GATEWAY_API_KEYS": KEYS,
            "GATEWAY_PRICES_FILE": priced(tmp_path), "SEC_SOURCE": "offline",
            "SEARCH_BACKEND": "offline", "GATEWAY_BATCH_POLL_S": "0.05",
            "GATEWAY_TAKEOVER_S": "2", "GATEWAY_BATCH_CREATE_TIMEOUT_S": "1",
            "GATEWAY_BATCH_CLOCK_SKEW_S": "1",
        }  # fmt: skip
        async with (
            gateway_process(tmp_path, **env) as a,
            gateway_process(tmp_path, **env) as b,
            aiohttp.ClientSession() as session,
        ):
            alice = (await post(session, a.url + "/api/batches", ALICE, {"questions": ALICES}))[
                "batch_id"
            ]
            gate.key = alice.removeprefix("batch_")
            gate.known.set()
            async with asyncio.timeout(30):
                await gate.held.wait()
            assert a.process is not None
            a.process.kill()
            await a.process.wait()
            # Bob's batch of the same shape goes out now, in the window of alice's round.
            bob = (await post(session, b.url + "/api/batches", BOB, {"questions": BOBS}))[
                "batch_id"
            ]
            gate.release.set()

            for batch_id, key, questions in ((alice, ALICE, ALICES), (bob, BOB, BOBS)):
                url = f"{b.url}/api/batches/{batch_id}"
                progress = await ended(session, url, key)
                assert progress["counts"] == {"completed": len(questions)}, (step, batch_id)
                lines = await get(session, url + "/results", key)
                for question, line in zip(questions, lines, strict=True):
                    live = await post(session, b.url + "/api/research", key, {"query": question})
                    assert comparable(line) == comparable(live), (step, question)
                mine = {call(c) for c in submitted if batch_id.removeprefix("batch_") in c}
                turns = [line["turns"] for line in lines]
                assert mine == {f"q{i}-t{t}" for i, n in enumerate(turns) for t in range(1, n + 1)}
            assert len(submitted) == len(set(submitted)), submitted  # each billed once
            assert f"taking {alice} over" in b.output()
