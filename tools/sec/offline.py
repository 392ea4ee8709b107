"""The offline EDGAR source: the snapshot bundled in `tools/sec/snapshot/`.

Files sit at their real URL paths under a folder per host, gzipped
(`data.sec.gov/submissions/CIK0000320193.json.gz`). Two kinds of answer are derived rather
than stored, as EDGAR itself derives them: XBRL frames (from the bundled company facts)
and the documents inside a complete submission `.txt` (served at their own file names).
`manifest.json` lists what is there; `python -m tools.sec.build_snapshot` rebuilds it all.
"""

from __future__ import annotations

import asyncio
import gzip
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from tools.sec.frames import frame_from_facts, period_bounds
from tools.sec.source import PUBLIC_BASE, SecHost, SecNotFound, public_url
from tools.sec.submission import split_submission

__all__ = ["SNAPSHOT_DIR", "OfflineSec"]

SNAPSHOT_DIR = Path(__file__).with_name("snapshot")
HOST_DIRS: dict[SecHost, str] = {
    "www": "www.sec.gov",
    "data": "data.sec.gov",
    "efts": "efts.sec.gov",
}
_FRAMES = "/api/xbrl/frames/"


class OfflineSec:
    """Answers like EDGAR from the bundled snapshot; no network."""

    label = "offline snapshot"
    www_base = PUBLIC_BASE["www"]

    def __init__(self, root: Path = SNAPSHOT_DIR) -> None:
        self.root = root
        if not (root / "manifest.json").is_file():
            raise FileNotFoundError(f"no EDGAR snapshot at {root}; run tools.sec.build_snapshot")

    @cached_property
    def manifest(self) -> dict[str, Any]:
        data: dict[str, Any] = orjson.loads((self.root / "manifest.json").read_bytes())
        return data

    async def get_json(self, host: SecHost, path: str, params: dict[str, str] | None = None) -> Any:
        if host == "data" and path.startswith(_FRAMES):
            return await asyncio.to_thread(self._frame, path)
        return orjson.loads(await asyncio.to_thread(self.read, host, path))

    async def get_text(self, host: SecHost, path: str) -> str:
        return (await asyncio.to_thread(self.read, host, path)).decode("utf-8", errors="replace")

    def _file(self, host: SecHost, path: str) -> Path:
        file = (self.root / HOST_DIRS[host] / (path.lstrip("/") + ".gz")).resolve()
        if not file.is_relative_to(self.root.resolve()):
            raise SecNotFound(f"Not a valid EDGAR path: {path!r}")
        return file

    def read(self, host: SecHost, path: str) -> bytes:
        """The raw body EDGAR would send for this path (blocking; the async API wraps it)."""
        file = self._file(host, path)
        if file.is_file():
            return gzip.decompress(file.read_bytes())
        container = self.manifest["embedded"].get(path) if host == "www" else None
        body = self._embedded(container, path.rsplit("/", 1)[-1]) if container else None
        if body is None:
            raise SecNotFound(self._missing_message(host, path))
        return body

    def _embedded(self, container: str, filename: str) -> bytes | None:
        raw = gzip.decompress(self._file("www", container).read_bytes()).decode("utf-8", "replace")
        doc = next((d for d in split_submission(raw) if d.filename == filename), None)
        return doc.body.encode() if doc else None

    def _missing_message(self, host: SecHost, path: str) -> str:
        url = public_url(host, path)
        companies = self.manifest["companies"]
        if path.startswith("/submissions/"):
            have = [c for c in companies if c["submissions"]]
            what = "filing lists (submissions)"
        elif path.startswith("/api/xbrl/companyfacts/"):
            have = [c for c in companies if c["facts"]]
            what = "XBRL company facts"
        else:
            docs = ", ".join(public_url("www", d["path"]) for d in self.manifest["documents"])
            return f"{url} is not in the offline EDGAR snapshot. Its filing documents: {docs}."
        names = "; ".join(f"{c['name']} (CIK {c['cik']})" for c in have)
        return f"{url} is not in the offline EDGAR snapshot; it has {what} only for: {names}."

    def _frame(self, path: str) -> dict[str, Any]:
        # /api/xbrl/frames/{taxonomy}/{concept}/{unit}/{period}.json
        parts = path[len(_FRAMES) :].removesuffix(".json").split("/")
        if len(parts) != 4:
            raise SecNotFound(f"Not a frames path: {path}")
        taxonomy, concept, unit, period = parts
        try:
            period_bounds(period)
        except ValueError:
            raise SecNotFound(f"Not a frames period: {path}") from None
        frame: dict[str, Any] = {
            "taxonomy": taxonomy,
            "tag": concept,
            "ccp": period,
            "uom": unit,
            "data": [],
        }
        for company in (c for c in self.manifest["companies"] if c["facts"]):
            facts = orjson.loads(self.read("data", _facts_path(company["cik"])))
            concept_facts = facts.get("facts", {}).get(taxonomy, {}).get(concept)
            if concept_facts:
                frame.setdefault("label", concept_facts.get("label"))
                frame.setdefault("description", concept_facts.get("description"))
                frame["data"].extend(frame_from_facts(facts, concept_facts, unit, period))
        if not frame["data"]:
            raise SecNotFound(
                f"Not found in the offline EDGAR snapshot: {public_url('data', path)}"
            )
        frame["pts"] = len(frame["data"])
        return frame


def _facts_path(cik: int) -> str:
    return f"/api/xbrl/companyfacts/CIK{cik:010d}.json"
