"""Where a number of the run's tool results came from."""

from __future__ import annotations

from typing import Any

from gateway.figures.periods import Span

_FIELDS = (
    "tool_use_id",
    "tool",
    "value",
    "concept",
    "period",
    "form",
    "accession",
    "company",
    "unit",
    "percent",
)


class Source:
    """Where a number came from. Never changed once made. A plain class with its own
    `__init__` (a run's index makes thousands): compiled (setup.py), it is built by a
    direct call; a dataclass's generated `__init__` would run as Python even then."""

    __slots__ = _FIELDS

    def __init__(
        self,
        tool_use_id: str,
        tool: str,
        value: float,
        concept: str | None = None,
        period: Span | None = None,
        form: str | None = None,
        accession: str | None = None,
        company: str | None = None,
        unit: str | None = None,
        percent: bool = False,
    ) -> None:
        self.tool_use_id = tool_use_id
        self.tool = tool
        self.value = value
        self.concept = concept
        self.period = period
        self.form = form
        self.accession = accession
        self.company = company  # the CIK of the company it belongs to, when the result says
        self.unit = unit
        self.percent = percent

    def _key(self) -> tuple[object, ...]:
        return (
            self.tool_use_id,
            self.tool,
            self.value,
            self.concept,
            self.period,
            self.form,
            self.accession,
            self.company,
            self.unit,
            self.percent,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Source) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{name}={value!r}" for name, value in zip(_FIELDS, self._key(), strict=True)
        )
        return f"Source({fields})"

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
