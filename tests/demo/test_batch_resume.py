"""A batch whose worker stops between rounds finishes on another, from its journal: no
question lost, no request submitted twice, every answer the one `/api/research` gives."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from demo_model.batch_store import BatchRequest
from gateway.batches.journal import KeptJournal
from gateway.http import keys
from tests.demo.test_batch_http import QUESTIONS, demo_app, make_client, start, store
from tests.demo.test_batch_research import MakeClient, comparable, finished, results
from tests.test_batches_faults import call

__all__ = ["demo_app", "make_client"]  # the fixtures this module uses


async def test_a_batch_stopped_between_rounds_finishes_elsewhere(
    make_client: MakeClient, demo_app: tuple[web.Application, str]
) -> None:
    demo_store = store(demo_app)
    demo_store.processing_s = 0.3  # a round in flight when the first worker stops
    answer = demo_store.process
    processed: list[str] = []

    async def counting(request: BatchRequest) -> dict[str, Any]:
        processed.append(request.custom_id)
        return await answer(request)

    demo_store.process = counting
    first = await make_client()
    journal = KeptJournal()
    first.app[keys.BATCHES].journal = journal
    batch_id = await start(first, questions=QUESTIONS)
    async with asyncio.timeout(20):
        while True:
            rounds = (await (await first.get(f"/api/batches/{batch_id}")).json())["rounds"]
            if len(rounds) >= 2 and rounds[1]["state"] == "submitted":
                break
            await asyncio.sleep(0.01)
    journal.stop()  # the first worker dies: it writes nothing more
    await first.app[keys.BATCHES].shutdown()
    record = journal.records[batch_id]
    assert len(record.checkpoints) == len(QUESTIONS) and not record.done

    second = await make_client()
    planner = second.app[keys.PLANNER]
    configs = [await planner.config(request) for request in record.run_requests()]
    second.app[keys.BATCHES].resume(record, configs)
    progress = await finished(second, batch_id)
    assert progress["counts"] == {"completed": len(QUESTIONS)}
    lines = await results(second, batch_id)
    for question, line in zip(QUESTIONS, lines, strict=True):
        live = await second.post("/api/research", json={"query": question})
        assert comparable(line) == comparable(await live.json()), question
    assert len(processed) == len(set(processed))  # no request submitted twice
    expected = {f"q{i}-t{t}" for i, line in enumerate(lines) for t in range(1, line["turns"] + 1)}
    assert {call(cid) for cid in processed} == expected  # and none lost
