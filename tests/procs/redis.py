"""A real `redis-server` of the test's own, on a free port, stopped (or restarted) by it."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as redis
from redis.exceptions import RedisError


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class RedisServer:
    """One redis-server; `stop` and `start` again keep its data (append-only file)."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._dir = workdir
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed")
        args = ["--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        args += ["--appendonly", "yes", "--appendfsync", "always", "--dir", str(self._dir)]
        self._process = await asyncio.create_subprocess_exec(
            binary, *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
        )
        client = redis.Redis.from_url(self.url)
        try:
            async with asyncio.timeout(10):
                while True:
                    with contextlib.suppress(RedisError, OSError):
                        if await client.ping():
                            return
                    await asyncio.sleep(0.02)
        finally:
            await client.aclose()

    async def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            process.terminate()
            await process.wait()


@contextlib.asynccontextmanager
async def redis_server(workdir: Path) -> AsyncIterator[RedisServer]:
    server = RedisServer(workdir)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
