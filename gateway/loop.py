"""The tool loop: call the model, relay its stream, run the tools it asks for, send the
results back, and repeat until it stops asking. One async generator of events; it knows
nothing of HTTP. The run driver (runs.py) turns its end into the terminal event.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from gateway import events
from gateway.events import Event, Outcome
from gateway.model import ModelClient, RetryPolicy, stream_turn
from gateway.observe import RunObserver
from gateway.upstream import TurnTranslator
from tools.base import ToolContext
from tools.registry import ToolOutcome, ToolRegistry

PREVIEW_CHARS = 2_000
DOOM_LOOP_REPEATS = 3


@dataclass(frozen=True)
class LoopConfig:
    """What every model call of a run shares."""

    model: str
    max_tokens: int
    max_turns: int
    system: str | None = None
    thinking_budget: int = 0
    allowed_tools: frozenset[str] | None = None
    upstream: str = "anthropic"
    retry: RetryPolicy = field(default_factory=RetryPolicy)


@dataclass
class LoopDeps:
    model: ModelClient
    registry: ToolRegistry
    observer: RunObserver
    services: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunState:
    """What the run has done so far; the driver reads it to write `final`, even after a
    cancel in the middle of a turn."""

    run_id: str
    session_id: str
    messages: list[dict[str, Any]]
    turns: int = 0
    tool_calls: int = 0
    usage: dict[str, int] = field(default_factory=events.empty_usage)
    texts: list[str] = field(default_factory=list)
    stop_reason: str | None = None
    outcome: Outcome | None = None
    response_model: str | None = None
    last_calls: tuple[str, ...] = ()
    repeats: int = 0
    wrap_up: Outcome | None = None
    """Why the loop is wrapping up (tools off), if it is."""
    resumed: bool = False
    """Restored from a checkpoint on another worker: the run's `system_info` was sent."""
    current: TurnTranslator | None = None

    def answer(self) -> str:
        """The run's text as a reader of the stream saw it, even if cut off mid-turn."""
        texts = self.texts if self.current is None else [*self.texts, *self.current.partial_texts()]
        return "\n\n".join(texts)

    def add_turn(self, turn: TurnTranslator) -> None:
        self.current = None
        self.messages.append({"role": "assistant", "content": turn.content})
        self.stop_reason = turn.stop_reason
        self.response_model = turn.model or self.response_model
        self.texts.extend(turn.texts)
        for key, value in turn.usage.items():
            self.usage[key] += value


async def run_loop(config: LoopConfig, deps: LoopDeps, state: RunState) -> AsyncIterator[Event]:
    """Yields every event of the run except the terminal one; sets `state.outcome`."""
    tools = deps.registry.definitions(config.allowed_tools)
    info = events.system_info(
        model=config.model,
        session_id=state.session_id,
        tools=len(tools),
        upstream=config.upstream,
        trace_id=deps.observer.trace_id,
    )
    if not state.resumed:  # a resumed run's readers had it from the first worker
        yield info
    while True:
        state.turns += 1
        yield events.turn_start(state.turns, config.max_turns)
        turn = state.current = TurnTranslator(state.turns)
        params = request_params(config, state.messages, tools, tools_off=state.wrap_up is not None)
        with deps.observer.model_call(state.turns, params) as call:
            async for event in stream_turn(deps.model, params, turn, config.retry, call.retry):
                yield event
            call.finish(turn)
        state.add_turn(turn)
        complete = events.turn_complete(
            state.turns, len(turn.tool_uses), turn.stop_reason, turn.usage
        )
        if turn.stop_reason == "tool_use" and turn.tool_uses and state.wrap_up is None:
            wrap_up = state.wrap_up = _limit_reached(config, state, turn)
            if wrap_up is not None:
                yield _wrap_up_warning(wrap_up, state.turns)
                deps.observer.wrap_up(wrap_up)
            results: list[dict[str, Any]] = []
            async for event in _answer_tools(turn, deps, state, results, run=wrap_up is None):
                yield event
            state.messages.append({"role": "user", "content": results})
            yield complete
            continue
        yield complete
        if turn.stop_reason == "pause_turn" and state.turns <= config.max_turns:
            continue
        state.outcome = state.wrap_up or events.OUTCOME_BY_STOP_REASON.get(
            turn.stop_reason or "", "completed"
        )
        return


