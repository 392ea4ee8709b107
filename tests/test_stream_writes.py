"""A stream costs few writes: the response headers go with the run's opening events
(`system_info` and the first `turn_start` in one batch), the terminal event with the end of
the chunked body, and the last `turn_complete` with both; a re-attach that has nothing new
yet gets its headers at once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from pytest_aiohttp import AiohttpClient

from gateway.http.access_log import AccessLog
from gateway.http.app import create_app
from gateway.runs.tools import StaticToolset
from tests.conftest import iter_events, settings_for
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse
from tools.registry import ToolRegistry

Client = TestClient[Any, Any]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class CountingTransport:
    """The connection's transport, recording each write the server makes on it."""

    def __init__(self, transport: Any, writes: list[bytes]) -> None:
        self._transport = transport
        self._writes = writes

    def write(self, data: bytes) -> None:
        self._writes.append(bytes(data))
        self._transport.write(data)

    def writelines(self, chunks: Iterable[bytes]) -> None:
        self.write(b"".join(chunks))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


async def _gateway(
    fake_server: TestServer, registry: ToolRegistry, aiohttp_client: AiohttpClient,
    **server_kwargs: Any,
) -> tuple[Client, list[list[bytes]]]:  # fmt: skip
    """The gateway, each stream's server-side writes recorded in a list of its own."""
    recorded: list[list[bytes]] = []

    @web.middleware
    async def count_writes(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.startswith("/api/stream"):
            writes: list[bytes] = []
            recorded.append(writes)
            request.protocol.transport = CountingTransport(request.transport, writes)  # type: ignore[assignment]
        return await handler(request)

    app = create_app(settings_for(fake_server), toolset=StaticToolset(registry))
    app.middlewares.insert(0, count_writes)
    server = TestServer(app)
    await server.start_server(**server_kwargs)  # the runner's options
    return await aiohttp_client(server), recorded


async def test_headers_go_with_the_opening_events_and_the_end_with_the_final(
    fake: FakeAnthropic, fake_server: TestServer, registry: ToolRegistry,
    aiohttp_client: AiohttpClient,
) -> None:  # fmt: skip
    fake.add(Reply([Text("Revenue grew.")]))
    client, recorded = await _gateway(fake_server, registry, aiohttp_client)
    response = await client.post("/api/stream", json={"query": "x"})
    events = [event async for event in iter_events(response)]
    assert [e["type"] for e in events][:3] == ["system_info", "system_init", "turn_start"]
    assert events[-1]["type"] == "final"
    writes = recorded[0]
    first, last = writes[0], writes[-1]
    assert first.startswith(b"HTTP/1.1 200")
    assert b'"type":"system_info"' in first and b'"type":"turn_start"' in first
    assert b'"type":"final"' in last and last.endswith(b"\r\n0\r\n\r\n")


async def test_the_last_turn_complete_goes_with_the_final_and_the_end(
    fake: FakeAnthropic, fake_server: TestServer, registry: ToolRegistry,
    aiohttp_client: AiohttpClient,
) -> None:  # fmt: skip
    # The run's task appends `turn_complete`, then `final`, in one step: the stream's task
    # writes them together (it used to be pushed alone: a write and a TCP segment a run).
    fake.add(Reply([ToolUse("sleep", {"seconds": 0.01})]), Reply([Text("Revenue grew.")]))
    client, recorded = await _gateway(fake_server, registry, aiohttp_client)
    response = await client.post("/api/stream", json={"query": "x"})
    events = [event async for event in iter_events(response)]
    completes = [e["seq"] for e in events if e["type"] == "turn_complete"]
    assert len(completes) == 2 and events[-1]["type"] == "final"
    last = recorded[0][-1]
    assert last.split(b"\r\n", 1)[1].startswith(b"id: %d\n" % completes[-1])  # one chunk
    assert b'"type":"final"' in last and last.endswith(b"\r\n0\r\n\r\n")
    # The tool round's first `turn_complete` did not wait for the run's end.
    first_complete = b"id: %d\n" % completes[0]
    assert not any(first_complete in write and b'"type":"final"' in write for write in recorded[0])


async def test_a_reattach_with_nothing_new_gets_its_headers_at_once(
    fake: FakeAnthropic, fake_server: TestServer, registry: ToolRegistry,
    aiohttp_client: AiohttpClient,
) -> None:  # fmt: skip
    fake.add(Reply([ToolUse("sleep", {"seconds": 1.5})]), Reply([Text("done")]))
    client, recorded = await _gateway(fake_server, registry, aiohttp_client)
    first = await client.post("/api/stream", json={"query": "x"})
    seen: list[dict[str, Any]] = []
    async for event in iter_events(first):
        seen.append(event)
        if event["type"] == "tool_call" and event["phase"] == "tool_executing":
            break  # nothing more until the tool's 1.5 s are over
    first.close()
    # Caught up to the last event written: nothing to send until the next one.
    run_id, last = seen[0]["run_id"], seen[-1]["seq"]
    started = asyncio.get_running_loop().time()
    again = await client.get(f"/api/stream/{run_id}", headers={"Last-Event-ID": str(last)})
    assert again.status == 200 and again.headers["Content-Type"] == "text/event-stream"
    assert asyncio.get_running_loop().time() - started < 0.5
    assert recorded[-1][0].startswith(b"HTTP/1.1 200")
    async for event in iter_events(again):
        assert event["seq"] > last
        if event["type"] == "final":
            break


async def test_the_access_log_counts_what_went_past_aiohttps_writer(
    fake: FakeAnthropic, fake_server: TestServer, registry: ToolRegistry,
    aiohttp_client: AiohttpClient, caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    # The model's events are written to the transport by the run as they arrive, not by
    # aiohttp's writer; the access line still has every byte of the response.
    fake.add(Reply([Text("Revenue grew by a lot this year.", chunk=4)]))
    client, recorded = await _gateway(
        fake_server, registry, aiohttp_client, access_log_class=AccessLog
    )
    with caplog.at_level(logging.INFO, logger="aiohttp.access"):
        response = await client.post("/api/stream", json={"query": "x"})
        assert [e async for e in iter_events(response)][-1]["type"] == "final"
        await asyncio.sleep(0.05)  # the line is written once the handler returns
    lines = [
        r.getMessage() for r in caplog.records if '"POST /api/stream HTTP/1.1"' in r.getMessage()
    ]
    assert len(lines) == 1
    sent = sum(len(write) for write in recorded[0])
    assert lines[0].split('" 200 ')[1].split()[0] == str(sent)
    assert len(recorded[0]) > 4  # some frames went out one by one, past aiohttp's writer
