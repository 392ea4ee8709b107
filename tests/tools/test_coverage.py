"""The README's table of what the offline snapshot holds is the snapshot's own account."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.sec.coverage import BEGIN, END, holdings, readme_with_table, table

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_table_is_generated_from_the_snapshot() -> None:
    readme = README.read_text("utf-8")
    generated = table()
    assert readme_with_table(readme, generated) == readme, (
        "README.md's snapshot table is stale: run `python -m tools.sec.coverage --write`"
    )
    assert generated in readme


def test_holdings_say_what_is_missing() -> None:
    by_cik = {h.cik: h for h in holdings()}
    microsoft, tesla, jpmorgan = by_cik[789019], by_cik[1318605], by_cik[19617]
    assert microsoft.filings.endswith("to 2026-03-03") and microsoft.figures == "–"
    assert tesla.figures.startswith("periods through 2022-")
    assert jpmorgan.filings == "–" and jpmorgan.documents == ["8-K filed 2026-06-25"]
    assert by_cik[1045810].documents == ["10-K filed 2025-02-26", "8-K filed 2026-03-06"]


def test_a_readme_without_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="markers"):
        readme_with_table("# no table here\n", "| a |")
    assert readme_with_table(f"x\n{BEGIN}\nold\n{END}\ny", "new") == f"x\n{BEGIN}\nnew\n{END}\ny"
