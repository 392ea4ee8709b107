"""Batches of keys made by the admin API, on one process against the demo's Message
Batches API on a server of the test's own: a batch is admitted as a run is (the key's
models, the unpriced-model rule, its limits), and revoking a key cancels its running
batches, every unfinished question ending with `KEY_REVOKED`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient, AiohttpServer

from demo_model import create_demo_app
from demo_model.batch_store import BatchRequest, BatchStore
from demo_model.batches import BATCHES
from gateway import sse
from gateway.batches.batch import Batch
from gateway.fold import fold
from gateway.http import keys
from gateway.http.app import create_app
from tests.conftest import read_events
from tests.demo.conftest import demo_settings
from tests.demo.test_batch_research import MakeClient, priced

Client = TestClient[Any, Any]
ADMIN_KEY = "admin-secret-0123456789"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
QUESTIONS = ["What was Apple's net income last year?", "What is the CIK of Tesla?",
             "Show NVIDIA's EPS history"]  # fmt: skip


@pytest.fixture
async def demo_app(aiohttp_server: AiohttpServer) -> tuple[web.Application, str]:
    app = create_demo_app(delay_s=0)
    server = await aiohttp_server(app)
    return app, str(server.make_url("")).rstrip("/")


@pytest.fixture
async def make_client(
    aiohttp_client: AiohttpClient, demo_app: tuple[web.Application, str], tmp_path: Path
) -> MakeClient:
    async def make(**overrides: Any) -> Client:
        values: dict[str, Any] = {
            "gateway_prices_file": priced(tmp_path),
            "gateway_upstream": "anthropic",
            "anthropic_api_key": "sk-demo",
            "anthropic_base_url": demo_app[1],
            "sdk_model": "demo",
            "gateway_batch_poll_s": 0.02,
            "gateway_admin_key": ADMIN_KEY,
            "gateway_keys_db": str(tmp_path / "keys.db"),
            "gateway_keys_refresh_s": 0.05,
            **overrides,
        }
        return await aiohttp_client(create_app(demo_settings(**values)))

    return make


def store(demo_app: tuple[web.Application, str]) -> BatchStore:
    return demo_app[0][BATCHES]


def api_batches(demo_app: tuple[web.Application, str]) -> list[Any]:
    return store(demo_app).page(before_id=None, after_id=None, limit=10)[0]


async def new_key(client: Client, **body: Any) -> tuple[str, dict[str, str]]:
    """A key made by the admin API: its id and its `Authorization` header."""
    response = await client.post("/api/admin/keys", json=body, headers=ADMIN)
    assert response.status == 201, await response.text()
    made = await response.json()
    return made["key_id"], {"Authorization": f"Bearer {made['secret']}"}


async def start(client: Client, headers: dict[str, str], **body: Any) -> str:
    response = await client.post("/api/batches", json=body, headers=headers)
    assert response.status == 202, await response.text()
    batch_id: str = (await response.json())["batch_id"]
    return batch_id


async def in_round(client: Client, batch_id: str, headers: dict[str, str]) -> None:
    """Wait until the batch's first round is submitted (its Message Batch in flight)."""
    async with asyncio.timeout(10):
        while True:
            progress = await (await client.get(f"/api/batches/{batch_id}", headers=headers)).json()
            if any(r["state"] == "submitted" for r in progress["rounds"]):
                return
            await asyncio.sleep(0.02)


async def ended(client: Client, batch_id: str) -> Batch:
    """The batch as this worker drives it, once ended (its key may read it no more)."""
    batch: Batch | None = client.app[keys.BATCHES].get(batch_id)
    assert batch is not None
    async with asyncio.timeout(10):
        while not batch.done:
            await asyncio.sleep(0.02)
    return batch


async def test_revoking_a_key_cancels_its_batches_with_key_revoked(
    make_client: MakeClient, demo_app: tuple[web.Application, str]
) -> None:
    store(demo_app).processing_s = 30.0
    client = await make_client()
    key_id, alice = await new_key(client, name="alice")
    _, bob = await new_key(client, name="bob")
    batch_id = await start(client, alice, questions=QUESTIONS)
    others = await start(client, bob, questions=QUESTIONS[:1])
    await in_round(client, batch_id, alice)
    await in_round(client, others, bob)
    revoked = await client.delete(f"/api/admin/keys/{key_id}", headers=ADMIN)
    assert revoked.status == 200

    batch = await ended(client, batch_id)
    assert batch.outcome == "cancelled"
    progress = batch.progress()
    assert progress["counts"] == {"KEY_REVOKED": 3}
    assert [q["outcome"] for q in progress["questions"]] == ["KEY_REVOKED"] * 3
    for question in batch.questions:
        folded = fold(sse.parse_frames(question.run.log.read(0)))
        assert folded["error"]["code"] == "KEY_REVOKED"
        assert folded["error"]["details"] == {"key": "alice"}
    statuses = [e for e in sse.parse_frames(batch.log.read(0)) if e["type"] == "batch_status"]
    assert {"state": "cancelling", "error": "KEY_REVOKED"}.items() <= statuses[-1].items()
    cancelled = [b.id for b in api_batches(demo_app) if b.cancel_initiated_at is not None]
    assert len(cancelled) == 1  # alice's Message Batch, not bob's

    for path in ("", "/events", "/results"):
        response = await client.get(f"/api/batches/{batch_id}{path}", headers=alice)
        assert response.status == 401, path
    assert (await client.post(f"/api/batches/{batch_id}/cancel", headers=alice)).status == 401
    bobs = await (await client.get(f"/api/batches/{others}", headers=bob)).json()
    assert bobs["state"] == "running"  # another key's batch goes on
    shown = await (await client.get(f"/api/admin/keys/{key_id}", headers=ADMIN)).json()
    assert shown["spend"]["today"]["batch_questions"] == 3


