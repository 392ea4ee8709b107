"""The model call's deadline holds for the whole call, its retries included: a trickling
upstream ends with TIMEOUT_ERROR, and a cancel from elsewhere stays a cancel."""

from __future__ import annotations

import asyncio
import time

import pytest

from gateway import events
from gateway.errors import UpstreamFailure
from gateway.events import Event
from gateway.providers.anthropic.stream import TurnTranslator
from gateway.providers.base import Emit, ModelCall, Turn
from gateway.providers.seam import CallHooks, RetryPolicy, call_model

CALL = ModelCall(model="m", max_tokens=10, messages=[], system=None, tools=[])


class Trickle:
    """A provider whose attempts send a delta every `every_s`, forever; the first `failing`
    attempts fail instead (retryably, before emitting), after `every_s`."""

    name = "trickle"
    model = "m"

    def __init__(self, every_s: float, failing: int = 0) -> None:
        self.every_s = every_s
        self.failing = failing
        self.attempts = 0
        self.closed = False

    def new_turn(self, turn: int) -> TurnTranslator:
        return TurnTranslator(turn)

    async def attempt(self, call: ModelCall, turn: Turn, emit: Emit) -> None:
        self.attempts += 1
        try:
            if self.attempts <= self.failing:
                await asyncio.sleep(self.every_s)
                raise UpstreamFailure("OVERLOADED_ERROR", "busy", retryable=True)
            while True:
                await asyncio.sleep(self.every_s)
                turn.emitted += 1
                emit([events.delta("x")])
        finally:
            self.closed = True


def hooks() -> CallHooks:
    return CallHooks(on_turn=lambda turn, provider: None)


async def test_a_trickling_upstream_is_stopped_at_the_deadline() -> None:
    provider = Trickle(0.05)
    seen: list[Event] = []

    def emit(batch: list[Event]) -> None:
        seen.extend(batch)

    started = time.monotonic()
    with pytest.raises(UpstreamFailure) as failure:
        await call_model([provider], CALL, 1, RetryPolicy(call_deadline_s=0.4), hooks(), emit)
    assert failure.value.code == "TIMEOUT_ERROR" and "0.4 s in all" in failure.value.message
    assert not failure.value.retryable
    assert 0.35 < time.monotonic() - started < 2.0
    assert 4 <= len(seen) <= 8 and provider.closed


async def test_the_deadline_counts_every_attempt_and_wait() -> None:
    # Two attempts fail after 0.1 s each and are retried after ~0.02 s: the third trickles
    # and is cut at 0.5 s from the call's start, not given 0.5 s of its own.
    provider = Trickle(0.1, failing=2)
    policy = RetryPolicy(call_deadline_s=0.5, base_delay_s=0.02, max_delay_s=0.02)
    emitted: list[Event] = []

    def emit(batch: list[Event]) -> None:
        emitted.extend(batch)

    started = time.monotonic()
    with pytest.raises(UpstreamFailure) as failure:
        await call_model([provider], CALL, 1, policy, hooks(), emit)
    assert failure.value.code == "TIMEOUT_ERROR" and "0.5 s in all" in failure.value.message
    assert 0.45 < time.monotonic() - started < 0.9
    assert provider.attempts == 3
    retries = [e for e in emitted if e["type"] == "warning"]
    assert len(retries) == 2 and 1 <= len(emitted) - 2 <= 3  # the third's deltas


async def test_a_cancel_from_elsewhere_stays_a_cancel() -> None:
    provider = Trickle(10.0)

    def emit(batch: list[Event]) -> None:
        pass

    task = asyncio.create_task(
        call_model([provider], CALL, 1, RetryPolicy(call_deadline_s=5), hooks(), emit)
    )
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.closed
