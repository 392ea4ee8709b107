"""The demo's runs: the concatenation of each run's `delta` texts is its `final.result`,
byte for byte, for every held-out question (answerable or not), each follow-up in its
session, and the demo's own examples; `/api/research` answers the same text."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.fold import fold
from tests.demo.conftest import Client
from tests.demo.heldout import CASES
from tests.demo.support import ask

EXTRA = (
    "compare apple and microsoft revenue",
    "nvidia 10-K risk factors",
    "what is the weather in paris",
)


def joined(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "delta")


@pytest.mark.parametrize("case", CASES, ids=[c.question for c in CASES])
async def test_deltas_join_to_the_result(demo_gateway: Client, case: Any) -> None:
    session: dict[str, Any] = {}
    for question in (*case.before, case.question):
        run = await ask(demo_gateway, question, **session)
        assert joined(run.events) == run.result, question
        assert fold(run.events)["text"] == run.result
        # The session id as Node's page reads it: from system_init.
        init = next(e for e in run.events if e["type"] == "system_init")
        session = {"sessionId": init["session_id"]}


@pytest.mark.parametrize("question", EXTRA)
async def test_deltas_join_to_the_result_of_other_questions(
    demo_gateway: Client, question: str
) -> None:
    run = await ask(demo_gateway, question)
    assert joined(run.events) == run.result
    response = await demo_gateway.post("/api/research", json={"query": question})
    body = await response.json()
    assert body["text"] == run.result
    assert body["total_cost_usd"] == 0.0  # the demo model is free, and priced so
