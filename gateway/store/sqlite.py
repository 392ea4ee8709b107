"""Keys and spend in one SQLite file (GATEWAY_KEYS_DB), for a gateway without Redis: what
the admin API made, and what each key spent, survive a restart or a kill (WAL journal,
each change one transaction).

Calls run in a worker thread (a slow disk never stalls the event loop), one at a time on
one connection. The file and its directory are created on first start.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from gateway.store.keys import StoredKey
from gateway.store.spend import ByModel, horizon

T = TypeVar("T")

SCHEMA = """
create table if not exists keys (
  key_id text primary key, name text not null unique, created_at text not null,
  record text not null);
create table if not exists generation (id integer primary key check (id = 0), value integer);
insert or ignore into generation values (0, 0);
create table if not exists spend (
  name text, period text, model text, field text, amount real not null,
  primary key (name, period, model, field));
"""


class SqliteDb:
    """One connection to the file, used from one worker thread at a time."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    async def open(self) -> None:
        if self._db is None:
            await asyncio.to_thread(self._connect)

    def _connect(self) -> None:
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, check_same_thread=False)
        db.execute("pragma journal_mode=wal")
        db.execute("pragma busy_timeout=5000")
        db.executescript(SCHEMA)
        self._db = db

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        await self.open()
        return await asyncio.to_thread(self._locked, work)

    def _locked(self, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            if self._db is None:  # closed while this work waited for the lock
                raise RuntimeError(f"{self.path} is closed")
            return work(self._db)

    async def close(self) -> None:
        if self._db is not None:
            await asyncio.to_thread(self._close)

    def _close(self) -> None:
        # Under the lock: closing a connection while another thread's work is inside it
        # crashes the process (a segmentation fault in sqlite3, seen at a test's teardown).
        with self._lock:
            if self._db is not None:
                db, self._db = self._db, None
                db.close()


def _bump(db: sqlite3.Connection) -> None:
    db.execute("update generation set value = value + 1 where id = 0")


class SqliteKeys:
    """`KeyStore` in the SQLite file."""

    def __init__(self, db: SqliteDb) -> None:
        self.db = db

    async def open(self) -> None:
        await self.db.open()

    async def add(self, key: StoredKey) -> bool:
        def add(db: sqlite3.Connection) -> bool:
            try:
                with db:
                    db.execute(
                        "insert into keys values (?, ?, ?, ?)",
                        (key.key_id, key.name, key.created_at, key.dumps()),
                    )
                    _bump(db)
            except sqlite3.IntegrityError:  # the name (or the id) is taken
                return False
            return True

        return await self.db.run(add)

    async def put(self, key: StoredKey) -> None:
        def put(db: sqlite3.Connection) -> None:
            with db:
                db.execute("update keys set record = ? where key_id = ?", (key.dumps(), key.key_id))
                _bump(db)

        await self.db.run(put)

    async def get(self, key_id: str) -> StoredKey | None:
        def get(db: sqlite3.Connection) -> StoredKey | None:
            row = db.execute("select record from keys where key_id = ?", (key_id,)).fetchone()
            return StoredKey.loads(row[0]) if row else None

        return await self.db.run(get)

    async def all(self) -> list[StoredKey]:
        def every(db: sqlite3.Connection) -> list[StoredKey]:
            rows = db.execute("select record from keys order by created_at, rowid").fetchall()
            return [StoredKey.loads(row[0]) for row in rows]

        return await self.db.run(every)

    async def generation(self) -> int:
        def generation(db: sqlite3.Connection) -> int:
            return int(db.execute("select value from generation").fetchone()[0])

        return await self.db.run(generation)

    async def close(self) -> None:
        await self.db.close()


PRUNE = (
    "delete from spend where (length(period) = 10 and period < ?) "
    "or (length(period) = 7 and period < ?)"
)


class SqliteLedger:
    """`SpendLedger` in the SQLite file. The first charge of each UTC day also deletes
    the days and months past `horizon` (one scan a day)."""

    def __init__(self, db: SqliteDb) -> None:
        self.db = db
        self._pruned_on = ""

    def add_now(
        self, name: str, model: str, in_periods: tuple[str, ...], amounts: dict[str, float]
    ) -> bool:
        return False  # a write: `add`, in the background

    async def add(
        self, name: str, model: str, in_periods: tuple[str, ...], amounts: dict[str, float]
    ) -> None:
        rows = [(name, p, model, f, a) for p in in_periods for f, a in amounts.items()]
        day = in_periods[0]
        prune = day != self._pruned_on
        self._pruned_on = day

        def add(db: sqlite3.Connection) -> None:
            with db:
                db.executemany(
                    "insert into spend values (?, ?, ?, ?, ?) on conflict do update "
                    "set amount = amount + excluded.amount",
                    rows,
                )
                if prune:
                    db.execute(PRUNE, horizon(day))

        await self.db.run(add)

    async def read(self, name: str, period: str) -> ByModel:
        def read(db: sqlite3.Connection) -> list[tuple[str, str, float]]:
            query = "select model, field, amount from spend where name = ? and period = ?"
            return db.execute(query, (name, period)).fetchall()

        spent: ByModel = {}
        for model, field, amount in await self.db.run(read):
            spent.setdefault(model, {})[field] = amount
        return spent

    async def close(self) -> None:
        await self.db.close()
