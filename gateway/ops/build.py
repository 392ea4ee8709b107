"""What `/health` says of the build and the process: the version, the commit (BUILD_SHA,
else the checkout's git HEAD), its time, the installed SDK's version. Read once, when the
app is made: git is asked at most once per process."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from gateway import __version__

SOURCE_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Build:
    version: str
    commit: str | None
    timestamp: str | None
    sdk_version: str | None
    """The installed `anthropic` SDK (the Node server reported its Agent SDK's)."""

    def report(self) -> dict[str, str | None]:
        return {"commit": self.commit, "version": self.version, "timestamp": self.timestamp}


def read_build(sha: str | None = None, timestamp: str | None = None) -> Build:
    commit, committed = _git_head() if sha is None else (sha, None)
    return Build(__version__, commit, timestamp or committed, _sdk_version())


def _git_head() -> tuple[str | None, str | None]:
    if not (SOURCE_ROOT / ".git").exists():
        return None, None  # an installed package: BUILD_SHA says which commit it was
    try:
        out = subprocess.run(
            ["git", "-C", str(SOURCE_ROOT), "log", "-1", "--format=%H %cI"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None, None
    return (out[0], out[1]) if len(out) == 2 else (None, None)


def _sdk_version() -> str | None:
    try:
        return metadata.version("anthropic")
    except metadata.PackageNotFoundError:
        return None
