"""Tool results in the shapes the SEC tools give, for the figure check's unit tests."""

from __future__ import annotations

from typing import Any

import orjson


def facts_result(
    cik: int,
    name: str,
    concept: str,
    rows: list[tuple[str | None, str, float]],
    unit: str = "USD",
    accession: str = "0000320193-25-000079",
) -> str:
    """A `get_sec_company_facts` result: (start, end, value) rows, annual."""
    annual = []
    for start, end, value in rows:
        row: dict[str, Any] = {
            "end": end,
            "value": value,
            "form": "10-K",
            "accession_number": accession,
            "filed": "2025-10-31",
        }
        if start is not None:
            row["start"] = start
        annual.append(row)
    body = {
        "source": "offline snapshot",
        "company": {"name": name, "cik": cik},
        "concept": concept,
        "label": concept,
        "units": {unit: {"annual": annual}},
    }
    return orjson.dumps(body).decode()


def conversation(*results: tuple[str, str, Any]) -> list[dict[str, Any]]:
    """(tool name, content, input) per call, as the loop keeps them."""
    uses, answers = [], []
    for n, (name, content, tool_input) in enumerate(results):
        uses.append({"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": tool_input})
        answers.append({"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": content})
    return [
        {"role": "user", "content": "question"},
        {"role": "assistant", "content": uses},
        {"role": "user", "content": answers},
    ]


APPLE_REVENUE = facts_result(
    320193,
    "Apple Inc.",
    "us-gaap:Revenues",
    [
        ("2024-09-29", "2025-09-27", 416161000000),
        ("2023-10-01", "2024-09-28", 391035000000),
        ("2022-09-25", "2023-09-30", 383285000000),
    ],
)
APPLE_GROSS = facts_result(
    320193,
    "Apple Inc.",
    "us-gaap:GrossProfit",
    [("2024-09-29", "2025-09-27", 195201000000), ("2023-10-01", "2024-09-28", 180683000000)],
)
APPLE_EPS = facts_result(
    320193,
    "Apple Inc.",
    "us-gaap:EarningsPerShareDiluted",
    [("2024-09-29", "2025-09-27", 7.46)],
    unit="USD/shares",
)
NVIDIA_REVENUE = facts_result(
    1045810,
    "NVIDIA CORP",
    "us-gaap:Revenues",
    [("2025-01-27", "2026-01-25", 215938000000), ("2024-01-29", "2025-01-26", 130497000000)],
    accession="0001045810-26-000021",
)
FACTS = "get_sec_company_facts"
