"""Runs in a loop against a real gateway, and its /metrics read as numbers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import iter_events

QUESTION = "What was Apple revenue in fiscal 2023 and how did it compare to Microsoft?"
"""The demo's answer has a failing tool call (Microsoft's figures are not in its snapshot)."""
Sample = tuple[str, tuple[tuple[str, str], ...]]  # a sample's name and sorted labels


async def scrape(url: str, timeout_s: float = 10.0) -> tuple[str, dict[Sample, float]]:
    """One GET /metrics on a new connection (the kernel picks the worker): its text, and
    every sample by name and labels."""
    connector = aiohttp.TCPConnector(force_close=True)
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with (
        aiohttp.ClientSession(connector=connector, timeout=timeout) as session,
        session.get(url + "/metrics") as response,
    ):
        assert response.status == 200
        text = await response.text()
    return text, samples_of(text)


def samples_of(text: str) -> dict[Sample, float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def counted(samples: dict[Sample, float]) -> dict[Sample, float]:
    """The samples that may only go up: counters' and histograms' (not their `_created`)."""
    return {
        key: value
        for key, value in samples.items()
        if key[0].endswith(("_total", "_bucket", "_count", "_sum"))
    }


def total(samples: dict[Sample, float], name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


class Load:
    """`clients` runs at a time against `url`, each started again when it ends."""

    def __init__(self, url: str, clients: int = 3, question: str = QUESTION) -> None:
        self.url, self.clients, self.question = url, clients, question
        self.completed = 0  # runs whose `final` said completed
        self.broken = 0  # runs whose stream broke (a worker killed under them)
        self._stop = asyncio.Event()

    async def _client(self) -> None:
        connector = aiohttp.TCPConnector(force_close=True)  # new connections: any worker
        async with aiohttp.ClientSession(connector=connector) as session:
            while not self._stop.is_set():
                try:
                    final = await self._run(session)
                except (aiohttp.ClientError, TimeoutError):
                    self.broken += 1
                    await asyncio.sleep(0.1)
                    continue
                if final is not None and final.get("outcome") == "completed":
                    self.completed += 1
                else:
                    self.broken += 1

    async def _run(self, session: aiohttp.ClientSession) -> dict[str, Any] | None:
        body = {"query": self.question}
        async with session.post(self.url + "/api/stream", json=body) as response:
            assert response.status == 200, await response.text()
            async for event in iter_events(response):
                if event["type"] == "final":
                    return event
        return None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Load]:
        """Clients run until the block ends; then each finishes the run it is in."""
        self._stop.clear()
        tasks = [asyncio.create_task(self._client()) for _ in range(self.clients)]
        try:
            yield self
        finally:
            self._stop.set()
            await asyncio.gather(*tasks)
