"""A client that leaves (a Stop button, a dropped connection) is not a server error: in a
real `python -m gateway`, its request is recorded with the status it was sent and its
access line says it left."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import aiohttp

from tests.conftest import iter_events
from tests.procs.gateway import GatewayProcess
from tests.silent import started

QUERY = {"query": "Compare Apple's and Microsoft's revenue over the last three years"}


async def duration_counts(gateway: GatewayProcess, method: str, route: str) -> dict[str, float]:
    """claude_request_duration_ms's sample count by status, for one route."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(gateway.url + "/metrics") as response,
    ):
        text = await response.text()
    pattern = (
        rf'^claude_request_duration_ms_count\{{method="{method}",route="{re.escape(route)}",'
        rf'status="(\d+)"\}} (\S+)$'
    )
    return {status: float(n) for status, n in re.findall(pattern, text, re.MULTILINE)}


async def access_line(gateway: GatewayProcess, request_line: str) -> str:
    async with asyncio.timeout(10):
        while True:
            found = [line for line in gateway.output().splitlines() if request_line in line]
            if found:
                return found[-1]
            await asyncio.sleep(0.05)


async def test_a_client_that_leaves_mid_stream_had_a_200(tmp_path: Path) -> None:
    async with started(tmp_path, GATEWAY_UPSTREAM="demo") as gateway:
        async with aiohttp.ClientSession() as session:
            response = await session.post(gateway.url + "/api/stream", json=QUERY)
            assert response.status == 200
            async for event in iter_events(response):
                if event["type"] == "delta":
                    break  # mid-answer: the model is still writing
            response.close()  # Stop
        line = await access_line(gateway, '"POST /api/stream HTTP/1.1"')
        assert re.search(r'HTTP/1\.1" 200 [1-9]\d* .* client_left$', line), line
        counts = await duration_counts(gateway, "POST", "/api/stream")
        assert counts == {"200": 1.0}, counts


async def test_a_client_that_leaves_before_its_answer_is_a_499(tmp_path: Path) -> None:
    # The demo paced 10x slower: its answer takes seconds, not the one second it takes at
    # its own pace on a quiet machine.
    async with started(tmp_path, GATEWAY_UPSTREAM="demo", GATEWAY_DEMO_PACING_MS="150") as gateway:
        async with aiohttp.ClientSession() as session:
            request = asyncio.create_task(session.post(gateway.url + "/api/research", json=QUERY))
            await asyncio.sleep(1.0)  # the run is under way; nothing was sent yet
            assert not request.done()
            request.cancel()  # the connection closes
        line = await access_line(gateway, '"POST /api/research HTTP/1.1"')
        assert re.search(r'HTTP/1\.1" 499 0 .* client_left$', line), line
        counts = await duration_counts(gateway, "POST", "/api/research")
        assert counts == {"499": 1.0}, counts
