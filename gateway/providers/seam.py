"""The seam between the loop and the providers: one model call, retried while nothing of
it reached the client, then handed to the next upstream in the fallback order.

Events travel in lists, one per upstream read (see `Provider.attempt`): each generator
here costs its hop per read, not per event.

Each retry and each switch is announced to the client with a `warning`; the loop sees
only events and, at the end, the turn of whichever provider answered.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from gateway import events
from gateway.errors import UpstreamFailure
from gateway.events import Event
from gateway.providers.base import ModelCall, Provider, Turn


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
) -> AsyncIterator[list[Event]]:
    """One model call as lists of gateway events, from the first provider that answers it."""
    last = len(providers) - 1
    for index, provider in enumerate(providers):
        turn = provider.new_turn(number)
        hooks.on_turn(turn, provider)
        try:
            async for batch in _with_retries(provider, call, turn, policy, hooks):
                yield batch
        except UpstreamFailure as failure:
            fallback = not turn.emitted and index < last
            hooks.on_failure(failure, provider.name, fallback)
            if not fallback:
                raise
            following = providers[index + 1].name
            message = f"Upstream {provider.name} failed ({failure.code}); trying {following}"
            yield [events.warning(
                "upstream_fallback", message, number, error_code=failure.code,
                upstream=provider.name, next_upstream=following,
            )]  # fmt: skip
            continue
        left_out = sorted(set(turn.dropped) - hooks.warned)
        if left_out:
            hooks.warned.update(left_out)
            message = f"{provider.name} cannot take {', '.join(left_out)}: left out of its requests"
            dropped = events.warning(
                "history_dropped", message, number, upstream=provider.name, dropped=left_out
            )
            yield [dropped]
        return


async def _with_retries(
    provider: Provider, call: ModelCall, turn: Turn, policy: RetryPolicy, hooks: CallHooks
) -> AsyncIterator[list[Event]]:
    call = dataclasses.replace(call, model=provider.model or call.model)
    waited = 0.0
    deadline = asyncio.get_running_loop().time() + policy.call_deadline_s
    for attempt in range(policy.max_retries + 1):
        try:
            async for batch in _attempt(provider, call, turn, deadline, policy.call_deadline_s):
                yield batch
            return
        except UpstreamFailure as exc:
            failure = exc  # the `as` name is unbound after the except block
            delay = policy.delay(attempt, failure.retry_after_s)
            spent = attempt >= policy.max_retries or waited + delay > policy.max_total_wait_s
            late = asyncio.get_running_loop().time() + delay >= deadline
            if not failure.retryable or turn.emitted or spent or late:
                raise
        waited += delay
        turn.reset()
        hooks.on_retry(failure, provider.name)
        message = (
            f"Upstream {failure.code}: {failure.message}. Retry {attempt + 1} in {delay:.1f} s"
        )
        yield [events.warning(
            "upstream_retry", message, turn.turn, attempt=attempt + 1, delay_s=round(delay, 3),
            error_code=failure.code, upstream=provider.name,
        )]  # fmt: skip
        await asyncio.sleep(delay)


async def _attempt(
    provider: Provider, call: ModelCall, turn: Turn, deadline: float, deadline_s: float
) -> AsyncIterator[list[Event]]:
    """One attempt's events, each read awaited within the call's deadline (per step, never
    across a `yield`: the consumer's own awaits are not ours to time). Invalid JSON from
    the upstream is its failure, not ours."""
    stream = provider.attempt(call, turn)
    guard = _ReadDeadline(deadline)
    try:
        while True:
            try:
                batch = await guard.read(stream)
            except StopAsyncIteration:
                return
            except TimeoutError:
                message = f"The model call took longer than {deadline_s:g} s in all"
                raise UpstreamFailure("TIMEOUT_ERROR", message) from None
            except json.JSONDecodeError as exc:  # orjson's error is a subclass
                message = f"Upstream sent invalid JSON: {exc}"
                raise UpstreamFailure("NETWORK_ERROR", message, retryable=True) from exc
            yield batch
    finally:  # its HTTP response closes now, not when the collector finds it
        guard.close()
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()


class _ReadDeadline:
    """`asyncio.timeout_at` for every read of one attempt, with one timer for all of them
    instead of a timeout context per read (a read per event on a paced stream): when the
    timer fires during a read, that read is cancelled and raises TimeoutError; between
    reads, the next one raises at once."""

    def __init__(self, deadline: float) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self._reading = False
        self._expired = False
        self._timer = asyncio.get_running_loop().call_at(deadline, self._expire)

    def _expire(self) -> None:
        self._expired = True
        if self._reading:
            self._task.cancel()

    def close(self) -> None:
        self._timer.cancel()

    async def read(self, stream: AsyncIterator[list[Event]]) -> list[Event]:
        if self._expired:
            raise TimeoutError
        cancelling = self._task.cancelling()
        self._reading = True
        try:
            return await anext(stream)
        except asyncio.CancelledError:
            # Ours only if nobody else cancelled the task too (as asyncio.timeout decides).
            if self._expired and self._task.uncancel() <= cancelling:
                raise TimeoutError from None
            raise
        finally:
            self._reading = False
