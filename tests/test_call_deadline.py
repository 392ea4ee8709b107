"""The model call's deadline holds for the whole call, its retries included: a trickling
upstream ends with TIMEOUT_ERROR, and a cancel from elsewhere stays a cancel."""

from __future__ import annotations

import asyncio
import time

import pytest

from gateway import events
from gateway.errors import UpstreamFailure
from gateway.events import Event
from gateway.providers.base import Emit, ModelCall, Turn
from gateway.providers.seam import CallHooks, RetryPolicy, call_model
from gateway.upstream import TurnTranslator

CALL = ModelCall(model="m", max_tokens=10, messages=[], system=None, tools=[])


class Trickle:
    """A provider whose attempts send a delta every `every_s`, forever; with `fail_after`,
    an attempt fails (retryably, before emitting) after that long instead."""

    name = "trickle"
    model = "m"

    def __init__(self, every_s: float, fail_after: float | None = None) -> None:
        self.every_s = every_s
        self.fail_after = fail_after
        self.attempts = 0
        self.closed = False

    def new_turn(self, turn: int) -> TurnTranslator:
        return TurnTranslator(turn)

    async def attempt(self, call: ModelCall, turn: Turn, emit: Emit) -> None:
        self.attempts += 1
        try:
            if self.fail_after is not None:
                await asyncio.sleep(self.fail_after)
                raise UpstreamFailure("OVERLOADED_ERROR", "busy", retryable=True)
            while True:
                await asyncio.sleep(self.every_s)
                turn.emitted += 1
                await emit([events.delta("x")])
        finally:
            self.closed = True


def hooks() -> CallHooks:
    return CallHooks(on_turn=lambda turn, provider: None)


async def test_a_trickling_upstream_is_stopped_at_the_deadline() -> None:
    provider = Trickle(0.05)
    seen: list[Event] = []

    async def emit(batch: list[Event]) -> None:
        seen.extend(batch)

    started = time.monotonic()
    with pytest.raises(UpstreamFailure) as failure:
        await call_model([provider], CALL, 1, RetryPolicy(call_deadline_s=0.4), hooks(), emit)
    assert failure.value.code == "TIMEOUT_ERROR" and "0.4 s in all" in failure.value.message
    assert not failure.value.retryable
    assert 0.35 < time.monotonic() - started < 2.0
    assert 4 <= len(seen) <= 8 and provider.closed


async def test_the_deadline_counts_every_attempt_and_wait() -> None:
    # Each attempt fails after 0.15 s and is retried after ~0.05 s: the third attempt is
    # cut at 0.4 s, not given its own 0.15 s.
    provider = Trickle(1.0, fail_after=0.15)
    policy = RetryPolicy(call_deadline_s=0.4, base_delay_s=0.05, max_delay_s=0.05)
    warnings: list[Event] = []

    async def emit(batch: list[Event]) -> None:
        warnings.extend(batch)

    started = time.monotonic()
    with pytest.raises(UpstreamFailure) as failure:
        await call_model([provider], CALL, 1, policy, hooks(), emit)
    assert failure.value.code == "TIMEOUT_ERROR" and "0.4 s in all" in failure.value.message
    assert 0.35 < time.monotonic() - started < 1.0
    assert provider.attempts == 3
    assert [w["code"] for w in warnings] == ["upstream_retry", "upstream_retry"]  # type: ignore[typeddict-item]


async def test_a_cancel_from_elsewhere_stays_a_cancel() -> None:
    provider = Trickle(10.0)

    async def emit(batch: list[Event]) -> None:
        pass

    task = asyncio.create_task(
        call_model([provider], CALL, 1, RetryPolicy(call_deadline_s=5), hooks(), emit)
    )
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.closed
