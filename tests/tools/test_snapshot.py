"""The bundled EDGAR snapshot: rebuilt byte for byte from the fixtures, small, self-describing."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from tools.search.corpus import load_corpus
from tools.sec.build_snapshot import build, main
from tools.sec.offline import SNAPSHOT_DIR, OfflineSec
from tools.sec.source import SecNotFound


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_committed_snapshot_is_the_build_of_the_fixtures(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    build(fixtures_dir, tmp_path / "snapshot")
    rebuilt, committed = _files(tmp_path / "snapshot"), _files(SNAPSHOT_DIR)
    assert sorted(rebuilt) == sorted(committed)
    changed = [name for name in rebuilt if rebuilt[name] != committed[name]]
    assert not changed, f"run `python -m tools.sec.build_snapshot`: {changed} differ"


def test_snapshot_stays_small() -> None:
    assert sum(len(data) for data in _files(SNAPSHOT_DIR).values()) < 3_000_000


def test_build_refuses_a_folder_without_fixtures(tmp_path: Path) -> None:
    assert main([str(tmp_path)]) == 2


def test_manifest_describes_companies_and_documents() -> None:
    manifest = OfflineSec().manifest
    by_cik = {c["cik"]: c for c in manifest["companies"]}
    assert by_cik[320193] == {
        "cik": 320193,
        "name": "Apple Inc.",
        "submissions": True,
        "facts": True,
    }
    assert by_cik[789019]["facts"] is False and by_cik[1652044]["submissions"] is False
    documents = {d["path"].rsplit("/", 1)[-1]: d for d in manifest["documents"]}
    assert documents["meta-20251219.htm"]["form"] == "8-K"  # from the index page
    assert documents["meta-20251219.htm"]["filed"] == "2025-12-19"
    assert documents["adbeex991q123.htm"]["type"] == "EX-99.1"  # inside the .txt
    assert documents["0000912057-00-023442.txt"]["period"] == "2000-04-01"
    corpus = load_corpus()
    assert len(corpus.documents) == len(manifest["documents"])
    assert {p.doc for p in corpus.passages} == set(range(len(corpus.documents)))


async def test_offline_source_refuses_paths_outside_the_snapshot() -> None:
    source = OfflineSec()
    with pytest.raises(SecNotFound):
        await source.get_text("www", "/../../../base.py")
    with pytest.raises(SecNotFound, match="it has XBRL company facts only for"):
        await source.get_json("data", "/api/xbrl/companyfacts/CIK0000789019.json")
    with pytest.raises(SecNotFound, match=r"Its filing documents: https://www\.sec\.gov/Archives"):
        await source.get_text("www", "/Archives/edgar/data/1/2/3.htm")


def test_offline_source_needs_a_snapshot(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="build_snapshot"):
        OfflineSec(tmp_path)


def test_bundled_fixtures_match_their_manifest(fixtures_dir: Path) -> None:
    """Every fixture the repository carries is the recorded file its manifest names."""
    manifest = (fixtures_dir / "MANIFEST.md").read_text("utf-8")
    listed = dict(
        (path, sha) for sha, path in re.findall(r"^([0-9a-f]{12})  (\S+)$", manifest, re.M)
    )
    present = {
        p.relative_to(fixtures_dir).as_posix()
        for p in fixtures_dir.rglob("*")
        if p.is_file() and p.name != "MANIFEST.md"
    }
    assert present == set(listed)
    for path, sha in listed.items():
        assert hashlib.sha1((fixtures_dir / path).read_bytes()).hexdigest()[:12] == sha, path
