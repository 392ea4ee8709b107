"""The index of a run's tool results: what each kind of fact row is indexed as."""

from __future__ import annotations

import orjson

from gateway import figures
from tests.figures.support import conversation

_FRAME = {
    "source": "offline snapshot",
    "taxonomy": "us-gaap",
    "concept": "Revenues",
    "unit": "USD",
    "period": "CY2024",
    "data": [
        {
            "entity": "Apple Inc.",
            "cik": 320193,
            "value": 391035000000,
            "start": "2023-10-01",
            "end": "2024-09-28",
            "accession_number": "0000320193-24-000123",
            "form": "10-K",
        },
        {
            "entity": "NVIDIA CORP",
            "cik": 1045810,
            "value": 60922000000,
            "start": "2023-01-30",
            "end": "2024-01-28",
            "accession_number": "0001045810-24-000029",
            "form": "10-K",
            "originally_reported": {
                "value": 60900000000,
                "form": "10-K",
                "accession_number": "0001045810-23-000017",
            },
            "restated_in": {
                "value": 60922000000,
                "form": "10-K/A",
                "accession_number": "0001045810-24-000031",
            },
        },
    ],
}


def test_frame_rows_are_each_their_own_company_and_restated_values_are_facts() -> None:
    index = figures.build(conversation(("get_sec_frames", orjson.dumps(_FRAME).decode(), {})))
    facts = [(s.company, s.value, s.form, s.accession) for s in index.sources if s.period]
    assert facts == [
        ("320193", 391035000000.0, "10-K", "0000320193-24-000123"),
        ("1045810", 60922000000.0, "10-K", "0001045810-24-000029"),
        ("1045810", 60900000000.0, "10-K", "0001045810-23-000017"),
        ("1045810", 60922000000.0, "10-K/A", "0001045810-24-000031"),
    ]
    assert index.aliases["apple inc"] == "320193" and index.aliases["nvidia"] == "1045810"
    assert {s.concept for s in index.sources if s.period} == {"us-gaap:Revenues"}
    nvidia = index.facts[("1045810", "us-gaap:Revenues")]
    assert [s.value for s in nvidia] == [60922000000.0, 60900000000.0, 60922000000.0]
    assert index.identifiers["0001045810-24-000031"].form == "10-K/A"


def test_fact_rows_take_what_their_enclosing_objects_say() -> None:
    result = {
        "company": {"name": "Apple Inc.", "cik": 320193},
        "concept": "us-gaap:Revenues",
        "form": "10-K",
        "accession_number": "0000320193-25-000079",
        "units": {
            "USD": {
                "annual": [
                    {"start": "2024-09-29", "end": "2025-09-27", "value": 416161000000},
                    {"end": "2025-09-27", "val": 5, "accn": "0000320193-26-000006", "form": 7},
                    {"end": "not a date", "value": 1},
                    ["a nested list", 12345],
                ]
            }
        },
    }
    index = figures.build(
        conversation(("get_sec_company_facts", orjson.dumps(result).decode(), {}))
    )
    facts = [(s.value, s.form, s.accession, s.unit, s.company) for s in index.sources if s.period]
    assert facts == [
        (416161000000.0, "10-K", "0000320193-25-000079", "USD", "320193"),
        (5.0, None, "0000320193-26-000006", "USD", "320193"),
    ]
    # The row that is no fact and the nested list's number are numbers all the same.
    assert {s.value for s in index.sources if s.period is None} >= {1.0, 12345.0}
