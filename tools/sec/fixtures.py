"""The SEC fixtures: recorded EDGAR responses and documents, kept in the repository under
`tests/fixtures/sec/` at their URL paths, each file gzipped (`<path>.gz`) so a clone stays
small (2.4 MB instead of 24 MB). The fake SEC server of the tests serves them and
`tools.sec.build_snapshot` builds the bundled snapshot from them; both read the plain
tree that `unpacked` restores.
"""

from __future__ import annotations

import gzip
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["FIXTURES_DIR", "unpack", "unpacked"]

FIXTURES_DIR = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "sec"


def unpack(src: Path, dest: Path) -> Path:
    """Copy the fixtures folder `src` into `dest`, un-gzipping every `*.gz`; return `dest`."""
    for file in sorted(src.rglob("*")):
        if not file.is_file():
            continue
        rel = file.relative_to(src)
        target = dest / (rel.with_suffix("") if file.suffix == ".gz" else rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        if file.suffix == ".gz":
            target.write_bytes(gzip.decompress(file.read_bytes()))
        else:
            shutil.copyfile(file, target)
    return dest


@contextmanager
def unpacked(src: Path) -> Iterator[Path]:
    """The plain fixtures tree of `src`: `src` itself when nothing in it is gzipped, else a
    temporary unpacked copy that is removed afterwards."""
    if not any(src.rglob("*.gz")):
        yield src
        return
    with tempfile.TemporaryDirectory(prefix="sec-fixtures-") as tmp:
        yield unpack(src, Path(tmp))
