"""One question of a batch (`batches.question`): its phase follows its turns, the batch
hears of each turn's end, its outcome is the API's word for a request that did not
succeed (`canceled` spelled as the gateway spells it), and what it saved is the live
price of its calls less the batch price."""

from __future__ import annotations

from typing import Any, cast

import pytest

from gateway import pricing
from gateway.batches.batch import Question
from gateway.batches.journal import KeptJournal
from gateway.batches.question import _relay, saved_usd
from gateway.events import Event
from gateway.runs.loop import RunState
from gateway.runs.run import Run, RunRequest
from gateway.sse import parse_frames
from gateway.store.eventlog import EventLog
from tests.batch_manager_support import MakeHarness, ended, make_harness, run_events
from tests.fakes.anthropic import Reply
from tests.fakes.batches import BatchRequest, Script
from tests.test_batches_faults import script

__all__ = ["make_harness"]  # the fixture this module uses

PRICES = pricing.PriceTable(
    {
        "asked": pricing.ModelPrice(input=1.0, output=5.0, cache_write_5m=1.25, cache_read=0.1),
        "answered": pricing.ModelPrice(input=3.0, output=15.0, cache_write_5m=3.75, cache_read=0.3),
    }
)
PRICES_SHIPPED = pricing.shipped()
MILLION = 1_000_000
BATCHED = {"input_tokens": MILLION, "output_tokens": 0, pricing.BATCH_KEY: 1}


def test_saved_is_the_live_price_less_the_batch_cost() -> None:
    # A million input tokens: $3 live on the model that answered, $1.5 in a batch.
    assert saved_usd(PRICES, "asked", "answered", BATCHED, 1.5) == pytest.approx(1.5)
    # The model asked for prices it when the answer names none.
    assert saved_usd(PRICES, "asked", None, BATCHED, 0.5) == pytest.approx(0.5)
    # ... or names one with no price.
    assert saved_usd(PRICES, "asked", "unpriced", BATCHED, 0.5) == pytest.approx(0.5)


def test_nothing_is_saved_without_a_batch_call_a_cost_or_a_price() -> None:
    live = {"input_tokens": MILLION, "output_tokens": 0}
    assert saved_usd(PRICES, "asked", "answered", live, 1.5) == 0.0  # no call in a batch
    assert saved_usd(PRICES, "asked", "answered", {**live, pricing.BATCH_KEY: 0}, 1.5) == 0.0
    assert saved_usd(PRICES, "asked", "answered", BATCHED, None) == 0.0  # cost unknown
    assert saved_usd(PRICES, "unpriced", "unpriced", BATCHED, 0.5) == 0.0
    assert saved_usd(PRICES, "asked", "answered", BATCHED, 4.0) == 0.0  # never below zero


def test_the_live_price_leaves_out_the_batch_count() -> None:
    # A price table that charged `batch_requests` would count it; the live call has none.
    usage = {"input_tokens": 2 * MILLION, pricing.BATCH_KEY: 1}
    assert saved_usd(PRICES, "asked", "asked", usage, 0.0) == pytest.approx(2.0)


def question() -> Question:
    run = Run("run_1", "sess_1", EventLog("run_1", 100), 0.0)
    request = RunRequest([{"role": "user", "content": "q"}])
    return Question(0, request, run, RunState("run_1", "sess_1", []))


def test_a_questions_phase_follows_its_turns_and_each_turns_end_is_heard() -> None:
    q = question()
    heard: list[str] = []
    emit = _relay(q, lambda asked: heard.append(asked.phase))
    emit(cast(list[Event], [{"type": "turn_start"}, {"type": "delta", "text": "a"}]))
    assert q.phase == "waiting_model" and heard == []
    emit(cast(list[Event], [{"type": "tool_call", "phase": "tool_requested"}]))
    assert q.phase == "waiting_model"
    emit(cast(list[Event], [{"type": "tool_call", "phase": "tool_executing"}]))
    assert cast(str, q.phase) == "running_tools" and heard == []
    emit(cast(list[Event], [{"type": "turn_complete"}, {"type": "tool_result"}]))
    assert heard == []  # the turn's end is heard when it closes what was emitted
    emit(cast(list[Event], [{"type": "turn_complete"}]))
    assert heard == ["running_tools"]
    kinds = [e["type"] for e in _events(q)]
    assert kinds == ["turn_start", "delta", "tool_call", "tool_call", "turn_complete",
                     "tool_result", "turn_complete"]  # fmt: skip


