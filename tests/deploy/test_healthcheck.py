"""deploy/healthcheck.py, the image's HEALTHCHECK, against a real HTTP server."""

from __future__ import annotations

import asyncio
import os
import socket
import sys

import pytest
from aiohttp import web
from pytest_aiohttp import AiohttpServer

from tests.deploy.dashboards import DEPLOY

SCRIPT = DEPLOY / "healthcheck.py"


async def healthcheck(port: int) -> int:
    env = {**os.environ, "PORT": str(port)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(SCRIPT), env=env, stderr=asyncio.subprocess.DEVNULL
    )
    return await asyncio.wait_for(process.wait(), timeout=20)


@pytest.mark.parametrize(("status", "exit_code"), [(200, 0), (503, 0), (500, 1), (404, 1)])
async def test_exit_code_follows_health_status(
    aiohttp_server: AiohttpServer, status: int, exit_code: int
) -> None:
    async def health(request: web.Request) -> web.Response:
        return web.json_response({"ok": status == 200}, status=status)

    app = web.Application()
    app.router.add_get("/health" if status != 404 else "/elsewhere", health)
    server = await aiohttp_server(app, host="127.0.0.1")
    assert server.port is not None
    assert await healthcheck(server.port) == exit_code


async def test_nothing_listening_is_unhealthy() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert await healthcheck(port) == 1
