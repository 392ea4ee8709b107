"""The configured stores: sessions, and runs shared with other processes (Redis when
`REDIS_URL` is set; none otherwise, and a process sees its own runs only); the audit sink,
the limit counters, the admin API's keys and the spend ledger. The rest of the gateway
reaches Redis (and SQLite) only through what this module hands out."""

from __future__ import annotations

from gateway.settings import Settings
from gateway.store.audit import AuditSink
from gateway.store.base import SessionStore, SharedRuns
from gateway.store.counters import Counters, MemoryCounters
from gateway.store.files import FileOwners, MemoryFileOwners
from gateway.store.keys import KeyStore
from gateway.store.redis.audit import RedisAudit
from gateway.store.redis.files import RedisFileOwners
from gateway.store.redis.keys import RedisKeys
from gateway.store.redis.limits import RedisCounters
from gateway.store.redis.runs import RedisStore
from gateway.store.redis.spend import RedisLedger
from gateway.store.sessions import MemorySessions
from gateway.store.spend import MemoryLedger, SpendLedger
from gateway.store.sqlite import SqliteDb, SqliteKeys, SqliteLedger


def configured_stores(settings: Settings) -> tuple[SessionStore, SharedRuns | None]:
    if not settings.redis_url:
        cache_bytes = settings.gateway_session_cache_bytes
        return MemorySessions(settings.gateway_session_ttl_s, max_bytes=cache_bytes), None
    shared = RedisStore(
        settings.redis_url,
        prefix=settings.redis_key_prefix,
        run_ttl_s=settings.gateway_run_ttl_s,
        max_events=settings.gateway_run_log_max_events,
    )
    sessions = shared.sessions(settings.gateway_session_ttl_s, settings.gateway_session_cache_bytes)
    return sessions, shared


def file_owners(settings: Settings, shared: SharedRuns | None) -> FileOwners:
    """Who owns each file code execution made: in Redis beside the runs when it is there
    (kept as long as sessions are), else in this process."""
    ttl_s = settings.gateway_session_ttl_s
    if isinstance(shared, RedisStore):
        return RedisFileOwners(shared.client, settings.redis_key_prefix, ttl_s)
    return MemoryFileOwners(ttl_s)


def limit_counters(settings: Settings, shared: bool) -> Counters:
    """Per-key limit counters: in Redis when it is there and any limit may apply (`shared`),
    else in this process."""
    if settings.redis_url and shared:
        return RedisCounters(settings.redis_url, settings.redis_key_prefix)
    return MemoryCounters()


def audit_sink(settings: Settings) -> AuditSink | None:
    """Where audit lines go besides the file: a Redis stream with REDIS_URL."""
    if not settings.redis_url:
        return None
    stream = f"{settings.redis_key_prefix}audit"
    return RedisAudit(settings.redis_url, stream, settings.gateway_audit_stream_maxlen)


def keys_and_spend(settings: Settings) -> tuple[KeyStore | None, SpendLedger]:
    """The admin API's keys (only when it is on) and the spend ledger: in Redis with
    REDIS_URL, else in the SQLite file GATEWAY_KEYS_DB when the admin API is on, else the
    spend of this process."""
    admin = bool(settings.gateway_admin_key)
    url, prefix = settings.redis_url, settings.redis_key_prefix
    if url:
        return (RedisKeys(url, prefix) if admin else None), RedisLedger(url, prefix)
    if admin:
        db = SqliteDb(settings.gateway_keys_db)
        return SqliteKeys(db), SqliteLedger(db)
    return None, MemoryLedger()
