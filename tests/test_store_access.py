"""The store's interfaces for the access layer, each kind held to the same contract: the
key store (memory, SQLite, Redis), the spend ledger (memory, SQLite, Redis) and the audit
sink (memory, Redis)."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis.asyncio as redis

from gateway.ops.audit import AuditLog
from gateway.store.audit import AuditSink, MemoryAudit
from gateway.store.keys import KeyStore, MemoryKeys, StoredKey
from gateway.store.redis.audit import RedisAudit
from gateway.store.redis.keys import RedisKeys
from gateway.store.redis.spend import RedisLedger
from gateway.store.spend import MemoryLedger, SpendLedger, periods
from gateway.store.sqlite import SqliteDb, SqliteKeys, SqliteLedger
from tests.access_support import REDIS_URL, redis_prefix

__all__ = ["redis_prefix"]  # a fixture

KINDS = ["memory", "sqlite", "redis"]


def key(key_id: str, name: str, **fields: Any) -> StoredKey:
    return StoredKey(key_id, name, f"digest-{key_id}", f"2026-12-05T00:00:0{key_id[-1]}Z", **fields)


@pytest.fixture(params=KINDS)
async def keys_store(
    request: pytest.FixtureRequest, tmp_path: Path, redis_prefix: str
) -> AsyncIterator[KeyStore]:
    store: KeyStore
    if request.param == "memory":
        store = MemoryKeys()
    elif request.param == "sqlite":
        store = SqliteKeys(SqliteDb(str(tmp_path / "deep" / "keys.db")))
    else:
        store = RedisKeys(REDIS_URL, redis_prefix)
    await store.open()
    yield store
    await store.close()


@pytest.fixture(params=KINDS)
async def ledger(
    request: pytest.FixtureRequest, tmp_path: Path, redis_prefix: str
) -> AsyncIterator[SpendLedger]:
    found: SpendLedger
    if request.param == "memory":
        found = MemoryLedger()
    elif request.param == "sqlite":
        found = SqliteLedger(SqliteDb(str(tmp_path / "keys.db")))
    else:
        found = RedisLedger(REDIS_URL, redis_prefix)
    yield found
    await found.close()


async def test_a_key_store_keeps_names_unique_and_counts_changes(keys_store: KeyStore) -> None:
    start = await keys_store.generation()
    first = key("key_1", "alice", models=("m-1",), limits={"daily_usd": 2.5})
    assert await keys_store.add(first)
    assert not await keys_store.add(key("key_2", "alice"))  # the name is taken
    assert await keys_store.add(key("key_3", "bob", metadata={"team": ["a", 1]}))
    assert await keys_store.generation() > start
    before = await keys_store.generation()
    revoked = dataclasses.replace(first, revoked_at="2026-12-05T01:00:00Z")
    await keys_store.put(revoked)
    assert await keys_store.generation() > before
    assert await keys_store.get("key_1") == revoked
    assert await keys_store.get("key_2") is None
    assert [k.name for k in await keys_store.all()] == ["alice", "bob"]
    assert (await keys_store.all())[1].metadata == {"team": ["a", 1]}


async def test_sqlite_keys_outlive_their_connection(tmp_path: Path) -> None:
    path = str(tmp_path / "keys.db")
    store = SqliteKeys(SqliteDb(path))
    assert await store.add(key("key_1", "alice"))
    await store.close()
    again = SqliteKeys(SqliteDb(path))
    assert [k.name for k in await again.all()] == ["alice"] and await again.generation() == 1
    await again.close()


async def test_a_ledger_adds_per_key_model_and_period(ledger: SpendLedger) -> None:
    day, month = periods(1_764_979_200.0)  # 2025-12-06 00:00 UTC
    assert (day, month) == ("2025-12-06", "2025-12")
    await ledger.add("alice", "m-1", (day, month), {"runs": 1, "input_tokens": 10, "usd": 0.25})
    await ledger.add("alice", "m-1", (day, month), {"runs": 1, "usd": 0.5})
    await ledger.add("alice", "m-2", periods(1_764_806_400.0), {"batch_questions": 1})
    await ledger.add("bob", "m-1", (day, month), {"runs": 1})
    assert await ledger.read("alice", day) == {"m-1": {"runs": 2, "input_tokens": 10, "usd": 0.75}}
    assert (await ledger.read("alice", month))["m-2"] == {"batch_questions": 1}
    assert (await ledger.read("alice", month))["m-1"] == {
        "runs": 2,
        "input_tokens": 10,
        "usd": 0.75,
    }
    assert (await ledger.read("alice", "2025-11")) == {}
    assert await ledger.read("carol", day) == {}


DAY_S = 86_400.0
NOW = 1_764_979_200.0  # 2025-12-06 00:00 UTC


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_ledger_drops_days_after_40_days_and_months_after_400(
    kind: str, tmp_path: Path
) -> None:
    ledger: SpendLedger = (
        MemoryLedger() if kind == "memory" else SqliteLedger(SqliteDb(str(tmp_path / "k.db")))
    )
    ancient, old, kept = (periods(NOW - days * DAY_S) for days in (450, 41, 39))
    assert (ancient, old, kept) == (
        ("2024-09-12", "2024-09"),
        ("2025-10-26", "2025-10"),
        ("2025-10-28", "2025-10"),
    )
    for spent_in in (ancient, old, kept):
        await ledger.add("alice", "m-1", spent_in, {"runs": 1, "usd": 0.5})
    assert await ledger.read("alice", old[0]) == {"m-1": {"runs": 1, "usd": 0.5}}
    await ledger.add("alice", "m-1", periods(NOW), {"runs": 1})  # the first charge today
    assert await ledger.read("alice", old[0]) == {}  # 41 days old: gone
    assert await ledger.read("alice", kept[0]) == {"m-1": {"runs": 1, "usd": 0.5}}
    assert await ledger.read("alice", "2025-10") == {"m-1": {"runs": 2, "usd": 1.0}}
    assert await ledger.read("alice", ancient[0]) == {}
    assert await ledger.read("alice", "2024-09") == {}  # its month: 450 days old
    assert await ledger.read("alice", "2025-12") == {"m-1": {"runs": 1}}
    await ledger.close()


async def test_sqlite_prunes_at_most_once_a_day(tmp_path: Path) -> None:
    path = str(tmp_path / "k.db")
    ledger = SqliteLedger(SqliteDb(path))
    await ledger.add("alice", "m-1", periods(NOW), {"runs": 1})  # pruned today

    def written_elsewhere(period: str) -> None:
        with sqlite3.connect(path) as db:
            db.execute("insert into spend values ('alice', ?, 'm-1', 'runs', 1)", (period,))

    written_elsewhere("2024-01-01")
    await ledger.add("alice", "m-1", periods(NOW + 3600), {"runs": 1})  # the same day
    assert await ledger.read("alice", "2024-01-01") == {"m-1": {"runs": 1}}
    await ledger.add("alice", "m-1", periods(NOW + DAY_S), {"runs": 1})  # the next day
    assert await ledger.read("alice", "2024-01-01") == {}
    await ledger.close()


async def test_redis_keeps_a_day_40_days_and_a_month_400(redis_prefix: str) -> None:
    ledger = RedisLedger(REDIS_URL, redis_prefix)
    await ledger.add("alice", "m-1", periods(NOW), {"runs": 1})
    day_ttl = await ledger.client.ttl(f"{redis_prefix}spend:alice:2025-12-06")
    month_ttl = await ledger.client.ttl(f"{redis_prefix}spend:alice:2025-12")
    assert 39 * DAY_S < day_ttl <= 40 * DAY_S and 399 * DAY_S < month_ttl <= 400 * DAY_S
    await ledger.close()


@pytest.mark.parametrize("kind", ["memory", "redis"])
async def test_an_audit_sink_takes_the_lines_in_order(
    kind: str, tmp_path: Path, redis_prefix: str
) -> None:
    sink: AuditSink
    if kind == "memory":
        sink = MemoryAudit(maxlen=10)
    else:
        sink = RedisAudit(REDIS_URL, f"{redis_prefix}audit")
    audit = AuditLog(str(tmp_path / "audit.jsonl"), hash_key=b"k" * 32, sink=sink)
    audit.start()
    for n in range(3):
        audit.write("run_start", {"n": n})
    await audit.close()
    if isinstance(sink, MemoryAudit):
        got = [orjson.loads(line)["n"] for line in sink.lines]
    else:
        reader = redis.Redis.from_url(REDIS_URL)
        entries: Any = await reader.xrange(sink.stream_key)
        await reader.aclose()
        got = [orjson.loads(fields[b"line"])["n"] for _, fields in entries]
    assert got == [0, 1, 2]


async def test_closing_waits_for_the_work_in_progress(tmp_path: Path) -> None:
    """A close while a worker thread is inside the connection waits for it (closing under
    it crashed the process), and work that comes after the close is refused, not lost
    in a half-closed connection."""
    db = SqliteDb(str(tmp_path / "keys.db"))
    inside = threading.Event()

    def slow(conn: sqlite3.Connection) -> Any:
        inside.set()
        time.sleep(0.2)
        return conn.execute("select value from generation").fetchone()

    work = asyncio.create_task(db.run(slow))
    assert await asyncio.to_thread(inside.wait, 5)
    await db.close()
    assert await work == (0,)
    queued = asyncio.create_task(asyncio.to_thread(db._locked, slow))
    with pytest.raises(RuntimeError, match="is closed"):
        await queued
