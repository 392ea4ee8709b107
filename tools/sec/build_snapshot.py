"""Rebuild the bundled EDGAR snapshot from the SEC fixtures (`make snapshot`).

    python -m tools.sec.build_snapshot [FIXTURES_DIR]

FIXTURES_DIR defaults to the repository's `tests/fixtures/sec` (gzipped files, unpacked to
a temporary folder first); a plain folder of the same layout works too. Files keep their
URL paths, gzipped with a fixed timestamp so a rebuild is byte-identical; columns the tools
never read are dropped from the submissions files. `manifest.json` records the companies,
every filing document with its form and dates (for the offline full-text index), and which
documents live inside a complete submission `.txt`.
"""

from __future__ import annotations

import gzip
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import orjson

from tools.sec.fixtures import FIXTURES_DIR, unpacked
from tools.sec.htmltext import html_to_text
from tools.sec.offline import SNAPSHOT_DIR
from tools.sec.submission import header_fields, split_submission

REPO_ROOT = Path(__file__).resolve().parents[2]
SUBMISSION_COLUMNS = (
    "accessionNumber",
    "filingDate",
    "reportDate",
    "form",
    "items",
    "primaryDocument",
    "primaryDocDescription",
)
_ARCHIVES = "www.sec.gov/Archives/edgar/data"


def _write(out: Path, rel: str, data: bytes) -> None:
    target = out / (rel + ".gz")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))


def _prune_columns(columns: dict[str, Any]) -> dict[str, Any]:
    return {k: columns[k] for k in SUBMISSION_COLUMNS if k in columns}


def _submissions(data: dict[str, Any]) -> dict[str, Any]:
    if "filings" not in data:  # an older-filings page: the bare columns
        return _prune_columns(data)
    recent = _prune_columns(data["filings"]["recent"])
    return {**data, "filings": {**data["filings"], "recent": recent}}


def _company(companies: dict[int, dict[str, Any]], cik: int, name: str) -> dict[str, Any]:
    return companies.setdefault(cik, {"name": name, "submissions": False, "facts": False})


def _json_files(src: Path, out: Path) -> dict[int, dict[str, Any]]:
    """Copy ticker maps, submissions and company facts; return what each CIK has."""
    companies: dict[int, dict[str, Any]] = {}
    for file in sorted((src / "www.sec.gov" / "files").glob("*.json")):
        _write(out, f"www.sec.gov/files/{file.name}", orjson.dumps(orjson.loads(file.read_bytes())))
    for file in sorted((src / "data.sec.gov" / "submissions").glob("*.json")):
        data = orjson.loads(file.read_bytes())
        _write(out, f"data.sec.gov/submissions/{file.name}", orjson.dumps(_submissions(data)))
        if "cik" in data:  # not an older-filings page
            _company(companies, int(data["cik"]), data["name"])["submissions"] = True
    for file in sorted((src / "data.sec.gov" / "api/xbrl/companyfacts").glob("*.json")):
        data = orjson.loads(file.read_bytes())
        _write(out, f"data.sec.gov/api/xbrl/companyfacts/{file.name}", orjson.dumps(data))
        _company(companies, int(data["cik"]), data["entityName"])["facts"] = True
    return companies


def _submission_filings(src: Path, cik: int) -> dict[str, dict[str, str]]:
    """Every filing of a bundled submissions file and its bundled pages, by accession."""
    by_accession: dict[str, dict[str, str]] = {}
    for file in sorted((src / "data.sec.gov" / "submissions").glob(f"CIK{cik:010d}*.json")):
        data = orjson.loads(file.read_bytes())
        columns = data["filings"]["recent"] if "filings" in data else data
        for i, accession in enumerate(columns["accessionNumber"]):
            by_accession[accession] = {k: columns[k][i] for k in SUBMISSION_COLUMNS}
    return by_accession


def _index_page_meta(page: Path) -> dict[str, str]:
    """Form, dates and filer from a filing's `-index.html` page."""
    text = html_to_text(page.read_text("utf-8", errors="replace"))
    meta = {}
    patterns = {
        "form": r"^Form (\S+)",
        "filed": r"^Filing Date\n(\d{4}-\d{2}-\d{2})",
        "period": r"^Period of Report\n(\d{4}-\d{2}-\d{2})",
        "company": r"^(.+?) \(Filer\) CIK",
    }
    for key, pattern in patterns.items():
        match = re.search(pattern, text, re.MULTILINE)
        if match:
            meta[key] = match.group(1)
    return meta


