"""The figure check: every figure of an answer traced to the tool result it came from
(`check`), against an index of the run's tool results built once (`index.build`)."""

from gateway.figures.check import STATUSES, Checked, Report, check
from gateway.figures.index import SourceIndex, build

__all__ = ["STATUSES", "Checked", "Report", "SourceIndex", "build", "check"]
