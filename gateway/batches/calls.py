"""What names a batch's model calls and records its rounds: a call's `stem`
(`q{index}-t{turn}`), a round's custom_ids (the stems, the gateway batch's key and a digest
of the round's requests: `lookup` says why), the journal's record of a round, and the
result of a call its ended batch has none for."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

from gateway.batches.api import Result

__all__ = ["RoundRecord", "RoundState", "custom_ids", "missing", "stem", "stem_of"]

RoundState = Literal["submitting", "submitted", "ended", "failed", "not_created"]


@dataclass
class RoundRecord:
    """One round as the journal keeps it."""

    number: int
    custom_ids: list[str]
    api_batch_id: str | None = None
    state: RoundState = "submitting"
    submitted_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    results: dict[str, int] = field(default_factory=dict)
    """Result types (succeeded, errored, expired, canceled) counted, once ended."""
    note: str | None = None
    """Why the round waits (its lookup or its cancel failing), while it does."""


def stem(index: int, turn: int) -> str:
    """What names question `index`'s model call `turn` within its batch."""
    return f"q{index}-t{turn}"


def stem_of(cid: str) -> str:
    return cid.rsplit("-", 1)[0]


def custom_ids(key: str, entries: dict[str, tuple[dict[str, Any], tuple[str, ...]]]) -> list[str]:
    """The API request ids of a round (^[a-zA-Z0-9_-]{1,64}$): each call's stem, the batch's
    key and the digest of every request of the round."""
    body = orjson.dumps(
        [[s, params, sorted(betas)] for s, (params, betas) in sorted(entries.items())]
    )
    digest = hashlib.sha256(body).hexdigest()[:12]
    return [f"{s}-{key}{digest}" for s in entries]


def missing(cid: str) -> Result:
    """A request the ended batch has no result for: as an errored one."""
    error = {"type": "api_error", "message": f"The Message Batch has no result for {cid}"}
    return {
        "custom_id": cid,
        "result": {"type": "errored", "error": {"type": "error", "error": error}},
    }
