"""The tool loop: call the model, relay its stream, run the tools it asks for, send the
results back, and repeat until it stops asking. It hands its events on through `emit`,
in lists (a model's events come one list per upstream read); it knows nothing of HTTP.
The run driver (runs.py) gives it `emit` and turns its end into the terminal event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway import events, pricing
from gateway.context import clear_old_tool_results, estimate_tokens
from gateway.events import Event, Outcome
from gateway.ops.observe import RunObserver
from gateway.providers.base import Emit, ModelCall, Provider, Turn
from gateway.providers.binding import settle_history, with_drop_block
from gateway.providers.plan import CallPlan, offered_tools, today_text
from gateway.providers.seam import RetryPolicy, call_model
from gateway.runs.files import RunFiles
from tools.base import ToolContext
from tools.registry import ToolOutcome, ToolRegistry

PREVIEW_CHARS = 2_000
TURN_GAP = "\n\n"
"""Streamed, as a `delta` of its own, between the texts of two turns: a client that joins
the deltas has `final.result` byte for byte. Not inside one answer continued after
`pause_turn`."""
DOOM_LOOP_REPEATS = 3
MAX_PAUSES = 5  # `pause_turn` continuations allowed beyond the model calls of the tool rounds


@dataclass(frozen=True)
class LoopConfig:
    """What every model call of a run shares."""

    plan: CallPlan
    max_turns: int
    """Tool rounds: the tools of the last round run, then one call that may not use tools."""
    system: str | None = None
    date: str = field(default_factory=today_text)
    allowed_tools: frozenset[str] | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)


@dataclass
class LoopDeps:
    upstreams: Sequence[Provider]
    """The providers in fallback order: the first answers unless it fails."""
    registry: ToolRegistry
    observer: RunObserver
    services: dict[str, Any] = field(default_factory=dict)
    prices: pricing.PriceTable = field(default_factory=pricing.shipped)
    files: RunFiles | None = None
    """Runs with code execution: says which files each turn made (`file` events)."""
    figure_check: bool = False
    """Check the answer's figures against the tool results (a `figures` event)."""


@dataclass
class RunState:
    """What the run has done so far; the driver reads it to write `final`, even after a
    cancel in the middle of a turn."""

    run_id: str
    session_id: str
    messages: list[dict[str, Any]]
    turns: int = 0
    rounds: int = 0
    tool_calls: int = 0
    usage: dict[str, int] = field(default_factory=events.empty_usage)
    texts: list[str] = field(default_factory=list)
    """Each answer's text, its blocks joined as they streamed (empty for a turn without);
    a turn that continues one after `pause_turn` adds to it."""
    last_texts: list[str] = field(default_factory=list)
    context_tokens: int = 0
    stop_reason: str | None = None
    stop_details: dict[str, Any] | None = None
    """The last turn's `stop_details` (a refusal's category), where the model gave them."""
    outcome: Outcome | None = None
    wrap_up: Outcome | None = None
    response_model: str | None = None
    last_calls: tuple[str, ...] = ()
    repeats: int = 0
    resumed: bool = False
    """Restored from a checkpoint on another worker: the run's `system_info` was sent."""
    current: Turn | None = None
    dropped_warned: set[str] = field(default_factory=set)
    cost_usd: float | None = 0.0
    """The run's price so far; None once a model call of it had no price."""
    owes_gap: bool = False
    """An earlier turn streamed text and this one has not yet: its first text needs
    `TURN_GAP` before it."""
    container: str | None = None
    """The code execution container the API named for this run: every later call uses it."""
    drop_bound: bool = False
    """Every call sends `drop_block` (thinking blocks bound to an earlier prefix)."""

    def answer(self) -> str:
        """The run's text exactly as a reader of the stream joined it (its `delta`s), even
        if cut off mid-turn."""
        texts = self.texts
        if self.current is not None:
            partial = "".join(self.current.partial_texts())
            if self.stop_reason == "pause_turn" and texts:  # the same answer, continued
                texts = [*texts[:-1], texts[-1] + partial]
            else:
                texts = [*texts, partial]
        return TURN_GAP.join(text for text in texts if text)

    def owes_gap_now(self) -> bool:
        """Whether the next turn's first text needs `TURN_GAP`: some earlier answer has
        text, and the next turn does not continue one (after `pause_turn`) that has."""
        if self.stop_reason == "pause_turn" and self.texts:
            return not self.texts[-1] and any(self.texts[:-1])
        return any(self.texts)

    def add_turn(self, turn: Turn) -> None:
        self.current = None
        self.messages.append({"role": "assistant", "content": turn.content})
        text = "".join(turn.texts)
        if self.stop_reason == "pause_turn" and self.texts:  # one answer, no gap inside
            self.texts[-1] += text
            self.last_texts = [*self.last_texts, *turn.texts]
        else:
            self.texts.append(text)
            self.last_texts = turn.texts
        self.stop_reason = turn.stop_reason
        self.stop_details = turn.stop_details
        self.response_model = turn.model or self.response_model
        self.container = turn.container_id or self.container
        # The conversation so far, as the model counted it: the next call's input at least.
        self.context_tokens = turn.context_tokens
        for key, value in turn.usage.items():  # the priced extras only when reported
            self.usage[key] = self.usage.get(key, 0) + value


