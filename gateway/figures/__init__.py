"""The figure check: every figure of an answer traced to the tool result it came from
(`check`), against an index of the run's tool results built once (`index.build`).

Its modules may run compiled (setup.py; `gateway.native` says which, and loads them from
source when a build is stale)."""

from gateway import native
from gateway.figures.check import STATUSES, Checked, Report, check
from gateway.figures.index import SourceIndex, build

COMPILED = native.running_compiled("figures.index")

__all__ = [
    "COMPILED",
    "STATUSES",
    "Checked",
    "Report",
    "SourceIndex",
    "build",
    "check",
]
