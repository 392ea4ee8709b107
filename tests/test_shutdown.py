"""Graceful shutdown ends every open stream with its terminal event, within a bound."""

from __future__ import annotations

import asyncio
import signal
import socket
import time
from pathlib import Path

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.http import serving
from gateway.http.app import create_app
from gateway.runs.tools import StaticToolset
from tests.conftest import iter_events, settings_for
from tests.fakes.anthropic import FakeAnthropic, Reply, Text
from tests.silent import finished_big_run, silent_reader, started, until_readers, upstream_env
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


async def test_sigterm_with_silent_readers_stops_within_the_bound(
    tmp_path: Path, fake: FakeAnthropic, fake_server: TestServer
) -> None:
    """A real process: streams get GATEWAY_SHUTDOWN_TIMEOUT_S to deliver their end, those
    whose clients read nothing are closed then, and the process exits within it + 5 s."""
    bound = 3.0
    env = {"GATEWAY_SHUTDOWN_TIMEOUT_S": str(bound), "GATEWAY_WRITE_TIMEOUT_S": "120"}
    async with started(tmp_path, **upstream_env(fake_server, **env)) as gateway:
        assert gateway.process is not None
        finished, _ = await finished_big_run(gateway, fake, 6_000_000)
        silent = [await silent_reader(gateway.port, f"/api/stream/{finished}") for _ in range(10)]
        fake.add(Reply([Text("word " * 2000, chunk=5)], delay_s=0.02))
        async with aiohttp.ClientSession() as session:
            live = await session.post(gateway.url + "/api/stream", json={"query": "x"})
            events = iter_events(live)
            seen = [(await anext(events))["type"]]
            await until_readers(gateway, 11)
            signalled = time.monotonic()
            gateway.process.send_signal(signal.SIGTERM)
            seen += [event["type"] async for event in events]
        async with asyncio.timeout(bound + 10):
            code = await gateway.process.wait()
        stopped = time.monotonic() - signalled
        print(f"stopped {stopped:.1f} s after SIGTERM (bound {bound:g} s + 5 s)")
        cut = [await drained(sock) for sock in silent]
    assert seen[-2:] == ["warning", "final"]  # a client that reads gets its run's end
    assert code == 0
    assert bound - 0.5 < stopped < bound + serving.EXIT_MARGIN_S, stopped
    log = gateway.output()
    assert f"closing 10 connections still open after {bound:g} s" in log
    assert log.count(" closed_at_shutdown\n") == 10  # their access lines say so
    assert all(0 < received < 6_000_000 for received in cut), cut  # cut off mid-replay


async def drained(sock: socket.socket) -> int:
    """What a silent reader's socket still had to give, up to its close or reset."""
    loop = asyncio.get_running_loop()
    total = 0
    try:
        async with asyncio.timeout(10):
            while chunk := await loop.sock_recv(sock, 1 << 20):
                total += len(chunk)
    except ConnectionResetError:
        pass
    finally:
        sock.close()
    return total