def _date(yyyymmdd: str) -> str:
    return f"{yyyymmdd[:4]}-{yyyymmdd[4:6]}-{yyyymmdd[6:8]}" if len(yyyymmdd) == 8 else ""


def _filing_meta(src: Path, cik: int, folder: Path, known: dict[str, str] | None) -> dict[str, Any]:
    accession = f"{folder.name[:10]}-{folder.name[10:12]}-{folder.name[12:]}"
    meta: dict[str, Any] = {"accession": accession}
    if known:
        meta.update(form=known["form"], filed=known["filingDate"], period=known["reportDate"])
    txt = folder / f"{accession}.txt"
    if txt.is_file():
        fields = dict(header_fields(txt.read_text("utf-8", errors="replace")))
        meta.setdefault("form", fields.get("CONFORMED SUBMISSION TYPE", ""))
        meta.setdefault("filed", _date(fields.get("FILED AS OF DATE", "")))
        meta.setdefault("period", _date(fields.get("CONFORMED PERIOD OF REPORT", "")))
        meta.setdefault("company", fields.get("COMPANY CONFORMED NAME", ""))
    page = folder.parent / f"{accession}-index.html"
    if page.is_file():
        for key, value in _index_page_meta(page).items():
            meta.setdefault(key, value)
    return meta


def _folder_documents(
    folder: Path, meta: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The readable documents of one filing folder, and those served from inside its .txt."""
    base = "/" + folder.relative_to(folder.parents[4]).as_posix()
    stored = {f.name for f in folder.iterdir()}
    docs: list[dict[str, Any]] = []
    embedded: dict[str, str] = {}
    for file in sorted(folder.glob("*.htm")):
        docs.append({**meta, "path": f"{base}/{file.name}", "type": meta["form"]})
    for file in sorted(folder.glob("*.txt")):
        parts = [
            d for d in split_submission(file.read_text("utf-8", errors="replace")) if d.is_text
        ]
        if any(not d.filename for d in parts):  # pre-2001: documents have no file names
            docs.append({**meta, "path": f"{base}/{file.name}", "type": meta["form"]})
            continue
        for doc in (d for d in parts if d.filename not in stored):
            docs.append({**meta, "path": f"{base}/{doc.filename}", "type": doc.type})
            embedded[f"{base}/{doc.filename}"] = f"{base}/{file.name}"
    return docs, embedded


def build(src: Path, out: Path = SNAPSHOT_DIR) -> dict[str, Any]:
    """Write the snapshot for fixtures folder `src` into `out`; return the manifest."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    companies = _json_files(src, out)
    documents: list[dict[str, Any]] = []
    embedded: dict[str, str] = {}
    for file in sorted((src / _ARCHIVES).rglob("*")):
        if file.is_file():
            _write(out, file.relative_to(src).as_posix(), file.read_bytes())
    for folder in sorted(p for p in (src / _ARCHIVES).glob("*/*") if p.is_dir()):
        cik = int(folder.parent.name)
        accession = f"{folder.name[:10]}-{folder.name[10:12]}-{folder.name[12:]}"
        meta = _filing_meta(src, cik, folder, _submission_filings(src, cik).get(accession))
        name = companies.get(cik, {}).get("name") or meta.pop("company", "")
        meta.pop("company", None)
        docs, inner = _folder_documents(folder, {"cik": cik, "company": name, **meta})
        documents += docs
        embedded.update(inner)
    manifest = {
        "companies": [{"cik": cik, **c} for cik, c in sorted(companies.items())],
        "documents": documents,
        "embedded": embedded,
    }
    (out / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    return manifest


def main(argv: list[str]) -> int:
    src = Path(argv[0]) if argv else FIXTURES_DIR
    if not (src / "www.sec.gov").is_dir():
        print(f"not an EDGAR fixtures folder: {src}", file=sys.stderr)
        return 2
    with unpacked(src.resolve()) as plain:
        manifest = build(plain)
    size = sum(f.stat().st_size for f in SNAPSHOT_DIR.rglob("*") if f.is_file())
    print(
        f"snapshot: {len(manifest['companies'])} companies, {len(manifest['documents'])} "
        f"documents, {size / 1e6:.2f} MB in {SNAPSHOT_DIR.relative_to(REPO_ROOT)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
