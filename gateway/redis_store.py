"""The shared run store: with `REDIS_URL` set, every gateway process sees every run.

Keys and channels, all under `redis_key_prefix` (default `rg:`):

    run:{id}          hash: owner (worker id), session_id, status (running | finished),
                      readers (readers attached on processes other than the owner)
    run:{id}:events   stream: one entry per SSE frame, id `{seq}-0`, field `f` the frame
                      bytes, `end` on the terminal one; MAXLEN ~ gateway_run_log_max_events
    session:{id}      a session's history, JSON, expiring gateway_session_ttl_s after its save
    ctl:{worker}      the channel each process listens on: `cancel {run_id}`, `idle {run_id}`

The owner's in-memory log stays the source of truth, and readers on the owner read it. A
mirror per run copies new frames to the stream in batches (one script call every few ms), so
no event waits for Redis; the terminal frame and `status=finished` are written atomically,
after which both keys expire in gateway_run_ttl_s. Readers on other processes replay and
follow the stream with XREAD BLOCK. If Redis fails mid-run the run goes on in memory: the
mirror logs once, and catches up from the stream's last id when Redis answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncGenerator, Callable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import redis.asyncio as redis
from redis.exceptions import RedisError

from gateway.errors import GatewayError
from gateway.eventlog import EventLog
from gateway.sessions import RedisSessions

if TYPE_CHECKING:
    from gateway.redis_mirror import LogMirror

log = logging.getLogger(__name__)

FLUSH_INTERVAL_S = 0.005  # how long a new frame may wait for others to share its round trip
FLUSH_MAX = 256  # frames per write; this many pending are written without waiting
OP_TIMEOUT_S = 5.0  # past this one Redis operation counts as failed
RETRY_S = 0.5  # between flush attempts while Redis fails
RUNNING_TTL_S = 300  # a running run's keys: a dead owner's runs vanish after this
KEEPALIVE_S = 60.0  # a quiet run refreshes that TTL this often
REDIS_ERRORS = (RedisError, OSError, TimeoutError)  # what a lost or slow Redis raises

# Append a batch of frames from seq ARGV[1] on (the last one terminal if ARGV[4] is 1) and
# set the record, its status and both TTLs: one call, atomic, whatever the batch size.
_APPEND = """
local seq = tonumber(ARGV[1])
for i = 7, #ARGV do
  if ARGV[4] == '1' and i == #ARGV then
    redis.call('xadd', KEYS[1], 'MAXLEN', '~', ARGV[2], seq .. '-0', 'f', ARGV[i], 'end', '1')
  else
    redis.call('xadd', KEYS[1], 'MAXLEN', '~', ARGV[2], seq .. '-0', 'f', ARGV[i])
  end
  seq = seq + 1
end
local status = ARGV[4] == '1' and 'finished' or 'running'
redis.call('hset', KEYS[2], 'owner', ARGV[5], 'session_id', ARGV[6], 'status', status)
redis.call('expire', KEYS[1], ARGV[3])
redis.call('expire', KEYS[2], ARGV[3])
"""

# Count a reader on a non-owner process in (+1) or out (-1), only while the run exists; when
# the last one leaves a running run, tell the owner so its grace timer starts now.
_COUNT_READER = """
if redis.call('exists', KEYS[1]) == 0 then return false end
local n = redis.call('hincrby', KEYS[1], 'readers', ARGV[1])
local info = redis.call('hmget', KEYS[1], 'status', 'owner')
if n <= 0 and info[1] == 'running' and info[2] then
  redis.call('publish', ARGV[2] .. info[2], 'idle ' .. ARGV[3])
