"""Where a number of the run's tool results came from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.figures.periods import Span


@dataclass(slots=True, unsafe_hash=True)
class Source:
    """Where a number came from. Never changed once made, but not `frozen`: a frozen
    dataclass's `__init__` costs ~6 times as much, and a run's index makes thousands."""

    tool_use_id: str
    tool: str
    value: float
    concept: str | None = None
    period: Span | None = None
    form: str | None = None
    accession: str | None = None
    company: str | None = None
    """The CIK of the company it belongs to, when the result says."""
    unit: str | None = None
    percent: bool = False

    def public(self) -> dict[str, Any]:
        """As PROTOCOL's `sources` entries."""
        out: dict[str, Any] = {"tool_use_id": self.tool_use_id, "tool": self.tool}
        if self.accession:
            out["accession"] = self.accession
        if self.concept:
            out["concept"] = self.concept
        if self.period is not None:
            out["period"] = self.period.text()
        if self.form:
            out["form"] = self.form
        return out
