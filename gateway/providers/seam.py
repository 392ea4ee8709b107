"""The seam between the loop and the providers: one model call, retried while nothing of
it reached the client, then handed to the next upstream in the fallback order.

Events are handed on through `emit`, a list per upstream read (see `Provider.attempt`),
by the code that reads them: no chain of generators between the socket and the run's
log, whose hops a paced stream paid on every event.

Each retry and each switch is announced to the client with a `warning`; the loop sees
only events and, at the end, the turn of whichever provider answered.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gateway import events
from gateway.errors import UpstreamFailure
from gateway.providers.base import Emit, ModelCall, Provider, Turn


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded in count and in total wait; `retry-after` wins over our own backoff."""

    max_retries: int = 3
    max_total_wait_s: float = 30.0
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    call_deadline_s: float = 900.0
    """The whole model call, its retries and their waits included: a stalled upstream
    costs at most this, not the per-read timeout once per retry."""

    def delay(self, attempt: int, retry_after_s: float | None) -> float:
        if retry_after_s is not None:
            return retry_after_s
        backoff: float = min(self.max_delay_s, self.base_delay_s * 2**attempt)
        return backoff * random.uniform(0.8, 1.2)


@dataclass
class CallHooks:
    """How the caller follows one call: the turn in use (it changes on a fallback), and
    each retry and switch (for spans and metrics)."""

    on_turn: Callable[[Turn, Provider], None]
    on_retry: Callable[[UpstreamFailure, str], None] = lambda failure, upstream: None
    on_failure: Callable[[UpstreamFailure, str, bool], None] = lambda f, upstream, fallback: None
    """A provider failed after its retries; the flag says whether the next one is tried."""
    warned: set[str] = field(default_factory=set)
    """Kinds of content already reported as left out for some provider, in this run."""


async def call_model(
    providers: Sequence[Provider],
    call: ModelCall,
    number: int,
    policy: RetryPolicy,
    hooks: CallHooks,
    emit: Emit,
) -> None:
    """One model call, its gateway events emitted, from the first provider that answers."""
    last = len(providers) - 1
    for index, provider in enumerate(providers):
        turn = provider.new_turn(number)
        hooks.on_turn(turn, provider)
        try:
            await _with_retries(provider, call, turn, policy, hooks, emit)
        except UpstreamFailure as failure:
            fallback = not turn.emitted and index < last
            hooks.on_failure(failure, provider.name, fallback)
            if not fallback:
                raise
            following = providers[index + 1].name
            message = f"Upstream {provider.name} failed ({failure.code}); trying {following}"
            emit(
                [
                    events.warning(
                        "upstream_fallback",
                        message,
                        number,
                        error_code=failure.code,
                        upstream=provider.name,
                        next_upstream=following,
                    )
                ]
            )
            continue
        left_out = sorted(set(turn.dropped) - hooks.warned)
        if left_out:
            hooks.warned.update(left_out)
            message = f"{provider.name} cannot take {', '.join(left_out)}: left out of its requests"
            dropped = events.warning(
                "history_dropped", message, number, upstream=provider.name, dropped=left_out
            )
            emit([dropped])
        return


async def _with_retries(
    provider: Provider,
    call: ModelCall,
    turn: Turn,
    policy: RetryPolicy,
    hooks: CallHooks,
    emit: Emit,
) -> None:
    if provider.model and provider.model != call.model:  # a fallback's own model
        call = dataclasses.replace(call, model=provider.model)
    waited = 0.0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + policy.call_deadline_s
    for attempt in range(policy.max_retries + 1):
        try:
            await _attempt(provider, call, turn, emit, deadline, policy.call_deadline_s)
            return
        except UpstreamFailure as exc:
            failure = exc  # the `as` name is unbound after the except block
            delay = policy.delay(attempt, failure.retry_after_s)
            spent = attempt >= policy.max_retries or waited + delay > policy.max_total_wait_s
            late = loop.time() + delay >= deadline
            if not failure.retryable or turn.emitted or spent or late:
                raise
        waited += delay
        turn.reset()
        hooks.on_retry(failure, provider.name)
        message = (
            f"Upstream {failure.code}: {failure.message}. Retry {attempt + 1} in {delay:.1f} s"
        )
        emit(
            [
                events.warning(
                    "upstream_retry",
                    message,
                    turn.turn,
                    attempt=attempt + 1,
                    delay_s=round(delay, 3),
                    error_code=failure.code,
                    upstream=provider.name,
                )
            ]
        )
        await asyncio.sleep(delay)


async def _attempt(
    provider: Provider,
    call: ModelCall,
    turn: Turn,
    emit: Emit,
    deadline: float,
    deadline_s: float,
) -> None:
    """One attempt, within the call's deadline. The deadline covers what `emit` does as
    well: it hands events to the run's log and writes only to clients that take them
    without waiting. Invalid JSON from the upstream is its failure, not ours."""
    timeout = asyncio.timeout_at(deadline)
    try:
        async with timeout:
            await provider.attempt(call, turn, emit)
    except TimeoutError as exc:
        if not timeout.expired():  # a provider's own timeout that it did not map
            message = f"Upstream timed out: {exc}".rstrip(": ")
            raise UpstreamFailure("TIMEOUT_ERROR", message, retryable=True) from exc
        message = f"The model call took longer than {deadline_s:g} s in all"
        raise UpstreamFailure("TIMEOUT_ERROR", message) from None
    except json.JSONDecodeError as exc:  # orjson's error is a subclass
        message = f"Upstream sent invalid JSON: {exc}"
        raise UpstreamFailure("NETWORK_ERROR", message, retryable=True) from exc
