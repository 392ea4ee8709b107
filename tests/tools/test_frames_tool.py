"""get_sec_xbrl_frames over the offline snapshot: what a ranking says and names, and its
errors. Offline only (no fake EDGAR server), so it is quick and steady enough for the
mutation run; test_xbrl_tools.py runs the tool against the fake EDGAR as well."""

from __future__ import annotations

import pytest

from tests.tools.conftest import call_error, call_ok
from tools import Toolset


def _filing(value: float, form: str, accn: str, filed: str) -> dict[str, object]:
    return {"value": value, "form": form, "accession_number": accn, "filed": filed}


async def test_a_ranking_names_each_value_s_filing_and_restatement(offline: Toolset) -> None:
    # Apple's and NVIDIA's fiscal 2008 (years to September 2008 and January 2009).
    result = await call_ok(offline, "get_sec_xbrl_frames", concept="NetIncomeLoss", period="CY2008")
    assert result == {
        "source": "offline snapshot",
        "taxonomy": "us-gaap",
        "concept": "NetIncomeLoss",
        "unit": "USD",
        "period": "CY2008",
        "label": "Net Income (Loss) Attributable to Parent",
        "total": 2,
        "count": 2,
        "data": [
            {
                "entity": "Apple Inc.",
                "cik": 320193,
                "value": 6119000000,
                "start": "2007-09-30",
                "end": "2008-09-27",
                "accession_number": "0001193125-10-238044",
                "form": "10-K",
                "filed": "2010-10-27",
                "originally_reported": _filing(
                    4834000000, "10-K", "0001193125-09-214859", "2009-10-27"
                ),
                "restated_in": _filing(6119000000, "10-K/A", "0001193125-10-012091", "2010-01-25"),
            },
            {
                "entity": "NVIDIA CORP",
                "cik": 1045810,
                "value": -30041000,
                "start": "2008-01-28",
                "end": "2009-01-25",
                "accession_number": "0001045810-11-000015",
                "form": "10-K",
                "filed": "2011-03-16",
            },
        ],
    }


async def test_taxonomy_unit_period_and_limit(offline: Toolset) -> None:
    eps = await call_ok(
        offline,
        "get_sec_xbrl_frames",
        concept="us-gaap:EarningsPerShareDiluted",
        period=" cy2009 ",
        unit=" USD/shares ",
        taxonomy="dei",  # the concept's own prefix wins
        limit=1,
    )
    assert (eps["taxonomy"], eps["period"], eps["unit"]) == ("us-gaap", "CY2009", "USD/shares")
    assert (eps["total"], eps["count"]) == (2, 1)
    [apple] = eps["data"]
    assert (apple["entity"], apple["value"]) == ("Apple Inc.", 9.08)
    assert apple["originally_reported"]["value"] == 6.29
    shares = await call_ok(
        offline,
        "get_sec_xbrl_frames",
        concept="EntityCommonStockSharesOutstanding",
        taxonomy="dei",
        unit="shares",
        period="CY2023Q4I",
    )
    values = [r["value"] for r in shares["data"]]
    assert shares["taxonomy"] == "dei" and len(values) == shares["total"] == 4
    assert values == sorted(values, reverse=True)
    assert all("start" not in r for r in shares["data"])


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"concept": "Assets", "period": "2023"}, "period '2023' is not CY2023, CY2023Q1 or"),
        ({"concept": "Assets", "period": "CY2023Q5"}, "is not CY2023, CY2023Q1 or CY2023Q4I"),
        ({"concept": "Net Income", "period": "CY2023"}, "Not an XBRL concept name: 'Net Income'"),
        ({"concept": "us gaap:Assets", "period": "CY2023"}, "Not an XBRL concept name"),
    ],
)
async def test_bad_arguments_are_named(
    offline: Toolset, arguments: dict[str, str], message: str
) -> None:
    assert message in await call_error(offline, "get_sec_xbrl_frames", **arguments)


async def test_a_missing_frame_says_instant_or_duration(offline: Toolset) -> None:
    year = await call_error(offline, "get_sec_xbrl_frames", concept="Assets", period="CY2023")
    assert (
        "Balance-sheet concepts (Assets, Liabilities, cash) are instants: use e.g. CY2023Q4I"
        in year
    )
    quarter = await call_error(offline, "get_sec_xbrl_frames", concept="Assets", period="CY2023Q2")
    assert "use e.g. CY2023Q2I. Check concept and unit too." in quarter
    instant = await call_error(
        offline, "get_sec_xbrl_frames", concept="Revenues", period="CY2023Q4I"
    )
    assert instant.endswith(
        "Instants (…I) suit balance-sheet concepts; for flows use CY2023 or CY2023Q1."
    )