async def run_loop(config: LoopConfig, deps: LoopDeps, state: RunState, emit: Emit) -> None:
    """Emits every event of the run except the terminal one, in lists (`turn_complete`
    always alone); sets `state.outcome`."""
    plan = config.plan
    tools = deps.registry.definitions(config.allowed_tools)
    offered = len(offered_tools(tools, plan.server_tools))  # a server tool takes a name once
    # A resumed run's readers had these from the first worker. Copies: the log stamps each
    # event it takes. They go with the first `turn_start`: one write to the client, not two.
    # In no local: the run's frame would hold them (~1 KB) until the run ends.
    opening = (
        []
        if state.resumed
        else [
            events.system_info(
                model=plan.model,
                session_id=state.session_id,
                tools=offered,
                upstream=deps.upstreams[0].name,
                trace_id=deps.observer.trace_id,
            ),
            events.system_init(session_id=state.session_id, tools=offered, model=plan.model),
            *(n.copy() for n in plan.notices),
        ]
    )
    emit = _gapped(state, emit)
    binding = plan.thinking if plan.block_binding else None  # None: dropped here instead
    state.drop_bound = settle_history(plan.binds_thinking, binding, state.messages)
    while True:
        cleared = _gateway_clear(plan, state)
        if _context_full(plan, state):
            if opening or cleared:
                emit([*opening, *cleared])
            state.outcome = "context_exceeded"
            return
        state.turns += 1
        state.owes_gap = state.owes_gap_now()
        emit([*opening, *cleared, events.turn_start(state.turns, config.max_turns)])
        opening = []
        call = model_call(
            config,
            state.messages,
            tools,
            tools_off=state.wrap_up is not None,
            container=state.container,
            drop_bound=state.drop_bound,
        )
        with deps.observer.model_call(state.turns, call) as span:
            hooks = span.hooks(state)
            await call_model(deps.upstreams, call, state.turns, config.retry, hooks, emit)
            turn = span.finish()
        state.add_turn(turn)
        if deps.files is not None:  # code execution: the files the turn made
            await deps.files.announce(turn.content, state.turns, emit)
        cost = _priced(deps, turn.model or plan.model, turn.usage, plan.model)
        state.cost_usd = pricing.add_cost(state.cost_usd, cost)
        complete = events.turn_complete(
            state.turns, len(turn.tool_uses), turn.stop_reason, turn.usage, span.upstream, cost
        )
        if turn.stop_reason == "tool_use" and turn.tool_uses and state.wrap_up is None:
            await _tool_round(config, deps, state, turn, emit)
            emit([complete])
            continue
        emit([complete])
        if turn.stop_reason == "pause_turn" and state.turns <= config.max_turns + MAX_PAUSES:
            continue
        state.outcome = state.wrap_up or events.OUTCOME_BY_STOP_REASON.get(
            turn.stop_reason or "", "completed"
        )
        if state.outcome == "refusal":
            details = events.refusal_details(state.stop_details)
            deps.observer.refused(details["category"] if details else None)
        return


