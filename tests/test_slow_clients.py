"""Clients that do not read: dropped after the write deadline (their connection and its
buffers released, the run left to the grace rule), and no reason for shutdown to wait."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from pytest_aiohttp import AiohttpClient

from gateway.http import keys
from gateway.http.app import create_app
from gateway.http.writer import SSEWriter
from gateway.runs.tools import StaticToolset
from tests.conftest import GatewayFactory, read_events, settings_for
from tests.fakes.anthropic import FakeAnthropic, Reply, Text
from tools.registry import ToolRegistry

Client = TestClient[Any, Any]
BIG = "x" * 12_000_000  # more than the kernel buffers on both ends of a loopback socket


async def non_reader(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Start a stream, read its headers, then read nothing: a tiny receive window."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=2**16)
    writer.write(
        b"POST /api/stream HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b'Content-Length: 14\r\n\r\n{"query": "x"}'
    )
    await reader.readuntil(b"\r\n\r\n")
    return reader, writer


async def drained_to_end(reader: asyncio.StreamReader) -> int:
    """Read what the server left in the socket; it must end (closed or reset)."""
    total = 0
    try:
        while chunk := await reader.read(2**20):
            total += len(chunk)
    except ConnectionResetError:
        pass
    return total


async def test_a_client_that_does_not_read_is_dropped(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(gateway_write_timeout_s=0.5, gateway_resume_grace_s=5.0)
    fake.add(Reply([Text(BIG, chunk=60_000)]))
    assert client.port is not None
    reader, writer = await non_reader(client.host, client.port)
    manager = client.app[keys.RUNS]
    [run] = manager.active() or [None]
    assert run is not None
    started = time.monotonic()
    async with asyncio.timeout(10):
        while run.readers:  # the stream handler gave up on it
            await asyncio.sleep(0.05)
    assert time.monotonic() - started < 8
    async with asyncio.timeout(10):
        received = await drained_to_end(reader)
    writer.close()
    assert received < len(BIG)  # cut off, not delivered
    # The run went on (grace 5 s): a reader that does read gets all of it.
    events = await read_events(await client.get(f"/api/stream/{run.id}"))
    assert events[-1]["type"] == "final" and events[-1]["result"] == BIG


async def test_shutdown_does_not_wait_for_non_readers(
    fake: FakeAnthropic, fake_server: TestServer, registry: ToolRegistry
) -> None:
    fake.add(*[Reply([Text(BIG, chunk=60_000)]) for _ in range(3)])
    settings = settings_for(fake_server, gateway_write_timeout_s=1.0)
    app = create_app(settings, toolset=StaticToolset(registry))
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    clients = [await non_reader(host, port) for _ in range(3)]
    await asyncio.sleep(0.5)
    started = time.monotonic()
    await runner.cleanup()
    assert time.monotonic() - started < 4
    for _, writer in clients:
        writer.close()


async def test_frames_go_out_whole_from_a_list_or_one_buffer(
    aiohttp_client: AiohttpClient,
) -> None:
    frames = [b"id: %d\ndata: %b\n\n" % (n, b"x" * (n * 997 % 90_000)) for n in range(60)]

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        writer = SSEWriter(request, response, 5.0)
        await writer.write_frames(frames)
        await writer.write_frames(b"".join(frames))
        writer.close()
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_get("/", handler)
    client = await aiohttp_client(app)
    body = await (await client.get("/")).read()
    assert body == b"".join(frames) * 2