def _events(q: Question) -> list[dict[str, Any]]:
    return parse_frames(q.run.log.read(0))


async def test_a_request_that_expired_or_errored_names_its_questions_outcome(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness(expire={"q1-t2"}, error={"q2-t1": "api_error"})
    batch = await ended(await h.start(3))
    assert [q.outcome for q in batch.questions] == ["completed", "expired", "errored"]
    assert [q.phase for q in batch.questions] == ["done"] * 3
    for question in batch.questions[1:]:  # one terminal event, the error
        kinds = [e["type"] for e in run_events(question.run)]
        assert kinds[-1] == "error" and kinds.count("error") == 1 and "final" not in kinds
    assert batch.totals()["counts"] == {"completed": 1, "expired": 1, "errored": 1}


async def test_a_request_the_api_canceled_ends_its_question_cancelled(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness(processing_s=30)
    batch = await h.start(1)
    await h.fake.created.wait()
    [api_batch] = h.fake.submitted
    found = h.fake.batch(api_batch)
    assert found is not None
    h.fake.store.cancel(found)  # on the API's side, not the gateway's
    await ended(batch)
    [q] = batch.questions
    assert (q.outcome, q.provider and q.provider.last_result) == ("cancelled", "canceled")
    assert batch.outcome == "completed"


async def test_a_question_that_ends_as_asked_is_completed_with_its_answer(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness(settings={"sdk_model": "claude-haiku-4-5"}, model="claude-haiku-4-5")
    batch = await ended(await h.start(1))
    [q] = batch.questions
    assert q.outcome == "completed" and q.phase == "done"
    events = run_events(q.run)
    final = events[-1]
    assert final["type"] == "final" and final["result"].endswith("Answer for q0.")
    assert final["outcome"] == "completed" and final["usage"] == q.state.usage
    assert final["figures"] == {"sourced": 0, "derived": 0, "unsourced": 0, "other_period": 0}
    assert [e["type"] for e in events].count("final") == 1
    assert q.state.usage[pricing.BATCH_KEY] == 2  # both calls ran on the batch tier
    live = PRICES_SHIPPED.cost("claude-haiku-4-5", {**q.state.usage, pricing.BATCH_KEY: 0})
    assert live is not None and q.state.cost_usd is not None
    assert q.saved_usd == pytest.approx(live - q.state.cost_usd) and q.saved_usd > 0


def answered_by(model: str) -> Script:
    """The usual script, every answer from `model` rather than the one asked for."""

    def answer(asked: BatchRequest) -> Reply:
        reply = script(asked)
        reply.model = model
        return reply

    return answer


@pytest.mark.parametrize("model", ["claude-sonnet-4-5-20250929", "claude-unlisted"])
async def test_a_question_saves_by_the_price_of_the_model_that_answered(
    make_harness: MakeHarness, model: str
) -> None:
    """Priced, the model that answered sets the live price; unpriced, the one asked for."""
    h = await make_harness(settings={"sdk_model": "claude-haiku-4-5"}, answers=answered_by(model))
    batch = await ended(await h.start(1))
    [q] = batch.questions
    assert q.outcome == "completed" and q.state.response_model == model
    priced = model if PRICES_SHIPPED.price(model) is not None else "claude-haiku-4-5"
    live = PRICES_SHIPPED.cost(priced, {**q.state.usage, pricing.BATCH_KEY: 0})
    assert live is not None and q.state.cost_usd is not None and q.state.cost_usd > 0
    assert q.saved_usd == pytest.approx(live - q.state.cost_usd) and q.saved_usd > 0


async def test_a_question_whose_answer_was_journaled_only_ends_when_resumed(
    make_harness: MakeHarness,
) -> None:
    """The worker died after the answer's turn was journaled, before the question's end:
    the worker that takes the batch over asks the model nothing more."""

    class DiesBeforeTheEnd(KeptJournal):
        async def question_done(self, batch_id: str, question: Question) -> None:
            return None

    journal = DiesBeforeTheEnd()
    h = await make_harness(journal=journal)
    first = await ended(await h.start(1))
    record = journal.records[first.id]
    assert not record.done and set(record.checkpoints) == {0}
    asked = dict(h.fake.received)
    batch = h.successor(KeptJournal()).resume(record, await h.configs(record.run_requests()))
    await ended(batch)
    [q] = batch.questions
    assert q.state.resumed and q.outcome == "completed"
    assert dict(h.fake.received) == asked  # no call after the answer
    final = run_events(q.run)[-1]
    assert final["type"] == "final" and final["result"].endswith("Answer for q0.")
