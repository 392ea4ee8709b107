"""The Files API, through the SDK client the Messages provider already has: a file's
metadata (`GET /v1/files/{id}`) and its bytes (`GET /v1/files/{id}/content`, streamed).

In SDK 2.14 the Files API is no beta: the SDK's `files` resource sends no `anthropic-beta`
header, and neither does this.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Protocol

import anthropic

from gateway.errors import GatewayError
from gateway.providers.anthropic.transport import answer_failure

CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True)
class FileInfo:
    """What the Files API says of a file (`FileMetadata`)."""

    file_id: str
    filename: str | None
    mime_type: str | None
    size_bytes: int | None


class _Streamed(Protocol):
    """What the SDK's streamed binary response offers (its class is private to the SDK)."""

    @property
    def headers(self) -> Mapping[str, str]: ...

    def iter_bytes(self, chunk_size: int | None = None) -> AsyncIterator[bytes]: ...


class FileContent:
    """A download in progress: its headers known, its bytes still to be read."""

    def __init__(self, response: _Streamed) -> None:
        self._response = response
        self.content_type = response.headers.get("content-type")
        length = response.headers.get("content-length")
        self.length = int(length) if length and length.isdigit() else None

    def chunks(self) -> AsyncIterator[bytes]:
        return self._response.iter_bytes(CHUNK_BYTES)


class FilesAPI:
    """The two reads the gateway makes of the Files API; errors as `GatewayError`s
    (a file the API does not know is `NOT_FOUND`)."""

    def __init__(self, client: anthropic.AsyncAnthropic, timeout_s: float = 10.0) -> None:
        self._client = client
        self.timeout_s = timeout_s

    async def metadata(self, file_id: str) -> FileInfo:
        try:
            meta = await self._client.files.retrieve_metadata(file_id, timeout=self.timeout_s)
        except anthropic.APIStatusError as exc:
            raise _failure(exc) from None
        except anthropic.APIError as exc:
            raise GatewayError("NETWORK_ERROR", f"Files API: {exc}") from None
        return FileInfo(meta.id, meta.filename, meta.mime_type, meta.size_bytes)

    @contextlib.asynccontextmanager
    async def content(self, file_id: str) -> AsyncIterator[FileContent]:
        """The file's bytes as they arrive (the response is closed on leaving)."""
        download = self._client.files.with_streaming_response.download
        async with contextlib.AsyncExitStack() as stack:
            try:
                response = await stack.enter_async_context(download(file_id))
            except anthropic.APIStatusError as exc:
                raise _failure(exc) from None
            except anthropic.APIError as exc:
                raise GatewayError("NETWORK_ERROR", f"Files API: {exc}") from None
            yield FileContent(response)


def _failure(exc: anthropic.APIStatusError) -> GatewayError:
    if exc.status_code == 404:
        return GatewayError("NOT_FOUND", "The Files API does not know this file")
    return answer_failure(exc.status_code, exc.body, exc.response.headers)
