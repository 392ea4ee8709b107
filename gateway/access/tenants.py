"""Who a presented key is: a key of GATEWAY_API_KEYS / GATEWAY_API_KEYS_FILE (read at
start, read-only), or one the admin API made (in the key store, changed at runtime).

A stored key is found by the HMAC-SHA256 of the presented secret under the server's keys
secret (GATEWAY_KEYS_SECRET, else derived from GATEWAY_ADMIN_KEY): the store never holds
a secret, and its hashes are worthless without that secret. Each worker keeps the store's
keys in memory and polls the store's generation every GATEWAY_KEYS_REFRESH_S (0.25 s):
a change made on any worker is seen everywhere within that, and a key found revoked (or
gone) is handed to `on_revoked`, which ends its runs and batches in progress. A secret
not found is looked for again in the store (after a refresh begun since it came, at most
one every `MISS_RELOAD_S`), so a key made on another worker works at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from gateway.access.keyring import KeyRing
from gateway.store.keys import KeyStore, StoredKey

log = logging.getLogger(__name__)

Source = Literal["admin", "env", "file", "open"]
MISS_RELOAD_S = 0.05
RECHECK_S = 60.0
"""After a revocation, each poll hands the key to `on_revoked` again for this long: a run
or batch of it that another worker takes over (its own worker died) is ended too."""
SECRET_LABEL = b"research-gateway keys secret"


@dataclass(frozen=True)
class Tenant:
    """A key as the rest of the gateway sees it: its name (which owns runs, files, spend)."""

    name: str
    source: Source
    key_id: str | None = None
    models: tuple[str, ...] | None = None
    """The models it may run; None: any."""
    limits: dict[str, float] = field(default_factory=dict)
    """Its own limits (runs_per_minute, concurrent_runs, daily_tokens, daily_usd,
    monthly_usd); a missing one is the configured one."""

    @classmethod
    def of(cls, key: StoredKey) -> Tenant:
        return cls(key.name, "admin", key.key_id, key.models, dict(key.limits))


def keys_secret(secret: str | None, admin_key: str | None) -> bytes:
    """The HMAC key of stored secrets: GATEWAY_KEYS_SECRET, else one derived from the admin
    key (so a copy of the store alone never lets anyone test guesses)."""
    if secret:
        return secret.encode()
    return hmac.digest((admin_key or "").encode(), SECRET_LABEL, "sha256")


def usable(key: StoredKey, now: float) -> bool:
    if key.revoked_at is not None:
        return False
    return key.expires_at is None or datetime.fromisoformat(key.expires_at).timestamp() > now


class Tenants:
    """Finds a presented key's tenant; follows the key store's changes."""

    def __init__(
        self,
        ring: KeyRing,
        store: KeyStore | None,
        secret: bytes,
        *,
        refresh_s: float = 0.25,
        on_revoked: Callable[[str], None] | None = None,
    ) -> None:
        self.ring = ring
        self.store = store
        self.refresh_s = refresh_s
        self.on_revoked = on_revoked
        self._mac = hmac.new(secret, digestmod=hashlib.sha256)
        self._by_digest: dict[str, StoredKey] = {}
        self._generation = -1
        self._checked_at = -1.0
        self._reload = asyncio.Lock()
        self._poller: asyncio.Task[None] | None = None
        self._failing = False
        self._revoked_at: dict[str, float] = {}  # name: when it was revoked (epoch s)

    @property
    def open(self) -> bool:
        """No key is needed: none configured and no admin API."""
        return self.ring.open and self.store is None

    def digest(self, secret: str) -> str:
        mac = self._mac.copy()
        mac.update(secret.encode())
        return mac.hexdigest()

    async def start(self) -> None:
        if self.store is None:
            return
        await self.store.open()
        await self.refresh()
        self._poller = asyncio.create_task(self._poll())

    async def close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
        if self.store is not None:
            await self.store.close()

    async def identify(self, secret: str) -> Tenant | None:
        """The tenant of a presented key, or None (unknown, revoked, expired)."""
        name = self.ring.identify(secret)
        if name is not None:
            return Tenant(name, "file" if name in self.ring.from_file else "env")
        if self.store is None:
            return None
        digest = self.digest(secret)
        key = self._by_digest.get(digest)
        if key is None:  # perhaps made on another worker a moment ago: look again
            try:
                await self._fresh_since(time.monotonic())
            except Exception as exc:  # the store is away: the keys as last read
                log.warning("keys: cannot read the key store (%s)", exc)
            key = self._by_digest.get(digest)
        return Tenant.of(key) if key is not None and usable(key, time.time()) else None

    async def refresh(self) -> None:
        """Reload the store's keys if they changed; hand over the ones revoked since."""
        async with self._reload:
            await self._refresh()

    async def _fresh_since(self, asked: float) -> None:
        """Make sure a refresh began after `asked`: at most one every MISS_RELOAD_S, so a
        flood of unknown keys costs the store little (and each of them waits for it)."""
        wait = self._checked_at + MISS_RELOAD_S - asked
        if wait > 0:
            await asyncio.sleep(wait)
        async with self._reload:
            if self._checked_at < asked:
                await self._refresh()

    async def _refresh(self) -> None:
        assert self.store is not None
        self._checked_at = time.monotonic()
        generation = await self.store.generation()
        if generation != self._generation:
            keys = await self.store.all()
            self._generation = generation
            self._swap({k.digest: k for k in keys if k.revoked_at is None})
            self._note_revoked(keys)

    def _swap(self, by_digest: dict[str, StoredKey]) -> None:
        gone = {k.name for k in self._by_digest.values()} - {k.name for k in by_digest.values()}
        self._by_digest = by_digest
        for name in sorted(gone):
            log.info("keys: key %s is revoked: its runs and batches in progress end", name)
            if self.on_revoked is not None:
                self.on_revoked(name)

    def _note_revoked(self, keys: list[StoredKey]) -> None:
        horizon = time.time() - RECHECK_S
        for key in keys:
            if key.revoked_at is not None:
                at = datetime.fromisoformat(key.revoked_at).timestamp()
                if at >= horizon:
                    self._revoked_at[key.name] = at

    def _recheck(self) -> None:
        """Hand the keys revoked in the last RECHECK_S to `on_revoked` again."""
        horizon = time.time() - RECHECK_S
        for name, at in list(self._revoked_at.items()):
            if at < horizon:
                del self._revoked_at[name]
            elif self.on_revoked is not None:
                self.on_revoked(name)

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.refresh_s)
            try:
                await self.refresh()
            except Exception as exc:  # the store is away: keep the keys known, say so once
                if not self._failing:
                    log.warning("keys: cannot read the key store (%s); keys as last read", exc)
                self._failing = True
            else:
                self._failing = False
            self._recheck()
