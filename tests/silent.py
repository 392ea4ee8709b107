"""Helpers for tests against a real gateway process: clients that never read (a tiny
receive window, nothing taken off the socket), a finished run with a large log, and the
process's resident memory."""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
from aiohttp.test_utils import TestServer

from tests.fakes.anthropic import FakeAnthropic, Reply, Text
from tests.procs.gateway import GatewayProcess

STARTUP_S = 90.0  # a loaded machine (the suite's processes side by side) is slow to start one

WORDS = [f"{stem}{end}" for stem in ("fil", "rev", "cash", "debt", "lease", "risk", "note",
         "asset", "equity", "loss") for end in ("ing", "s", "ed", "", "al", "ity")]  # fmt: skip


@contextlib.asynccontextmanager
async def started(workdir: Path, **env: str) -> AsyncIterator[GatewayProcess]:
    """A gateway process, killed at the end if the test left it running."""
    gateway = GatewayProcess(workdir, **env)
    await gateway.start(wait=False)
    try:
        await gateway.until_healthy(STARTUP_S)
        yield gateway
    finally:
        if gateway.process is not None and gateway.process.returncode is None:
            gateway.process.kill()
            await gateway.process.wait()


def upstream_env(fake_server: TestServer, **env: str) -> dict[str, str]:
    """A gateway process's settings for the test's fake Anthropic server."""
    return {
        "ANTHROPIC_API_KEY": "sk-test",
        "ANTHROPIC_BASE_URL": str(fake_server.make_url("")).rstrip("/"),
        "GATEWAY_UPSTREAM": "anthropic",
        "SDK_MODEL": "claude-test-model",
        **env,
    }


def answer_text(size: int, seed: int = 7) -> str:
    """Words in a random order: compresses as an answer would, not as one letter repeated."""
    pick = random.Random(seed).choice
    words: list[str] = []
    length = 0
    while length < size:
        words.append(pick(WORDS))
        length += len(words[-1]) + 1
    return " ".join(words)


async def finished_big_run(
    gateway: GatewayProcess, fake: FakeAnthropic, log_bytes: int
) -> tuple[str, int]:
    """A finished run whose log is about `log_bytes` of SSE; its id and log size."""
    # A 40-character delta makes a frame of ~150 bytes, and `final` repeats the text.
    fake.add(Reply([Text(answer_text(log_bytes * 10 // 46), chunk=40)]))
    async with aiohttp.ClientSession() as session:
        response = await session.post(gateway.url + "/api/stream", json={"query": "x"})
        body = await response.read()
    assert body.count(b'"type":"final"') == 1
    run_id = re.search(rb'"run_id":"(run_\w+)"', body)
    assert run_id is not None
    return run_id.group(1).decode(), len(body)


async def silent_reader(port: int, path: str) -> socket.socket:
    """A GET that reads nothing, not even the headers, with a 4 KB receive window."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, ("127.0.0.1", port))
    await loop.sock_sendall(sock, f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    return sock


def rss_bytes(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    assert match is not None
    return int(match.group(1)) * 1024


async def sse_readers(gateway: GatewayProcess) -> float:
    async with (
        aiohttp.ClientSession() as session,
        session.get(gateway.url + "/metrics") as response,
    ):
        text = await response.text()
    match = re.search(r"^sdk_sse_readers (\S+)$", text, re.MULTILINE)
    assert match is not None
    return float(match.group(1))


async def until_readers(gateway: GatewayProcess, count: int, timeout_s: float = 20) -> None:
    async with asyncio.timeout(timeout_s):
        while await sse_readers(gateway) != count:
            await asyncio.sleep(0.05)