async def test_a_revoked_keys_batch_ends_its_unfinished_questions_only(
    make_client: MakeClient, demo_app: tuple[web.Application, str]
) -> None:
    """Question 0 (two turns in the demo) ends first; the next round, of the other two
    (three turns and more), never answers: the key is revoked then, and only they end
    `KEY_REVOKED`."""
    answer = store(demo_app).process
    client = await make_client()
    key_id, alice = await new_key(client, name="alice")
    questions = [
        "What is the CIK of Apple?",
        "What are Apple's risk factors?",
        "Find Apple's 10-K filings since 2020",
    ]
    batch_id = await start(client, alice, questions=questions)
    batch = client.app[keys.BATCHES].get(batch_id)
    assert batch is not None

    async def held_once_the_first_is_done(request: BatchRequest) -> dict[str, Any]:
        if batch.questions[0].phase == "done":
            await asyncio.Event().wait()  # processing until cancelled
        return await answer(request)

    store(demo_app).process = held_once_the_first_is_done
    async with asyncio.timeout(30):
        while batch.questions[0].phase != "done" or not batch.rounds or not batch.rounds.in_flight:
            await asyncio.sleep(0.01)
    outcome = batch.questions[0].outcome
    assert outcome != "KEY_REVOKED" and all(q.phase != "done" for q in batch.questions[1:])
    await client.delete(f"/api/admin/keys/{key_id}", headers=ADMIN)
    await ended(client, batch_id)
    assert [q.outcome for q in batch.questions] == [outcome, "KEY_REVOKED", "KEY_REVOKED"]
    assert batch.progress()["counts"] == {outcome: 1, "KEY_REVOKED": 2}
    newest = api_batches(demo_app)[0]
    assert len(newest.requests) == 2 and newest.cancel_initiated_at is not None


async def test_a_batch_is_admitted_as_a_run_is(
    make_client: MakeClient, demo_app: tuple[web.Application, str]
) -> None:
    client = await make_client()
    _, other = await new_key(client, name="other-models", models=["claude-opus-5"])
    response = await client.post("/api/batches", json={"questions": QUESTIONS}, headers=other)
    assert response.status == 403
    error = (await response.json())["error"]
    assert error["code"] == "PERMISSION_ERROR" and error["details"]["reason"] == "model"
    assert api_batches(demo_app) == []  # nothing refused was submitted

    _, thrifty = await new_key(client, name="thrifty", limits={"monthly_usd": 0.000001})
    spent = await start(client, thrifty, questions=QUESTIONS[:1])
    await ended(client, spent)
    await client.app[keys.SPEND].settled()
    submitted = len(api_batches(demo_app))
    response = await client.post("/api/batches", json={"questions": QUESTIONS}, headers=thrifty)
    assert response.status == 429 and "Retry-After" in response.headers
    assert (await response.json())["error"]["details"]["limit"] == "monthly_usd"
    run = await client.post("/api/stream", json={"query": "x"}, headers=thrifty)
    assert run.status == 429  # the same budget refuses its runs
    assert len(api_batches(demo_app)) == submitted


async def test_a_running_batch_holds_one_of_its_keys_concurrent_runs(
    make_client: MakeClient, demo_app: tuple[web.Application, str]
) -> None:
    store(demo_app).processing_s = 30.0
    client = await make_client()
    _, one = await new_key(client, name="one-at-a-time", limits={"concurrent_runs": 1})
    batch_id = await start(client, one, questions=QUESTIONS[:1])
    again = await client.post("/api/batches", json={"questions": QUESTIONS}, headers=one)
    assert again.status == 429
    assert (await again.json())["error"]["details"]["limit"] == "concurrent"
    run = await client.post("/api/stream", json={"query": "x"}, headers=one)
    assert run.status == 429  # one gate for runs and batches
    cancelled = await client.post(f"/api/batches/{batch_id}/cancel", headers=one)
    assert cancelled.status == 200
    await ended(client, batch_id)
    store(demo_app).processing_s = 0.0
    freed = await client.post("/api/stream", json={"query": "x"}, headers=one)
    assert freed.status == 200
    await read_events(freed)


@pytest.mark.parametrize("by", ["revocation", "cancel"])
async def test_a_batch_ended_before_its_first_round_runs_none_of_its_questions(
    make_client: MakeClient, demo_app: tuple[web.Application, str], by: str
) -> None:
    """Revoked (or cancelled) while the batch is still being recorded (its journal's
    `begin` held back here): its questions start after that, and end at once."""
    client = await make_client()
    journal = client.app[keys.BATCHES].journal
    begin, held = journal.begin, asyncio.Event()

    async def held_begin(record: Any) -> None:
        await held.wait()
        await begin(record)

    journal.begin = held_begin
    key_id, alice = await new_key(client, name="alice")
    batch_id = await start(client, alice, questions=QUESTIONS)
    if by == "cancel":
        response = await client.post(f"/api/batches/{batch_id}/cancel", headers=alice)
        assert (await response.json())["cancelled"] is True
    else:
        await client.delete(f"/api/admin/keys/{key_id}", headers=ADMIN)
    batch: Batch | None = client.app[keys.BATCHES].get(batch_id)
    assert batch is not None
    async with asyncio.timeout(10):
        while batch.state == "running":
            await asyncio.sleep(0.01)
    held.set()
    await ended(client, batch_id)
    outcome = "cancelled" if by == "cancel" else "KEY_REVOKED"
    assert [q.outcome for q in batch.questions] == [outcome] * 3
    assert batch.outcome == "cancelled"
    assert api_batches(demo_app) == []  # no round went out