def _gapped(state: RunState, emit: Emit) -> Emit:
    """`emit`, with `TURN_GAP` streamed before the first text of a turn that follows a
    turn with text (what `RunState.answer` joins them with)."""

    def relay(batch: list[Event]) -> None:
        if state.owes_gap:
            for index, event in enumerate(batch):
                if event["type"] == "delta" and event["text"]:
                    state.owes_gap = False
                    batch = [*batch[:index], events.delta(TURN_GAP), *batch[index:]]
                    break
        emit(batch)

    return relay


def _priced(deps: LoopDeps, model: str, usage: dict[str, int], asked: str) -> float | None:
    """One call's price (the answering model's, else the one asked for), counted."""
    cost = deps.prices.cost(model, usage)
    if cost is None and model != asked:
        model, cost = asked, deps.prices.cost(asked, usage)
    deps.observer.count_cost(model, cost)
    return cost


def model_call(
    config: LoopConfig,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    *,
    tools_off: bool,
    container: str | None = None,
    drop_bound: bool = False,
) -> ModelCall:
    """The next call in canonical form; each provider writes its own request from it."""
    plan = config.plan
    api_context = plan.context if plan.context and plan.context.strategy != "gateway" else None
    betas = (*plan.betas, *(api_context.betas if api_context is not None else ()))
    thinking = plan.thinking
    if drop_bound:
        thinking, betas = with_drop_block(thinking, betas)
    return ModelCall(
        model=plan.model,
        max_tokens=plan.max_tokens,
        messages=messages,
        system=config.system,
        tools=tools,
        # The wrap-up call keeps the definitions (the history mentions the tools) but
        # may not use them, so the client still gets an answer.
        tool_choice="none" if tools_off else "auto",
        output_schema=plan.output_schema,
        system_suffix=config.date,
        thinking=thinking,
        effort=plan.effort,
        server_tools=plan.server_tools,
        cache=plan.cache,
        context_management=api_context.request if api_context is not None else None,
        betas=betas,
        parallel_tools=plan.parallel_tools,
        container=container or plan.container,
    )


async def _tool_round(
    config: LoopConfig, deps: LoopDeps, state: RunState, turn: Turn, emit: Emit
) -> None:
    """Run one round of tools and append their results, with the budget note, as the next
    user message; past the last round, the next call wraps up without tools."""
    state.rounds += 1
    state.wrap_up = _limit_reached(config, state, turn)
    if state.wrap_up is not None:
        emit([_wrap_up_warning(state.wrap_up, state.turns)])
        deps.observer.wrap_up(state.wrap_up)
    results: list[dict[str, Any]] = []
    run = state.wrap_up != "doom_loop"  # the same calls again would answer nothing new
    await _answer_tools(turn, deps, state, results, emit, run=run)
    results.append(budget_note(state.rounds, config.max_turns, state.wrap_up))
    state.messages.append({"role": "user", "content": results})


def budget_note(rounds: int, max_turns: int, wrap_up: Outcome | None) -> dict[str, Any]:
    """The text block that ends every tool-results message: the model's remaining budget."""
    done = f"Tool round {rounds} of {max_turns} is done"
    left = max_turns - rounds
    if wrap_up is not None:
        text = f"{done}; no tool rounds are left: answer now from what you have."
    else:
        text = f"{done}; {left} round{'s' if left != 1 else ''} left."
    return {"type": "text", "text": text}


def _gateway_clear(plan: CallPlan, state: RunState) -> list[Event]:
    """For upstreams without the API's context management: past the trigger, clear old
    tool results before the call (estimated at four characters a token)."""
    context = plan.context
    if context is None or context.strategy != "gateway" or len(state.messages) < 3:
        return []
    if estimate_tokens(state.messages) < context.trigger_tokens:
        return []
    cleared = clear_old_tool_results(state.messages, context.keep_tool_uses)
    if not cleared.tool_uses:
        return []
    state.context_tokens = estimate_tokens(state.messages)
    return [
        events.context_edited(
            state.turns + 1, "gateway_clear", cleared.input_tokens, cleared.tool_uses
        )
    ]


