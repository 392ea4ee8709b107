"""Real `python -m gateway` processes for the tests: the demo upstream (no API key), a
port of their own, and whatever settings the test gives as environment variables."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from tests.procs.redis import free_port

ROOT = Path(__file__).resolve().parents[2]


class GatewayProcess:
    """`python -m gateway *args` with `env` on top of a clean environment."""

    def __init__(self, workdir: Path, *args: str, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = args
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(ROOT),
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "GATEWAY_GC_FREEZE": "false",
            **env,
        }
        self.workdir = workdir  # the cwd: no .env of the repository is read
        self.log = workdir / f"gateway-{self.port}.log"
        self.process: asyncio.subprocess.Process | None = None

    async def start(self, *, wait: bool = True) -> None:
        with self.log.open("ab") as log:  # a file, not a pipe: nobody has to drain it
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "gateway", *self.args, cwd=self.workdir, env=self.env,
                stdout=log, stderr=log,
            )  # fmt: skip
        if wait:
            await self.until_healthy()

    async def until_healthy(self, timeout_s: float = 20.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout_s):
            while True:
                with contextlib.suppress(aiohttp.ClientError):
                    return await self.health()
                await asyncio.sleep(0.05)

    async def health(self) -> dict[str, Any]:
        """One /health on a new connection (so the kernel may pick another worker)."""
        connector = aiohttp.TCPConnector(force_close=True)
        async with (
            aiohttp.ClientSession(connector=connector) as session,
            session.get(self.url + "/health") as response,
        ):
            body: dict[str, Any] = await response.json()
            return body

    async def stop(self, sig: int = signal.SIGTERM) -> int:
        process = self.process
        if process is None:
            return 0
        if process.returncode is None:
            process.send_signal(sig)
        async with asyncio.timeout(30):
            return await process.wait()

    def output(self) -> str:
        return self.log.read_text() if self.log.exists() else ""


@contextlib.asynccontextmanager
async def gateway_process(workdir: Path, *args: str, **env: str) -> AsyncIterator[GatewayProcess]:
    gateway = GatewayProcess(workdir, *args, **env)
    try:
        await gateway.start()  # inside: a gateway that never got healthy is stopped too
        yield gateway
    finally:
        if gateway.process is not None and gateway.process.returncode is None:
            gateway.process.terminate()  # a supervisor stops its workers
            try:
                async with asyncio.timeout(20):
                    await gateway.process.wait()
            except TimeoutError:
                gateway.process.kill()
                await gateway.process.wait()
