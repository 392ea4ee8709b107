"""Who may download a file code execution made: each file id with the key that started
its run (and what the Files API said of it), kept as long as sessions are.

In memory by default; with `REDIS_URL`, in Redis (`store.redis.files`), so any worker can
serve a download of a file another worker's run made.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class FileRecord:
    """A file a run made: whose it is, and its metadata (None where unknown)."""

    owner: str
    """The name of the key that started the run."""
    run_id: str
    filename: str | None = None
    mime_type: str | None = None
    size_bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileRecord:
        return cls(
            str(data["owner"]),
            str(data["run_id"]),
            data.get("filename"),
            data.get("mime_type"),
            data.get("size_bytes"),
        )


class FileOwners(Protocol):
    async def record(self, file_id: str, record: FileRecord) -> None: ...
    async def get(self, file_id: str) -> FileRecord | None: ...


class MemoryFileOwners:
    """File records in this process, each dropped `ttl_s` after it was written."""

    def __init__(self, ttl_s: float) -> None:
        self._ttl_s = ttl_s
        self._records: dict[str, tuple[float, FileRecord]] = {}

    async def record(self, file_id: str, record: FileRecord) -> None:
        now = time.monotonic()
        # Records are written in time order: the expired ones are the oldest.
        for old, (expires, _) in list(self._records.items()):
            if expires > now:
                break
            del self._records[old]
        self._records.pop(file_id, None)
        self._records[file_id] = (now + self._ttl_s, record)

    async def get(self, file_id: str) -> FileRecord | None:
        found = self._records.get(file_id)
        if found is None or found[0] <= time.monotonic():
            return None
        return found[1]
