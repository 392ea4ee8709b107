"""A fake SEC EDGAR: the shared fixtures served at their real URL paths, one app per host.

It answers like SEC does: the recorded content types, gzip when asked, 403 AccessDenied
XML for a missing www path, 404 NoSuchKey XML on data.sec.gov, the "Undeclared Automated
Tool" page for a User-Agent without a contact address. Frames (not recorded) are derived
from the bundled company facts, as EDGAR derives them. Tests can queue any recorded
failure for the next requests (a 503 too, and a `Retry-After` on 429 and 503), bodies no
client should read to the end, and read what arrived when.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson
from aiohttp import web

from tests.tools.http_faults import BodyFault, HangUps, body_fault

Host = Literal["www", "data", "efts"]
HOST_DIRS: dict[Host, str] = {"www": "www.sec.gov", "data": "data.sec.gov", "efts": "efts.sec.gov"}
Fault = Literal[
    "rate_limited", "rate_limited_429", "unavailable", "undeclared", "access_denied", "no_such_key"
]
FAULTS: dict[Fault, tuple[int, str | None, str]] = {
    "rate_limited": (403, "www.sec.gov_403_request-rate-threshold-exceeded.html", "text/html"),
    "rate_limited_429": (429, "www.sec.gov_403_request-rate-threshold-exceeded.html", "text/html"),
    "unavailable": (503, None, "text/plain"),  # not recorded: a bare status line's worth
    "undeclared": (403, "www.sec.gov_403_undeclared-automated-tool.html", "text/html"),
    "access_denied": (403, "www.sec.gov_403_AccessDenied.xml", "application/xml"),
    "no_such_key": (404, "data.sec.gov_404_NoSuchKey.xml", "application/xml"),
}
_CONTENT_TYPES = {
    ".json": "application/json",
    ".htm": "text/html",
    ".html": "text/html",
    ".txt": "text/plain",
}
# SEC wants "Company Name contact@example.com"; without an address it refuses the tool.
_DECLARED_AGENT = re.compile(r"\S+@\S+\.\S+")


@dataclass(frozen=True)
class Received:
    host: Host
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    at: float  # loop time when the request arrived


@dataclass
class FakeSec:
    root: Path
    requests: list[Received] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    retry_after: str | None = None  # sent with the 429 and 503 faults
    body_faults: list[BodyFault] = field(default_factory=list)
    hang_ups: HangUps = field(default_factory=HangUps)
    stall_s: float = 0.0

    def app(self, host: Host) -> web.Application:
        app = web.Application()

        async def handle(request: web.Request) -> web.StreamResponse:
            return await self._handle(host, request)

        app.router.add_get("/{tail:.*}", handle)
        return app

    def paths(self, host: Host | None = None) -> list[str]:
        return [r.path for r in self.requests if host is None or r.host == host]

    async def _handle(self, host: Host, request: web.Request) -> web.StreamResponse:
        loop = asyncio.get_running_loop()
        self.requests.append(
            Received(host, request.path, dict(request.query), dict(request.headers), loop.time())
        )
        if self.stall_s:
            await asyncio.sleep(self.stall_s)
        if self.faults:
            return self._fault(self.faults.pop(0))
        if self.body_faults:
            return await body_fault(
                request, self.body_faults.pop(0), self.hang_ups, "application/json"
            )
        if not _DECLARED_AGENT.search(request.headers.get("User-Agent", "")):
            return self._fault("undeclared")
        if host == "efts":
            return self._respond(self._efts(request.query), "application/json", request)
        if host == "data" and request.path.startswith("/api/xbrl/frames/"):
            frame = self._frame(request.path)
            if frame is None:
                return self._fault("no_such_key")
            return self._respond(json.dumps(frame).encode(), "application/json", request)
        file = self.root / HOST_DIRS[host] / request.path.lstrip("/")
        if ".." in request.path or not file.is_file():
            return self._fault("access_denied" if host == "www" else "no_such_key")
        content_type = _CONTENT_TYPES.get(file.suffix, "application/octet-stream")
        return self._respond(file.read_bytes(), content_type, request)

    def _respond(self, body: bytes, content_type: str, request: web.Request) -> web.Response:
        response = web.Response(body=body, content_type=content_type)
        if "gzip" in request.headers.get("Accept-Encoding", ""):
            response.enable_compression(web.ContentCoding.gzip)
        return response

    def _fault(self, fault: Fault) -> web.Response:
        status, name, content_type = FAULTS[fault]
        body = (
            b"Service Unavailable" if name is None else (self.root / "errors" / name).read_bytes()
        )
        response = web.Response(status=status, body=body, content_type=content_type)
        if status in (429, 503) and self.retry_after is not None:
            response.headers["Retry-After"] = self.retry_after
        return response

    def _efts(self, query: Any) -> bytes:
        """The recorded answer whose Elasticsearch query asked for the same words."""
        words = sorted(w.lower() for w in re.findall(r"\w+", query.get("q", "")))
        folder = self.root / "efts.sec.gov" / "LATEST" / "search-index"
        for file in sorted(folder.glob("*.json")):
            data = json.loads(file.read_bytes())
            must = data["query"]["query"]["bool"]["must"]
            if sorted(m["match_phrase"]["doc_text"].lower() for m in must) == words:
                return file.read_bytes()
        return (folder / "0_hits.json").read_bytes()

    def _frame(self, path: str) -> dict[str, Any] | None:
        taxonomy, concept, unit, period = path.removesuffix(".json").split("/")[-4:]
        rows, label = [], None
        for file in sorted((self.root / "data.sec.gov/api/xbrl/companyfacts").glob("*.json")):
            facts = orjson.loads(file.read_bytes())
            data = facts["facts"].get(taxonomy, {}).get(concept)
            if not data:
                continue
            label = data.get("label")
            for fact in data["units"].get(unit.replace("-per-", "/"), []):
                if fact.get("frame") == period:
                    row = {
                        "accn": fact["accn"],
                        "cik": facts["cik"],
                        "entityName": facts["entityName"],
                    }
                    row.update({k: fact[k] for k in ("start", "end", "val") if k in fact})
                    rows.append(row)
        if not rows:
            return None
        return {
            "taxonomy": taxonomy,
            "tag": concept,
            "ccp": period,
            "uom": unit,
            "label": label,
            "pts": len(rows),
            "data": rows,
        }