end
return info[1]
"""

Entry = tuple[bytes, dict[bytes, bytes]]  # a stream entry: id, fields
ControlHandler = Callable[[str, str], None]
"""Called with (`cancel` | `idle`, run_id) for each message on this process's channel."""


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
        self._count_reader = self.client.register_script(_COUNT_READER)
        self._append = self.client.register_script(_APPEND)
        self._pubsub = self.client.pubsub(ignore_subscribe_messages=True)
        self._listener: asyncio.Task[None] | None = None
        self._mirrors: set[LogMirror] = set()  # strong references: running tasks

    def run_key(self, run_id: str) -> str:
        return f"{self.prefix}run:{run_id}"

    def events_key(self, run_id: str) -> str:
        return f"{self.prefix}run:{run_id}:events"

    async def open(self, on_control: ControlHandler) -> None:
        """Check Redis answers and listen for control messages; fail fast if it does not."""
        try:
            async with asyncio.timeout(OP_TIMEOUT_S):
                await self.client.ping()
                await self._pubsub.subscribe(f"{self.prefix}ctl:{self.worker_id}")
        except REDIS_ERRORS as exc:
            await self.close()
            raise StoreUnavailable(
                f"REDIS_URL is set, but Redis at {_redacted(self.url)} does not answer "
                f"({type(exc).__name__}: {exc}); start Redis or unset REDIS_URL"
            ) from exc
        self._listener = asyncio.create_task(self._listen(on_control))

    async def close(self) -> None:
        """Give the mirrors that can still write a moment for their last frames, then stop."""
        writing = [mirror.task for mirror in self._mirrors if mirror.healthy]
        if writing:
            await asyncio.wait(writing, timeout=OP_TIMEOUT_S)
        for mirror in self._mirrors:
            mirror.task.cancel()
        await asyncio.gather(*(m.task for m in self._mirrors), return_exceptions=True)
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

    def mirror(self, run_id: str, session_id: str, event_log: EventLog) -> None:
        """Copy a run's log to Redis from now until its terminal frame is there."""
        from gateway.redis_mirror import LogMirror  # it needs this module's constants

        mirror = LogMirror(self, run_id, session_id, event_log)
        self._mirrors.add(mirror)
        mirror.task.add_done_callback(lambda _: self._mirrors.discard(mirror))

    async def append(
        self, run_id: str, session_id: str, first: int, frames: list[bytes], *, end: bool
    ) -> None:
        """Write frames `first`, `first + 1`... of a run (the last one terminal if `end`)."""
        ttl = self.run_ttl_s if end else RUNNING_TTL_S
        args: list[bytes | str | int] = [first, self.max_events, ttl, int(end)]
        args += [self.worker_id, session_id, *frames]
        await self._append(keys=[self.events_key(run_id), self.run_key(run_id)], args=args)

    def sessions(self, ttl_s: float) -> RedisSessions:
        return RedisSessions(self.client, f"{self.prefix}session:", ttl_s, OP_TIMEOUT_S)

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
        b"" after `heartbeat_s` of silence (time for a ping). A Redis failure ends it."""
        key, last = self.events_key(run_id), f"{after}-0".encode()
        block = max(1, int(heartbeat_s * 1000)) if live else None
        try:
            while True:
                async with asyncio.timeout(heartbeat_s + OP_TIMEOUT_S):
                    entries = await self._read(key, last, block)
                    if not entries and (block is None or not await self._running(run_id)):
                        return  # it ended without a terminal frame: its mirror failed
                if entries:
                    last = entries[-1][0]
                yield b"".join(fields[b"f"] for _, fields in entries)
                if entries and b"end" in entries[-1][1]:
                    return
        except REDIS_ERRORS as exc:
            log.warning("run store: lost the stream of %s (%s)", run_id, exc)

    async def _read(self, key: str, last: bytes, block: int | None) -> list[Entry]:
        reply: Any = await self.client.xread({key: last}, count=FLUSH_MAX * 4, block=block)
        return list(reply[0][1]) if reply else []

    async def _running(self, run_id: str) -> bool:
        return bool(await self.client.hget(self.run_key(run_id), "status") == b"running")


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
