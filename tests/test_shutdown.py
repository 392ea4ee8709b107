"""Graceful shutdown ends every open stream with its terminal event."""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.app import create_app
from gateway.toolset import StaticToolset
from tests.conftest import iter_events, settings_for
from tests.fakes.anthropic import FakeAnthropic, Reply, Text
from tools.registry import ToolRegistry


async def test_shutdown_ends_open_streams(
    fake: FakeAnthropic, fake_server: TestServer, registry: ToolRegistry
) -> None:
    fake.add(Reply([Text("word " * 500, chunk=5)], delay_s=0.01))
    app = create_app(settings_for(fake_server), toolset=StaticToolset(registry))
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    seen: list[str] = []
    async with aiohttp.ClientSession() as session:
        response = await session.post(f"http://{host}:{port}/api/stream", json={"query": "x"})
        cleanup: asyncio.Task[None] | None = None
        async for event in iter_events(response):
            seen.append(event["type"])
            if event["type"] == "delta" and cleanup is None:
                cleanup = asyncio.create_task(runner.cleanup())
        assert cleanup is not None
        await cleanup
    assert seen[-2:] == ["warning", "final"] and seen.count("final") == 1
    await asyncio.wait_for(fake.disconnected.wait(), 2)
