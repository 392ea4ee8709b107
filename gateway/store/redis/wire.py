"""What the Redis run store's parts share: what a failing Redis raises, how long an
operation may take, how long a running run's keys live, and one run's part of a flush."""

from __future__ import annotations

from dataclasses import dataclass

from redis.exceptions import DataError, RedisError

OP_TIMEOUT_S = 5.0  # past this one Redis operation counts as failed
RUNNING_TTL_S = 300  # a running run's keys: a dead owner's runs vanish after this
REDIS_ERRORS = (RedisError, OSError, TimeoutError)  # what a lost or slow Redis raises
# Of those, what no retry mends: a value redis-py cannot encode (a bug, refused before sending).
REDIS_FAULTS: tuple[type[BaseException], ...] = (DataError,)


@dataclass(frozen=True)
class Batch:
    """One run's part of a flush: frames `first`, `first + 1`..., the last terminal if `end`."""

    run_id: str
    session_id: str
    first: int
    frames: list[bytes]
    end: bool
    token: int = 0
    checkpoint: bytes = b""
    """A durable run's checkpoint, taken at a seq this batch's frames reach."""
