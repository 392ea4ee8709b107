"""One question of a batch, driven as a run is: the ordinary loop into the run's log, one
terminal event however it ends (`runs.ending`), so its fold is `/api/research`'s."""

from __future__ import annotations

import logging
from collections.abc import Callable

from gateway import pricing
from gateway.batches.batch import Question
from gateway.events import Event
from gateway.providers.base import Emit
from gateway.runs.durable import resumed_loop
from gateway.runs.ending import end_loop, run_to_end
from gateway.runs.loop import LoopConfig, LoopDeps, run_loop

log = logging.getLogger(__name__)

OnTurn = Callable[[Question], None]


async def drive(question: Question, config: LoopConfig, deps: LoopDeps, on_turn: OnTurn) -> None:
    """Run the question's loop to its end; its log closes with exactly one terminal event."""
    run, state, request = question.run, question.state, question.request
    loop = resumed_loop if state.resumed else run_loop
    outcome = await run_to_end(
        run, request, state, loop(config, deps, state, _relay(question, on_turn))
    )
    if outcome.error is not None and "batch_result" in outcome.error.details:
        result = outcome.error.details["batch_result"]  # the API's word in `batch_result`
        question.outcome = "cancelled" if result == "canceled" else result
    question.outcome = question.outcome or outcome.name
    question.phase = "done"
    question.saved_usd = saved_usd(
        deps.prices, config.plan.model, state.response_model, state.usage, state.cost_usd
    )
    await end_loop(
        run,
        config,
        state,
        request,
        deps.observer,
        outcome,
        None,
        figure_check=deps.figure_check,
    )


def _relay(question: Question, on_turn: OnTurn) -> Emit:
    """The loop's `emit`: into the question's log; its phase follows the turns."""
    log_ = question.run.log

    def emit(batch: list[Event]) -> None:
        log_.extend(batch)
        for event in batch:
            kind = event["type"]
            if kind == "turn_start":
                question.phase = "waiting_model"
            elif kind == "tool_call" and event.get("phase") == "tool_executing":
                question.phase = "running_tools"
        if batch[-1]["type"] == "turn_complete":
            on_turn(question)

    return emit


def saved_usd(
    prices: pricing.PriceTable,
    asked: str,
    answered: str | None,
    usage: dict[str, int],
    cost: float | None,
) -> float:
    """What the question's calls would have cost live, less what they cost in batches."""
    if cost is None or not usage.get(pricing.BATCH_KEY):
        return 0.0
    live_usage = {k: v for k, v in usage.items() if k != pricing.BATCH_KEY}
    live = prices.cost(answered or asked, live_usage)
    if live is None:
        live = prices.cost(asked, live_usage)
    return max(0.0, live - cost) if live is not None else 0.0
