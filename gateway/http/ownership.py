"""A run belongs to the key that started it: another key gets 404 on its re-attach and
cancel, as if the run did not exist (a 403 would confirm that the id is real).

Runs on this process carry their owner (`Run.owner`). For runs other processes own, the
owner's name is a field `key` in the run's record in the shared store (`run:{id}`, the
hash `redis_store.py` keeps), written when the run starts.
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from gateway.errors import GatewayError
from gateway.http import keys
from gateway.http.auth import caller_of
from gateway.runs.run import Run
from gateway.store.redis.runs import RedisStore
from gateway.store.redis.wire import OP_TIMEOUT_S, REDIS_ERRORS, RUNNING_TTL_S

log = logging.getLogger(__name__)

OWNER_FIELD = "key"

# Set the owner; give the record a TTL if it has none yet (the run's mirror may not have
# written it yet, and a record must never outlive its run forever).
_RECORD = """
redis.call('hset', KEYS[1], ARGV[1], ARGV[2])
if redis.call('ttl', KEYS[1]) < 0 then redis.call('expire', KEYS[1], ARGV[3]) end
"""


async def record_owner(request: web.Request, run: Run) -> None:
    """Write the run's owner to the shared store, if there is one (before its stream
    starts, so a re-attach on another process finds it)."""
    shared = request.app[keys.RUNS].shared
    if shared is None:
        return
    try:
        async with asyncio.timeout(OP_TIMEOUT_S):
            await shared.client.eval(
                _RECORD, 1, shared.run_key(run.id), OWNER_FIELD, run.owner, RUNNING_TTL_S
            )
    except REDIS_ERRORS as exc:  # the run goes on; only other processes cannot open it
        log.warning("ownership: cannot record the owner of %s (%s)", run.id, exc)


async def check_owner(request: web.Request, run_id: str) -> None:
    """404 unless the caller's key started the run (on this process or another one)."""
    caller = caller_of(request)
    runs = request.app[keys.RUNS]
    run = runs.get(run_id)
    if run is not None:
        owner: str | None = run.owner
    elif runs.shared is not None:
        owner = await shared_owner(runs.shared, run_id)
    else:
        return  # unknown here and no other process: the handler answers its own 404
    if owner != caller and not (owner is None and request.app[keys.KEYRING].open):
        raise GatewayError("NOT_FOUND", f"No run {run_id!r} (unknown or expired)")


async def shared_owner(shared: RedisStore, run_id: str) -> str | None:
    """The owner's name in the run's shared record (None if none); a process that takes a
    run over sets `Run.owner` from it."""
    try:
        async with asyncio.timeout(OP_TIMEOUT_S):
            value = await shared.client.hget(shared.run_key(run_id), OWNER_FIELD)
    except REDIS_ERRORS as exc:
        message = f"The shared run store does not answer ({type(exc).__name__})"
        raise GatewayError("NETWORK_ERROR", message) from exc
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)
