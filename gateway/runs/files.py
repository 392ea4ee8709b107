"""The files a run's code execution made: after each turn, every new file id in its result
blocks is looked up in the Files API (all at once, each within the API's timeout),
recorded as the run's key's, and announced with a `file` event. A lookup that fails is a
`warning`; the file is still the run's key's, and still downloadable."""

from __future__ import annotations

import asyncio
from typing import Any

from gateway import events
from gateway.errors import GatewayError
from gateway.events import Event
from gateway.providers.anthropic.code_execution import file_ids
from gateway.providers.anthropic.files import FileInfo, FilesAPI
from gateway.providers.base import Emit
from gateway.store.files import FileOwners, FileRecord


class RunFiles:
    """One run's files: who owns them, and the events that announce them."""

    def __init__(self, api: FilesAPI, owners: FileOwners, owner: str, run_id: str) -> None:
        self._api = api
        self._owners = owners
        self._owner = owner
        self._run_id = run_id
        self._seen: set[str] = set()  # a turn sent back verbatim names its files again

    async def announce(self, content: list[dict[str, Any]], turn: int, emit: Emit) -> None:
        new = [f for f in dict.fromkeys(file_ids(content)) if f not in self._seen]
        if not new:
            return
        self._seen.update(new)
        found = await asyncio.gather(*(self._one(file_id, turn) for file_id in new))
        emit([event for pair in found for event in pair])

    async def _one(self, file_id: str, turn: int) -> list[Event]:
        said: list[Event] = []
        try:
            info = await self._api.metadata(file_id)
        except GatewayError as exc:
            info = FileInfo(file_id, None, None, None)
            message = f"The Files API did not describe file {file_id} ({exc.code}: {exc})"
            said.append(events.warning("file_metadata_failed", message, turn, file_id=file_id))
        record = FileRecord(
            self._owner, self._run_id, info.filename, info.mime_type, info.size_bytes
        )
        await self._owners.record(file_id, record)
        file = events.file(file_id, info.filename, info.mime_type, info.size_bytes, turn)
        return [file, *said]
