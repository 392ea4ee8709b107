"""Keys made through the admin API, as stored: never the secret, only its keyed hash.

    StoredKey    one key: id, name, the hash, models, limits, expiry, metadata, revocation
    KeyStore     the interface `access/tenants.py` uses
    MemoryKeys   one process (lost on restart; tests)
    SqliteKeys   a SQLite file (`store/sqlite.py`), without Redis
    RedisKeys    every replica sharing REDIS_URL (`store/redis/keys.py`)

A name is taken for good: a revoked key stays stored (revoked), so a new key cannot take
over the runs, files and spend its old name owns. Every change raises the store's
`generation`, which each worker polls to see changes (and revocations) within a second.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson


@dataclass(frozen=True)
class StoredKey:
    key_id: str
    name: str
    digest: str
    """HMAC-SHA256 of the secret under the server's keys secret, hex."""
    created_at: str
    models: tuple[str, ...] | None = None
    """The models the key may run; None: any."""
    limits: dict[str, float] = field(default_factory=dict)
    """runs_per_minute, concurrent_runs, daily_tokens, daily_usd, monthly_usd (set ones)."""
    expires_at: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    revoked_at: str | None = None

    def dumps(self) -> bytes:
        return orjson.dumps(dataclasses.asdict(self))

    @classmethod
    def loads(cls, raw: bytes | str) -> StoredKey:
        data = orjson.loads(raw)
        models = data.get("models")
        data["models"] = tuple(models) if models is not None else None
        return cls(**data)


class KeyStore(Protocol):
    async def open(self) -> None: ...

    async def add(self, key: StoredKey) -> bool:
        """Store a new key; False if its name is taken (nothing stored then)."""

    async def put(self, key: StoredKey) -> None:
        """Replace a stored key (same id and name): an update or a revocation."""

    async def get(self, key_id: str) -> StoredKey | None: ...

    async def all(self) -> list[StoredKey]:
        """Every key, revoked ones too, oldest first."""

    async def generation(self) -> int:
        """A number that grows with every change."""

    async def close(self) -> None: ...


class MemoryKeys:
    def __init__(self) -> None:
        self._keys: dict[str, StoredKey] = {}
        self._generation = 0

    async def open(self) -> None:
        pass

    async def add(self, key: StoredKey) -> bool:
        if any(k.name == key.name for k in self._keys.values()):
            return False
        self._keys[key.key_id] = key
        self._generation += 1
        return True

    async def put(self, key: StoredKey) -> None:
        self._keys[key.key_id] = key
        self._generation += 1

    async def get(self, key_id: str) -> StoredKey | None:
        return self._keys.get(key_id)

    async def all(self) -> list[StoredKey]:
        return sorted(self._keys.values(), key=lambda k: k.created_at)

    async def generation(self) -> int:
        return self._generation

    async def close(self) -> None:
        pass
