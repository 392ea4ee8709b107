"""A batch manager in this process against the strict fake Message Batches API over HTTP:
the gateway app gives it its runs' factory, its planner and its Batches API client (the
real SDK's); the manager itself is made here, with its audit, metrics, journal and
end hooks recorded, so a test reads what it did."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from aiohttp.test_utils import TestClient
from prometheus_client import CollectorRegistry
from pytest_aiohttp import AiohttpClient, AiohttpServer

from gateway.batches.batch import Batch
from gateway.batches.journal import Journal, MemoryJournal
from gateway.batches.manager import BatchManager, BatchOptions
from gateway.http import keys
from gateway.http.app import create_app
from gateway.ops.audit import AuditLog
from gateway.ops.metrics import Metrics
from gateway.runs.loop import LoopConfig
from gateway.runs.run import Run, RunRequest
from gateway.runs.tools import StaticToolset
from gateway.sse import parse_frames
from tests.conftest import settings_for
from tests.fakes.batches import FakeBatches, Script
from tests.test_batches_faults import script
from tools.registry import ToolRegistry

Client = TestClient[Any, Any]
MODEL = "claude-test-model"


class Audit:
    """The audit log's `write`, kept."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def write(self, event: str, fields: dict[str, Any]) -> None:
        self.lines.append((event, fields))

    def of(self, event: str) -> list[dict[str, Any]]:
        return [fields for kind, fields in self.lines if kind == event]


@dataclass
class Harness:
    client: Client
    fake: FakeBatches
    manager: BatchManager
    metrics: Metrics
    audit: Audit
    questions_ended: list[tuple[Run, dict[str, int], float | None]] = field(default_factory=list)
    batches_ended: list[Batch] = field(default_factory=list)
    made: list[BatchManager] = field(default_factory=list)

    async def configs(self, requests: list[RunRequest]) -> list[LoopConfig]:
        planner = self.client.app[keys.PLANNER]
        return [await planner.config(request) for request in requests]

    async def start(self, count: int, owner: str = "alice") -> Batch:
        requests = [request(f"Question {i}", owner) for i in range(count)]
        return self.manager.start(owner, requests, await self.configs(requests), "req_1")

    def successor(self, journal: Journal) -> BatchManager:
        """Another worker's manager on the same API (a batch taken over goes on there)."""
        manager = BatchManager(
            self.manager.factory, self.manager.api, self.manager.options, self.metrics, journal,
            audit=cast(AuditLog, self.audit),
            on_question_end=lambda *args: self.questions_ended.append(args),
            on_batch_end=self.batches_ended.append,
        )  # fmt: skip
        self.made.append(manager)
        return manager

    def metric(self, name: str, **labels: str) -> float:
        value = self.metrics.registry.get_sample_value(name, labels)
        return 0.0 if value is None else value


def request(query: str, owner: str = "alice", session_id: str | None = None) -> RunRequest:
    return RunRequest([{"role": "user", "content": query}], session_id=session_id, caller=owner)


def logged(batch: Batch) -> list[dict[str, Any]]:
    return parse_frames(batch.log.read(0))


def run_events(run: Run) -> list[dict[str, Any]]:
    return parse_frames(run.log.read(0))


async def ended(batch: Batch, timeout_s: float = 20) -> Batch:
    assert batch.task is not None
    async with asyncio.timeout(timeout_s):
        await batch.task
    return batch


MakeHarness = Callable[..., Awaitable[Harness]]


@pytest.fixture
async def make_harness(
    aiohttp_server: AiohttpServer, aiohttp_client: AiohttpClient, registry: ToolRegistry
) -> AsyncIterator[MakeHarness]:
    made: list[BatchManager] = []

    async def make(
        *, ttl_s: float = 3600.0, journal: Journal | None = None, model: str = MODEL,
        settings: dict[str, Any] | None = None, max_events: int = 1000,
        answers: Script = script, **knobs: Any,
    ) -> Harness:  # fmt: skip
        fake = FakeBatches(answers, **knobs)
        upstream = await aiohttp_server(fake.app())
        overrides = {"gateway_batch_poll_s": 0.02, **(settings or {})}
        toolset = StaticToolset(registry, backends={"test": "local"})
        app = create_app(settings_for(upstream, **overrides), toolset=toolset)
        client = await aiohttp_client(app)
        app_manager = client.app[keys.BATCHES]
        metrics = Metrics(CollectorRegistry())
        options = BatchOptions(
            poll_s=0.02, ttl_s=ttl_s, max_events=max_events, upstream="anthropic", model=model,
            clock_skew_s=7.0,
        )  # fmt: skip
        audit = Audit()
        harness = Harness(client, fake, app_manager, metrics, audit)
        harness.manager = BatchManager(
            app_manager.factory, app_manager.api, options, metrics,
            journal if journal is not None else MemoryJournal(),
            audit=cast(AuditLog, audit),
            on_question_end=lambda *args: harness.questions_ended.append(args),
            on_batch_end=harness.batches_ended.append,
        )  # fmt: skip
        harness.made = made
        made.append(harness.manager)
        return harness

    yield make
    for manager in made:
        await manager.shutdown()
