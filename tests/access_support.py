"""Helpers shared by the access tests: a Redis key prefix of one's own, and waiting for a
run to be over and settled (its slot freed, its tokens charged)."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as redis
from aiohttp.test_utils import TestClient
from redis.exceptions import RedisError

from gateway.http import keys

REDIS_URL = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"


@pytest.fixture
async def redis_prefix() -> AsyncIterator[str]:
    """A key prefix for this test on a Redis that answers (else skip); deleted after it."""
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1.0)
    try:
        await client.ping()
    except (RedisError, OSError) as exc:
        await client.aclose()
        pytest.skip(f"no Redis answers at {REDIS_URL}: {exc}")
    prefix = f"rgtest:{uuid.uuid4().hex[:12]}:"
    yield prefix
    found = [key async for key in client.scan_iter(match=f"{prefix}*")]
    if found:
        await client.delete(*found)
    await client.aclose()


async def settled(client: TestClient[Any, Any], run_id: str) -> None:
    """Wait until the run's task has ended and the limits gate has settled it."""
    run = client.app[keys.RUNS].get(run_id)
    assert run is not None and run.task is not None
    await run.task
    await asyncio.sleep(0)  # the task's done callbacks (the gate's among them) run first
    await client.app[keys.LIMITS].settled()
