"""How a run ends: exactly one terminal event and a closed log, whatever raises on the way.

Each step of the ending (the observer's bookkeeping, building `final`, saving the session,
appending the terminal event) is guarded on its own, because a reader waits on the log
until it closes: a step that raised past this point used to leave a stream pinging forever
and the run active for good.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from gateway import events
from gateway.errors import GatewayError
from gateway.events import Event, Final
from gateway.ops.observe import RunObserver
from gateway.runs.figures import annotator
from gateway.runs.loop import LoopConfig, RunState
from gateway.runs.run import Run, RunRequest

log = logging.getLogger(__name__)

NOT_SAVED = "The conversation could not be saved; sessionId may not continue from this run"


@dataclass
class Ending:
    """What the run driver knows when the loop stops."""

    outcome: str
    terminal: Event | None
    """The `error` event of a failed run; None: build `final`."""
    turns: int
    usage: dict[str, int]
    request_id: str
    annotate: Callable[[Final], Event | None] | None = None
    """The figure check (runs/figures.py): given `final`, the `figures` event before it
    (None: the answer has no figures)."""


@dataclass
class Outcome:
    """How a run's loop stopped: its outcome, and its `error` event if it failed."""

    name: str
    terminal: Event | None = None
    error: GatewayError | None = None


async def run_to_end(
    run: Run, request: RunRequest, state: RunState, body: Awaitable[None]
) -> Outcome:
    """Await the run's loop (`body`, with whatever comes before it) and say how it
    stopped: completed (or the loop's own outcome), cancelled, a gateway error's code, or
    `UNKNOWN_ERROR` for a bug. Runs and batch questions end the same way."""
    try:
        await body
    except asyncio.CancelledError:
        if run.failure is not None:  # stopped with an error (its key was revoked)
            failure = run.failure
            return Outcome(failure.code, events.error(failure.body(request.request_id)), failure)
        return Outcome(run.cancel_reason or "cancelled")
    except GatewayError as exc:
        return Outcome(exc.code, events.error(exc.body(request.request_id)), exc)
    except Exception as exc:  # a bug: the client still gets its terminal event
        log.exception("run %s failed", run.id)
        return Outcome("UNKNOWN_ERROR", internal_error(exc, request.request_id))
    return Outcome(state.outcome or "completed")


async def end_loop(
    run: Run,
    config: LoopConfig,
    state: RunState,
    request: RunRequest,
    observer: RunObserver,
    outcome: Outcome,
    save: Callable[[], Awaitable[None]] | None,
    *,
    figure_check: bool = False,
) -> None:
    """End a run whose loop stopped: its `final` (or its error), the figure check's event
    before it when `figure_check`, and a closed log."""

    def build_final(duration_ms: float) -> Event:
        return final_event(run, config, state, outcome.name, duration_ms, observer.trace_id)

    annotate = annotator(figure_check, state.messages, observer)
    ending = Ending(
        outcome.name, outcome.terminal, state.turns, state.usage, request.request_id, annotate
    )
    await end_run(run, ending, observer, build_final, save)


def final_event(
    run: Run,
    config: LoopConfig,
    state: RunState,
    outcome: str,
    duration_ms: float,
    trace_id: str | None,
) -> Event:
    """A run's `final`: `result` is what the deltas joined to, structured output or not;
    the value is the last turn's JSON."""
    result, structured = state.answer(), None
    if config.plan.structured and state.outcome is not None:
        structured = structured_answer(state.last_texts)[1]
    return events.final(
        model=state.response_model or config.plan.model,
        run_id=run.id,
        session_id=run.session_id,
        outcome=outcome,  # type: ignore[arg-type]
        stop_reason=state.stop_reason,
        turns=state.turns,
        tool_calls=state.tool_calls,
        duration_ms=duration_ms,
        usage=dict(state.usage),
        result=result,
        trace_id=trace_id,
        total_cost_usd=state.cost_usd,
        structured=structured,
        details=events.refusal_details(state.stop_details) if outcome == "refusal" else None,
    )


def structured_answer(texts: list[str]) -> tuple[str, Any]:
    """The final answer's JSON text and its value (None if it is not JSON, e.g. a refusal
    or an answer cut off by max_tokens)."""
    text = "".join(texts)
    try:
        return text, orjson.loads(text)
    except orjson.JSONDecodeError:
        return text, None


async def end_run(
    run: Run,
    ending: Ending,
    observer: RunObserver,
    build_final: Callable[[float], Event],
    save: Callable[[], Awaitable[None]] | None,
) -> None:
    """Record, save, check the answer's figures, append the one terminal event and close
    the log, in that order."""
    try:
        terminal = _terminal(ending, observer, build_final)
        if save is not None:
            await _save(run, save, ending.turns)
        if ending.annotate is not None and terminal["type"] == "final":
            _append_figures(run, ending.annotate, terminal)  # right before `final`
        _append_terminal(run, terminal, ending.request_id)
    finally:  # whatever happened above, readers must see the log close
        run.log.close()


def _terminal(
    ending: Ending, observer: RunObserver, build_final: Callable[[float], Event]
) -> Event:
    failed = ending.terminal is not None
    try:
        duration_ms = observer.finished(ending.outcome, ending.turns, ending.usage, failed)
    except Exception:
        log.exception("recording the end of a run failed")
        duration_ms = (time.monotonic() - observer.started) * 1000
    if ending.terminal is not None:
        return ending.terminal
    try:
        return build_final(duration_ms)
    except Exception as exc:
        log.exception("building the final event failed")
        return internal_error(exc, ending.request_id)


def _append_figures(run: Run, annotate: Callable[[Final], Event | None], final: Final) -> None:
    """The figure check's event; a check that fails costs the run nothing but the event."""
    try:
        event = annotate(final)
        if event is not None:
            run.log.append(event)
    except Exception:
        log.exception("checking the figures of run %s failed", run.id)


async def _save(run: Run, save: Callable[[], Awaitable[None]], turns: int) -> None:
    # Cancellation too: a cancel that lands while saving must not cost the terminal event.
    try:
        await save()
    except (Exception, asyncio.CancelledError):
        log.exception("saving session %s of run %s failed", run.session_id, run.id)
        try:
            run.log.append(events.warning("session_not_saved", NOT_SAVED, turns))
        except Exception:
            log.exception("appending the session warning of run %s failed", run.id)


def _append_terminal(run: Run, terminal: Event, request_id: str) -> None:
    before = run.log.last_seq
    try:
        run.log.append(terminal)
        return
    except Exception as exc:
        log.exception("appending the terminal event of run %s failed", run.id)
        if run.log.last_seq != before:  # it is in the log; a listener raised after
            return
        fallback = internal_error(exc, request_id)
    try:
        run.log.append(fallback)
    except Exception:  # e.g. the request id itself cannot be serialised: drop it
        try:
            run.log.append(internal_error(None, ""))
        except Exception:  # nothing left to try; the log still closes
            log.exception("appending any terminal event of run %s failed", run.id)


def internal_error(exc: BaseException | None, request_id: str) -> Event:
    name = type(exc).__name__ if exc is not None else "error"
    body = GatewayError("UNKNOWN_ERROR", f"Internal error: {name}").body(request_id)
    return events.error(body)
