"""The shared run store: with `REDIS_URL` set, every gateway process sees every run.

Keys and channels, all under `redis_key_prefix` (default `rg:`):

    run:{id}          hash: owner (worker id), session_id, status (running | finished),
                      last (seq), readers (readers attached on processes other than the
                      owner); for a durable run also token, ckpt, orphan (see `durable`)
    run:{id}:events   stream: one entry per SSE frame, id `{seq}-0`, field `f` the frame
                      bytes, `end` on the terminal one; MAXLEN ~ gateway_run_log_max_events
    run:{id}:lease    the worker driving a durable run, expiring unless renewed
    runs:durable      set: the durable runs still running, where takeovers look
    batch:{id}...     a batch's journal, lease and the set of running batches (`batches`)
    session:{id}      a session's history, JSON, expiring gateway_session_ttl_s after its save
    ctl:{worker}      the channel each process listens on: `cancel {run_id}`, `idle {run_id}`

The owner's in-memory log stays the source of truth, and readers on the owner read it. One
flusher per process (`mirror`) copies every run's new frames to the streams in one
script call every FLUSH_INTERVAL_S, so no event waits for Redis; the terminal frame and
`status=finished` are written atomically, after which both keys expire in
gateway_run_ttl_s. Readers on other processes replay and follow the stream with XREAD
BLOCK. If Redis fails mid-run the run goes on in memory: the
flusher logs once, and catches up (from `last` in the record) when Redis answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncGenerator, Iterator
from typing import Any
from urllib.parse import urlsplit

import orjson
import redis.asyncio as redis
from redis.exceptions import NoScriptError

from gateway.errors import GatewayError
from gateway.store.base import ControlHandler
from gateway.store.eventlog import EventLog
from gateway.store.redis import mirror
from gateway.store.redis.batches import RedisBatches
from gateway.store.redis.leases import RedisLeases
from gateway.store.redis.mirror import FLUSH_MAX, RETRY_S, Flusher
from gateway.store.redis.scripts import APPEND, COUNT_READER
from gateway.store.redis.sessions import RedisSessions
from gateway.store.redis.wire import OP_TIMEOUT_S, REDIS_ERRORS, RUNNING_TTL_S, Batch

log = logging.getLogger(__name__)

LOST_AFTER_S = 10.0  # a reader elsewhere waits this long for Redis before its error event

Entry = tuple[bytes, dict[bytes, bytes]]  # a stream entry: id, fields
OWNER_FIELD = "key"  # in `run:{id}`: the name of the key that started the run
# Set the owner; give the record a TTL if it has none yet (the run's mirror may not have
# written it yet, and a record must never outlive its run forever).
_RECORD_OWNER = """
redis.call('hset', KEYS[1], ARGV[1], ARGV[2])
if redis.call('ttl', KEYS[1]) < 0 then redis.call('expire', KEYS[1], ARGV[3]) end
"""


class StoreUnavailable(RuntimeError):
    """REDIS_URL is set, but Redis does not answer at startup."""


class RedisStore:
    """One process's handle on the shared store: its client, worker id and control channel."""

    def __init__(self, url: str, *, prefix: str, run_ttl_s: float, max_events: int) -> None:
        self.url = url
        self.prefix = prefix
        self.run_ttl_s = max(1, round(run_ttl_s))
        self.max_events = max_events
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        # No socket read timeout: XREAD BLOCK waits a heartbeat; every call has its own bound.
        self.client = redis.Redis.from_url(
            url, socket_connect_timeout=OP_TIMEOUT_S, socket_timeout=None
        )
        self._count_reader = self.client.register_script(COUNT_READER)
        self._append = self.client.register_script(APPEND)
        self._pubsub = self.client.pubsub(ignore_subscribe_messages=True)
        self._listener: asyncio.Task[None] | None = None
        self._on_control: ControlHandler = lambda kind, run_id: None
        self._flusher: Flusher | None = None
        self.lease_ms = 3_000
        """How long a durable run's lease lasts after each write (`durable` sets it)."""
        self.last_error: str | None = None
        """The last Redis failure this process saw, for /health."""
        self.ok = True
        self.errors: tuple[type[BaseException], ...] = REDIS_ERRORS

    def run_key(self, run_id: str) -> str:
        return f"{self.prefix}run:{run_id}"

    def events_key(self, run_id: str) -> str:
        return f"{self.prefix}run:{run_id}:events"

    @property
    def durable_key(self) -> str:
        """The set of running durable runs, where workers look for runs to take over."""
        return f"{self.prefix}runs:durable"

    async def open(self, on_control: ControlHandler) -> None:
        """Check Redis answers and listen for control messages; fail fast if it does not."""
        try:
            async with asyncio.timeout(OP_TIMEOUT_S):
                await self.client.ping()
                await self.client.script_load(APPEND)  # the flusher calls it by its hash
                await self._pubsub.subscribe(f"{self.prefix}ctl:{self.worker_id}")
        except REDIS_ERRORS as exc:
            await self.close()
            raise StoreUnavailable(
                f"REDIS_URL is set, but Redis at {_redacted(self.url)} does not answer "
                f"({type(exc).__name__}: {exc}); start Redis or unset REDIS_URL"
            ) from exc
        self._on_control = on_control
        self._listener = asyncio.create_task(self._listen(on_control))
        self._flusher = Flusher(self)

    async def close(self) -> None:
        """Give the flusher a moment for the last frames if Redis answers, then stop."""
        flusher, self._flusher = self._flusher, None
        if flusher is not None:
            await flusher.drain(OP_TIMEOUT_S)
            flusher.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flusher.task
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
            self._listener = None
        await self._pubsub.aclose()  # type: ignore[no-untyped-call]
        await self.client.aclose()

    async def _listen(self, on_control: ControlHandler) -> None:
        while True:
            try:
                async for message in self._pubsub.listen():
                    kind, _, run_id = message["data"].decode().partition(" ")
                    on_control(kind, run_id)
            except REDIS_ERRORS as exc:  # the client reconnects and resubscribes on retry
                log.warning("run store: control channel lost (%s); retrying", exc)
                await asyncio.sleep(RETRY_S)

    def mirror(self, run_id: str, session_id: str, event_log: EventLog, token: int = 0) -> None:
        """Copy a run's log to Redis from now until its terminal frame is there."""
        self._open_flusher().add(run_id, session_id, event_log, token)

    def fence(self, run_id: str, token: int) -> None:
        """From now on a run's writes carry this fencing token (it became durable)."""
        self._open_flusher().fence(run_id, token)

    def checkpoint(self, run_id: str, seq: int, data: bytes) -> None:
        """Write a durable run's checkpoint with its frames up to `seq`."""
        self._open_flusher().checkpoint(run_id, seq, data)

    def _open_flusher(self) -> Flusher:
        if self._flusher is None:
            raise RuntimeError("the run store is not open")
        return self._flusher

    async def write(self, batches: list[Batch]) -> set[int]:
        """Append every batch in one script call; the positions of those refused (their
        token is stale: another worker owns the run)."""
        args: list[bytes | str | int] = [self.max_events, self.worker_id, self.lease_ms]
        args.append(self.prefix)
        for batch in batches:
            ttl = self.run_ttl_s if batch.end else RUNNING_TTL_S
            has = int(bool(batch.checkpoint))
            args.append(
                f"{batch.run_id} {batch.first} {ttl} {int(batch.end)} {batch.token} "
                f"{has} {batch.session_id}"
            )
            args.append(b"".join(batch.frames))
            if has:
                args.append(batch.checkpoint)
        keys = [self.durable_key]
        try:
            reply: Any = await self.client.evalsha(self._append.sha, 1, *keys, *args)
        except NoScriptError:  # Redis restarted and forgot it: load it and go again
            await self.client.script_load(APPEND)
            reply = await self.client.evalsha(self._append.sha, 1, *keys, *args)
        return {int(position) - 1 for position in reply}

    def refused(self, run_id: str) -> None:
        self._on_control("lost", run_id)

    def note_error(self, exc: BaseException) -> None:
        self.ok, self.last_error = False, f"{type(exc).__name__}: {exc}"

    def note_ok(self) -> None:
        self.ok = True

    async def check(self) -> dict[str, Any]:
        """For /health: whether Redis answers now, its last error, frames waiting for it."""
        try:
            async with asyncio.timeout(1.0):
                await self.client.ping()
            self.note_ok()
        except REDIS_ERRORS as exc:
            self.note_error(exc)
        pending = 0 if self._flusher is None else self._flusher.pending
        status = "ok" if self.ok else "down"
        return {"status": status, "last_error": self.last_error, "pending_runs": pending}

    async def position(self, run_id: str, after: int) -> tuple[str, int] | None:
        return await mirror.position(self, run_id, after)

    def backlog(
        self, run_id: str, after: int, last: int
    ) -> AsyncGenerator[tuple[bytes, int, bool], None]:
        return mirror.backlog(self, run_id, after, last)

    def leases(self) -> RedisLeases:
        return RedisLeases(self)

    def batches(self) -> RedisBatches:
        """Batches' journals (see `batches`), on this store's client."""
        return RedisBatches(self)

    async def owner(self, run_id: str) -> str | None:
        """The name of the key that started the run, from its record (None if none)."""
        with _answer_errors():
            async with asyncio.timeout(OP_TIMEOUT_S):
                value = await self.client.hget(self.run_key(run_id), OWNER_FIELD)
        if value is None:
            return None
        return value.decode() if isinstance(value, bytes) else str(value)

    async def record_owner(self, run_id: str, owner: str) -> None:
        """Write the run's owner (before its stream starts, so a re-attach on another
        process finds it); the run goes on if Redis fails, only other processes cannot
        open it then."""
        try:
            async with asyncio.timeout(OP_TIMEOUT_S):
                key = self.run_key(run_id)
                await self.client.eval(_RECORD_OWNER, 1, key, OWNER_FIELD, owner, RUNNING_TTL_S)
        except REDIS_ERRORS as exc:
            log.warning("run store: cannot record the owner of %s (%s)", run_id, exc)

    def sessions(self, ttl_s: float, max_bytes: int) -> RedisSessions:
        prefix = f"{self.prefix}session:"
        return RedisSessions(self.client, prefix, ttl_s, OP_TIMEOUT_S, max_bytes)

    async def readers(self, run_id: str) -> int:
        """Readers of an owned run attached on other processes (0 if Redis fails: then the
        in-memory rule applies)."""
        try:
            async with asyncio.timeout(OP_TIMEOUT_S):
                value = await self.client.hget(self.run_key(run_id), "readers")
        except REDIS_ERRORS as exc:
            log.warning("run store: cannot count readers of %s (%s)", run_id, exc)
            return 0
        return int(value or 0)

    async def attach(self, run_id: str) -> str | None:
        """Count a reader of a run owned elsewhere in; its status, None if unknown."""
        with _answer_errors():
            return await self._count(run_id, 1)

    async def detach(self, run_id: str) -> None:
        try:  # shielded: a reader cancelled on its way out must still be counted out
            await asyncio.shield(self._count(run_id, -1))
        except REDIS_ERRORS as exc:
            log.warning("run store: cannot count a reader of %s out (%s)", run_id, exc)

    async def _count(self, run_id: str, delta: int) -> str | None:
        async with asyncio.timeout(OP_TIMEOUT_S):
            status = await self._count_reader(
                keys=[self.run_key(run_id)], args=[delta, f"{self.prefix}ctl:", run_id]
            )
        return None if status is None else str(status.decode())

    async def cancel(self, run_id: str) -> bool | None:
        """Ask the owner to cancel: whether it was running, None if the run is unknown."""
        with _answer_errors():
            async with asyncio.timeout(OP_TIMEOUT_S):
                reply: Any = await self.client.hmget(self.run_key(run_id), ["status", "owner"])
                status, owner = reply
                if status is None:
                    return None
                if status != b"running" or owner is None:
                    return False
                channel = f"{self.prefix}ctl:{owner.decode()}"
                return int(await self.client.publish(channel, f"cancel {run_id}")) > 0

    async def follow(
        self, run_id: str, after: int, heartbeat_s: float, *, live: bool
    ) -> AsyncGenerator[bytes, None]:
        """The frames after seq `after` as they reach the stream, until the terminal one;
        b"" after `heartbeat_s` of silence (time for a ping). Redis failing for longer
        than `LOST_AFTER_S`, or a run that ended without its terminal frame, ends it with
        an `error` frame of its own (see `lost_frame`), never a bare end of stream."""
        key, last = self.events_key(run_id), f"{after}-0".encode()
        block = max(1, int(heartbeat_s * 1000)) if live else None
        failing_since: float | None = None
        while True:
            try:
                async with asyncio.timeout(heartbeat_s + OP_TIMEOUT_S):
                    entries = await self._read(key, last, block)
                    ended = not entries and (block is None or not await self._running(run_id))
                    complete = ended and await self._has_end(key)
            except REDIS_ERRORS as exc:
                now = asyncio.get_running_loop().time()
                failing_since = failing_since if failing_since is not None else now
                if now - failing_since >= LOST_AFTER_S:
                    log.warning("run store: lost the stream of %s (%s)", run_id, exc)
                    yield lost_frame(run_id, last, "The shared run store stopped answering")
                    return
                yield b""  # a ping meanwhile: the reader waits, then resumes without a gap
                await asyncio.sleep(min(0.5, heartbeat_s))
                continue
            failing_since = None
            if ended:  # nothing more will come: past its end already, or its mirror failed
                if not complete:
                    yield lost_frame(run_id, last, "The run ended without its last event")
                return
            if entries:
                last = entries[-1][0]
            yield b"".join(fields[b"f"] for _, fields in entries)
            if entries and b"end" in entries[-1][1]:
                return

    async def _read(self, key: str, last: bytes, block: int | None) -> list[Entry]:
        reply: Any = await self.client.xread({key: last}, count=FLUSH_MAX * 4, block=block)
        return list(reply[0][1]) if reply else []

    async def _has_end(self, key: str) -> bool:
        """Whether the run's stream holds its terminal frame (the last entry)."""
        tail: Any = await self.client.xrevrange(key, count=1)
        return bool(tail) and b"end" in tail[0][1]

    async def _running(self, run_id: str) -> bool:
        return bool(await self.client.hget(self.run_key(run_id), "status") == b"running")


def lost_frame(run_id: str, last: bytes, message: str) -> bytes:
    """An `error` for this reader only, not part of the run's log: it has no `id:` line,
    so a client that re-attaches with Last-Event-ID resumes after the last real event."""
    seq = int(last.split(b"-")[0]) + 1
    body = GatewayError("NETWORK_ERROR", f"{message}; re-attach with Last-Event-ID to resume")
    event = {"type": "error", "error": body.body(""), "run_id": run_id, "seq": seq}
    return b"data: %b\n\n" % orjson.dumps(event)


@contextlib.contextmanager
def _answer_errors() -> Iterator[None]:
    """A request that needs the store while Redis fails gets a clear 502."""
    try:
        yield
    except REDIS_ERRORS as exc:
        message = f"The shared run store does not answer ({type(exc).__name__})"
        raise GatewayError("NETWORK_ERROR", message) from exc


def _redacted(url: str) -> str:
    """The URL without its password, for a log line."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)