def _context_full(plan: CallPlan, state: RunState) -> bool:
    return bool(plan.context_window) and state.context_tokens >= (plan.context_window or 0)


def _limit_reached(config: LoopConfig, state: RunState, turn: Turn) -> Outcome | None:
    calls = tuple(sorted(f"{u['name']}:{u['input']}" for u in turn.tool_uses))
    state.repeats = state.repeats + 1 if calls == state.last_calls else 1
    state.last_calls = calls
    if state.repeats >= DOOM_LOOP_REPEATS:
        return "doom_loop"
    if state.rounds >= config.max_turns:
        return "max_turns"
    return None


def _wrap_up_warning(reason: Outcome, turns: int) -> Event:
    if reason == "max_turns":
        return events.warning("max_turns", "Max turns reached", turns)
    message = f"The model asked for the same tool calls {DOOM_LOOP_REPEATS} turns in a row"
    return events.warning("doom_loop", message, turns)


async def _answer_tools(
    turn: Turn,
    deps: LoopDeps,
    state: RunState,
    results: list[dict[str, Any]],
    emit: Emit,
    *,
    run: bool,
) -> None:
    """Fill `results` with one `tool_result` per `tool_use`, in order; run them concurrently
    (or answer each with "not run" when the model is repeating itself), relaying their
    events."""
    results.extend({} for _ in turn.tool_uses)
    pending: list[tuple[int, dict[str, Any]]] = []
    for index, use in enumerate(turn.tool_uses):
        reason = turn.input_errors.get(use["id"])
        if not run:
            reason = "Not run: the same calls were asked for again. Answer with what you have."
        if reason is None:
            pending.append((index, use))
            continue
        outcome = ToolOutcome(
            reason, True, 0.0, error_type="not_run" if not run else "invalid_input"
        )
        deps.observer.tool_skipped(use["name"], outcome)
        emit([_record(results, index, use, outcome, turn.turn, state)])
    for _, use in pending:
        tool = {"id": use["id"], "name": use["name"], "input": use["input"]}
        emit([events.tool_call("tool_executing", tool, turn.turn)])
    if not pending:
        return
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(_call_tool(index, use, deps, state)) for index, use in pending]
        for next_done in asyncio.as_completed(tasks):
            index, outcome = await next_done
            use = turn.tool_uses[index]
            emit([_record(results, index, use, outcome, turn.turn, state)])
            if outcome.truncated:
                message = f"Result of {use['name']} cut to {len(outcome.content):,} characters"
                emit([events.warning("tool_result_truncated", message, state.turns)])


async def _call_tool(
    index: int, use: dict[str, Any], deps: LoopDeps, state: RunState
) -> tuple[int, ToolOutcome]:
    ctx = ToolContext(tool_use_id=use["id"], run_id=state.run_id, services=deps.services)
    with deps.observer.tool(use) as span:
        outcome = await deps.registry.call(use["name"], use["input"], ctx)
        span.finish(outcome)
    return index, outcome


def _record(
    results: list[dict[str, Any]],
    index: int,
    use: dict[str, Any],
    outcome: ToolOutcome,
    turn: int,
    state: RunState,
) -> Event:
    """Store the model's `tool_result` and make the client's event for one finished call."""
    state.tool_calls += 1
    result: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": use["id"],
        "content": outcome.content if outcome.blocks is None else outcome.blocks,
    }
    tool = {"id": use["id"], "name": use["name"]}
    duration = round(outcome.duration_ms, 1)
    if outcome.is_error:
        result["is_error"] = True
        results[index] = result
        return events.tool_call(
            "tool_error", tool, turn, success=False, error=outcome.content, duration_ms=duration
        )
    results[index] = result
    return events.tool_call(
        "tool_result",
        tool,
        turn,
        success=True,
        preview=outcome.content[:PREVIEW_CHARS],
        bytes=len(outcome.content.encode()),
        truncated=outcome.truncated,
        duration_ms=duration,
    )
