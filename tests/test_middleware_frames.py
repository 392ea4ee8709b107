"""What an open stream's request holds of the middlewares: those that only look at the
request before it goes on (the guard, CORS, the caller's name) hand back the next
handler's coroutine and keep no frame of their own for the stream's life (a few hundred
bytes each, times every open stream)."""

from __future__ import annotations

import gc
import types
from typing import Any

import pytest

from gateway.http.middleware import observe_requests
from tests.conftest import GatewayFactory, iter_events
from tests.fakes.anthropic import FakeAnthropic, Reply, Text


def held_chain() -> list[str]:
    """The coroutines the one open request awaits, outermost first."""
    outer = [
        o for o in gc.get_objects()
        if isinstance(o, types.CoroutineType) and o.cr_code is observe_requests.__code__
    ]  # fmt: skip
    assert len(outer) == 1 and outer[0].cr_frame is not None  # mid-stream
    chain: list[str] = []
    awaited: Any = outer[0]
    while isinstance(awaited, types.CoroutineType):
        chain.append(awaited.cr_code.co_name)
        awaited = awaited.cr_await
    return chain


@pytest.mark.parametrize(
    ("settings", "headers", "auth_frames"),
    [
        ({}, {}, []),
        ({"gateway_api_keys": "alice:a-key"}, {"Authorization": "Bearer a-key"}, ["_keyed"]),
    ],
    ids=["open", "keyed"],
)
async def test_an_open_stream_holds_no_frame_of_the_looking_middlewares(
    make_gateway: GatewayFactory,
    fake: FakeAnthropic,
    settings: dict[str, Any],
    headers: dict[str, str],
    auth_frames: list[str],
) -> None:
    fake.add(Reply([Text("word " * 40, chunk=5)], delay_s=0.01))
    client = await make_gateway(**settings)
    response = await client.post("/api/stream", json={"query": "x"}, headers=headers)
    async for event in iter_events(response):
        if event["type"] == "delta":
            break
    chain = held_chain()
    assert chain[:2] == ["observe_requests", "answer_errors"]
    looking = {"guard", "cors", "authenticate", "_as", "_admin", "_preflight", "_keyed"}
    assert [name for name in chain if name in looking] == auth_frames
    assert "stream_post" in chain  # the handler itself, under them
    await response.read()
