"""The figure check: every figure of an answer traced to the tool result it came from
(`check`), against an index of the run's tool results built once (`index.build`).

Its modules may run compiled (setup.py; `native` says which, and loads them from source
when a build is stale)."""

from gateway.figures import native

STALE_BUILD = native.guard()

from gateway.figures.check import STATUSES, Checked, Report, check  # noqa: E402
from gateway.figures.index import SourceIndex, build  # noqa: E402

COMPILED = native.running_compiled()

__all__ = [
    "COMPILED",
    "STALE_BUILD",
    "STATUSES",
    "Checked",
    "Report",
    "SourceIndex",
    "build",
    "check",
]
