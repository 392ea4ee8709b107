"""`python -m gateway` listens with a backlog for bursts of new streams, not aiohttp's 128."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from gateway.http.serving import LISTEN_BACKLOG
from tests.procs.gateway import gateway_process


def _somaxconn() -> int:
    return int(Path("/proc/sys/net/core/somaxconn").read_text())


async def test_the_listen_backlog_takes_a_burst_of_connections(tmp_path: Path) -> None:
    ss = shutil.which("ss")
    if ss is None:
        pytest.skip("needs `ss` (iproute2)")
    async with gateway_process(tmp_path, GATEWAY_UPSTREAM="demo") as gateway:
        process = await asyncio.create_subprocess_exec(
            ss, "-Hltn", f"sport = :{gateway.port}", stdout=asyncio.subprocess.PIPE
        )
        out, _ = await process.communicate()
    # A listening socket's Send-Q is its backlog (as the kernel capped it).
    somaxconn = _somaxconn()
    backlogs = {int(line.split()[2]) for line in out.decode().splitlines()}
    assert backlogs == {min(LISTEN_BACKLOG, somaxconn)} and LISTEN_BACKLOG >= 1024
