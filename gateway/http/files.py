"""`GET /api/files/{file_id}`: a file code execution made, streamed from the Files API to
the key that started its run. Any other key, and an id no run here made, get the same
404 (a 403 would confirm that the id is real). Each answer is an audit line."""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import quote

from aiohttp import web

from gateway.errors import GatewayError
from gateway.http import keys
from gateway.http.auth import caller_of
from gateway.http.writer import SSEWriter
from gateway.store.files import FileRecord

log = logging.getLogger(__name__)


async def download(request: web.Request) -> web.StreamResponse:
    file_id = request.match_info["file_id"]
    caller = caller_of(request)
    record = await request.app[keys.FILES].get(file_id)
    api = request.app[keys.UPSTREAMS].files
    if record is None or record.owner != caller or api is None:
        _audit(request, file_id, record, "not_found", 0)
        raise GatewayError("NOT_FOUND", f"No file {file_id!r} (unknown, expired or not yours)")
    sent = 0
    outcome = "failed"
    try:
        async with api.content(file_id) as content:
            response = web.StreamResponse(headers=_headers(record, content.content_type))
            if content.length is not None:
                response.content_length = content.length
            await response.prepare(request)
            # A client that takes nothing within the write deadline is dropped, as a
            # stream's reader is: it holds no Files API connection open for ever.
            writer = SSEWriter(
                request, response, request.app[keys.SETTINGS].gateway_write_timeout_s
            )
            try:
                async for chunk in content.chunks():
                    await writer.write(chunk)
                    sent += len(chunk)
            except (ConnectionResetError, asyncio.CancelledError):
                outcome = "client_left"
                raise
            except Exception as exc:  # the upstream broke off: the client sees a cut body
                log.warning(
                    "file %s: the Files API broke off after %d bytes (%s)", file_id, sent, exc
                )
                if request.transport is not None:
                    request.transport.close()
                return response
            finally:
                writer.close()
            await response.write_eof()
            outcome = "success"
            return response
    except GatewayError as exc:
        outcome = "not_found" if exc.code == "NOT_FOUND" else exc.code
        raise
    finally:
        _audit(request, file_id, record, outcome, sent)


def _headers(record: FileRecord, upstream_type: str | None) -> dict[str, str]:
    name = record.filename or "download"
    # A plain fallback name for old clients, the exact one (RFC 6266/5987) for the rest.
    plain = "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in name)
    disposition = f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(name, safe='')}"
    kind = record.mime_type or upstream_type or "application/octet-stream"
    return {"Content-Type": kind, "Content-Disposition": disposition, "Cache-Control": "no-store"}


def _audit(
    request: web.Request, file_id: str, record: FileRecord | None, outcome: str, sent: int
) -> None:
    audit = request.app.get(keys.AUDIT)
    if audit is None:
        return
    fields = {"key": caller_of(request), "file_id": file_id, "outcome": outcome, "bytes": sent}
    if record is not None and record.owner == caller_of(request):
        fields["run_id"] = record.run_id  # another key's run stays unnamed
    audit.write("file_download", fields)