def request_params(
    config: LoopConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
    tools_off: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """The Messages API request body for the next call (the SDK adds `stream`)."""
    params: dict[str, Any] = {
        "model": config.model,
        "max_tokens": config.max_tokens,
        "messages": messages,
    }
    if config.system:
        params["system"] = config.system
    if tools:
        params["tools"] = tools
        # The wrap-up call keeps the definitions (the history mentions the tools) but
        # may not use them, so the client still gets an answer.
        params["tool_choice"] = {"type": "none" if tools_off else "auto"}
    if config.thinking_budget:
        params["thinking"] = {"type": "enabled", "budget_tokens": config.thinking_budget}
    return params


def _limit_reached(config: LoopConfig, state: RunState, turn: TurnTranslator) -> Outcome | None:
    calls = tuple(sorted(f"{u['name']}:{u['input']}" for u in turn.tool_uses))
    state.repeats = state.repeats + 1 if calls == state.last_calls else 1
    state.last_calls = calls
    if state.repeats >= DOOM_LOOP_REPEATS:
        return "doom_loop"
    if state.turns >= config.max_turns:
        return "max_turns"
    return None


def _wrap_up_warning(reason: Outcome, turns: int) -> Event:
    if reason == "max_turns":
        return events.warning("max_turns", "Max turns reached", turns)
    message = f"The model asked for the same tool calls {DOOM_LOOP_REPEATS} turns in a row"
    return events.warning("doom_loop", message, turns)


async def _answer_tools(
    turn: TurnTranslator, deps: LoopDeps, state: RunState, results: list[dict[str, Any]],
    *, run: bool,
) -> AsyncIterator[Event]:  # fmt: skip
    """Fill `results` with one `tool_result` per `tool_use`, in order; run them concurrently
    (or answer each with "not run" when the loop is wrapping up), relaying their events."""
    results.extend({} for _ in turn.tool_uses)
    pending: list[tuple[int, dict[str, Any]]] = []
    for index, use in enumerate(turn.tool_uses):
        reason = turn.input_errors.get(use["id"])
        if not run:
            reason = "Not run: the turn limit was reached. Answer with what you have."
        if reason is None:
            pending.append((index, use))
            continue
        outcome = ToolOutcome(
            reason, True, 0.0, error_type="not_run" if not run else "invalid_input"
        )
        deps.observer.tool_skipped(use["name"], outcome)
        yield _record(results, index, use, outcome, turn.turn, state)
    for _, use in pending:
        tool = {"id": use["id"], "name": use["name"], "input": use["input"]}
        yield events.tool_call("tool_executing", tool, turn.turn)
    if not pending:
        return
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(_call_tool(index, use, deps, state)) for index, use in pending]
        for next_done in asyncio.as_completed(tasks):
            index, outcome = await next_done
            use = turn.tool_uses[index]
            yield _record(results, index, use, outcome, turn.turn, state)
            if outcome.truncated:
                message = f"Result of {use['name']} cut to {len(outcome.content):,} characters"
                yield events.warning("tool_result_truncated", message, state.turns)


async def _call_tool(
    index: int, use: dict[str, Any], deps: LoopDeps, state: RunState
) -> tuple[int, ToolOutcome]:
    ctx = ToolContext(tool_use_id=use["id"], run_id=state.run_id, services=deps.services)
    with deps.observer.tool(use) as span:
        outcome = await deps.registry.call(use["name"], use["input"], ctx)
        span.finish(outcome)
    return index, outcome


def _record(
    results: list[dict[str, Any]], index: int, use: dict[str, Any], outcome: ToolOutcome,
    turn: int, state: RunState,
) -> Event:  # fmt: skip
    """Store the model's `tool_result` and make the client's event for one finished call."""
    state.tool_calls += 1
    result: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": use["id"],
        "content": outcome.content,
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
        "tool_result", tool, turn,
        success=True,
        preview=outcome.content[:PREVIEW_CHARS],
        bytes=len(outcome.content.encode()),
        truncated=outcome.truncated,
        duration_ms=duration,
    )  # fmt: skip
