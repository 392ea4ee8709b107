"""The configured stores: sessions, and runs shared with other processes (Redis when
`REDIS_URL` is set; none otherwise, and a process sees its own runs only)."""

from __future__ import annotations

from gateway.settings import Settings
from gateway.store.base import SessionStore, SharedRuns
from gateway.store.files import FileOwners, MemoryFileOwners
from gateway.store.redis.files import RedisFileOwners
from gateway.store.redis.runs import RedisStore
from gateway.store.sessions import MemorySessions


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
