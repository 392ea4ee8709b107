"""The model call's deadline holds for every read of an attempt (one timer for all of them):
a trickling upstream ends with TIMEOUT_ERROR, and a cancel from elsewhere stays a cancel."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from gateway import events
from gateway.errors import UpstreamFailure
from gateway.events import Event
from gateway.providers.base import ModelCall, Turn
from gateway.providers.seam import CallHooks, RetryPolicy, call_model
from gateway.upstream import TurnTranslator

CALL = ModelCall(model="m", max_tokens=10, messages=[], system=None, tools=[])


class Trickle:
    """A provider whose one attempt sends a delta every `every_s`, forever."""

    name = "trickle"
    model = "m"

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self.closed = False

    def new_turn(self, turn: int) -> TurnTranslator:
        return TurnTranslator(turn)

    async def attempt(self, call: ModelCall, turn: Turn) -> AsyncIterator[list[Event]]:
        try:
            while True:
                await asyncio.sleep(self.every_s)
                turn.emitted += 1
                yield [events.delta("x")]
        finally:
            self.closed = True


def hooks() -> CallHooks:
    return CallHooks(on_turn=lambda turn, provider: None)


async def test_a_trickling_upstream_is_stopped_at_the_deadline() -> None:
    provider = Trickle(0.05)
    seen: list[Event] = []
    started = time.monotonic()
    with pytest.raises(UpstreamFailure) as failure:
        async for batch in call_model(
            [provider], CALL, 1, RetryPolicy(call_deadline_s=0.4), hooks()
        ):
            seen += batch
    assert failure.value.code == "TIMEOUT_ERROR" and "0.4 s in all" in failure.value.message
    assert 0.35 < time.monotonic() - started < 2.0
    assert 4 <= len(seen) <= 8 and provider.closed


async def test_the_deadline_is_not_charged_for_the_consumers_own_waits() -> None:
    provider = Trickle(0.01)
    seen = 0
    with pytest.raises(UpstreamFailure):
        async for _ in call_model([provider], CALL, 1, RetryPolicy(call_deadline_s=0.3), hooks()):
            seen += 1
            if seen == 1:
                await asyncio.sleep(0.5)  # past the deadline, while no read is in progress
    assert seen == 1  # the next read raised at once; the consumer's sleep was not cut


async def test_a_cancel_from_elsewhere_stays_a_cancel() -> None:
    provider = Trickle(10.0)

    async def consume() -> None:
        async for _ in call_model([provider], CALL, 1, RetryPolicy(call_deadline_s=5), hooks()):
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.closed
