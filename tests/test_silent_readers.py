"""Re-attaches that read nothing cost a bounded window each, not a copy of the run's log:
measured in a real `python -m gateway` process, by its resident memory, with real sockets
that never read.

The issue's case, the default here: 50 re-attaches of a finished run with a 6 MB log
(149 -> 738 MB then; +310 MB measured here before the fix, +9 MB after). The log must be
larger than what the kernel takes off a stream (up to 4 MB of send buffer on loopback),
or a reader costs the process nothing either way; the readers cost little time beside
starting the process and the run. The bound is the issue's target, < 100 MB for 50 x 6
MB: a third of (readers x log size). `SILENT_LOG_MB` and `SILENT_READERS` change the size.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer

from tests.fakes.anthropic import FakeAnthropic
from tests.procs.gateway import GatewayProcess
from tests.procs.redis import redis_server
from tests.silent import (
    finished_big_run,
    rss_bytes,
    silent_reader,
    started,
    until_readers,
    upstream_env,
)

LOG_BYTES = int(float(os.environ.get("SILENT_LOG_MB", "6")) * 1_000_000)
READERS = int(os.environ.get("SILENT_READERS", "50"))


async def test_silent_readers_hold_a_window_each_not_the_log(
    tmp_path: Path, fake: FakeAnthropic, fake_server: TestServer
) -> None:
    env = upstream_env(fake_server, GATEWAY_WRITE_TIMEOUT_S="120")
    async with started(tmp_path, **env) as gateway:
        assert gateway.process is not None
        pid = gateway.process.pid
        run_id, log_bytes = await finished_big_run(gateway, fake, LOG_BYTES)
        assert log_bytes > LOG_BYTES * 0.8
        await asyncio.sleep(0.5)
        added = await added_by_silent_readers(gateway, pid, run_id)
        print(f"{READERS} silent readers of a {log_bytes / 1e6:.1f} MB log added "
              f"{added / 1e6:.1f} MB")  # fmt: skip
        assert added < READERS * log_bytes / 3, (added, READERS * log_bytes)


@pytest.mark.redis
async def test_silent_readers_on_another_worker_hold_a_window_each(
    tmp_path: Path, fake: FakeAnthropic, fake_server: TestServer
) -> None:
    """The same re-attaches on a process that reads the run from Redis (+286 MB for 50 x
    6 MB before its backlog was read a window at a time; +30 MB after)."""
    async with redis_server(tmp_path) as redis:
        env = upstream_env(fake_server, GATEWAY_WRITE_TIMEOUT_S="120", REDIS_URL=redis.url)
        async with started(tmp_path, **env) as owner, started(tmp_path, **env) as other:
            assert other.process is not None
            run_id, log_bytes = await finished_big_run(owner, fake, LOG_BYTES)
            await asyncio.sleep(1.0)  # the mirror's last writes
            added = await added_by_silent_readers(other, other.process.pid, run_id)
    print(f"{READERS} silent readers on another worker of a {log_bytes / 1e6:.1f} MB log "
          f"added {added / 1e6:.1f} MB")  # fmt: skip
    assert added < READERS * log_bytes / 3, (added, READERS * log_bytes)


async def added_by_silent_readers(gateway: GatewayProcess, pid: int, run_id: str) -> int:
    """What READERS silent re-attaches of the run add to the process, at their peak."""
    before = rss_bytes(pid)
    path = f"/api/stream/{run_id}"
    readers = [await silent_reader(gateway.port, path) for _ in range(READERS)]
    try:
        await until_readers(gateway, READERS)
        peak = before
        for _ in range(40):  # the replays have written all a socket takes by now
            peak = max(peak, rss_bytes(pid))
            await asyncio.sleep(0.05)
    finally:
        for sock in readers:
            sock.close()
    return peak - before
