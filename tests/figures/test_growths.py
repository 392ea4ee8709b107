"""Growth rates between a concept's facts: a series too flat to reach a figure is skipped
without losing any rate that reaches it, and of two rates that both match a figure the
one reported does not depend on the process (the order of a set of strings)."""

from __future__ import annotations

import random

from gateway import figures
from gateway.figures.derive import _below, _series_growths
from gateway.figures.periods import span
from gateway.figures.sources import Source
from tests.figures.support import FACTS, conversation, facts_result


def _series(rng: random.Random) -> list[Source]:
    """A few facts of one concept, years and quarters, some years apart, all of one sign."""
    facts = []
    sign = rng.choice((1.0, -1.0))
    for year in rng.sample(range(2015, 2026), rng.randint(2, 6)):
        value = sign * rng.choice((1.0, 1e6, 1e9)) * rng.uniform(0.5, 3.0)
        period = span(f"{year - 1}-10-01", f"{year}-09-30")
        if rng.random() < 0.3:  # a quarter instead
            period = span(f"{year}-07-01", f"{year}-09-30")
        facts.append(Source("toolu_0", "get_sec_company_facts", value, "us-gaap:X", period))
    return facts


def test_a_series_skipped_has_no_growth_in_the_window() -> None:
    rng = random.Random(5)
    skipped = 0
    for _ in range(3_000):
        series = _series(rng)
        sizes = [abs(s.value) for s in series]
        values = [s.value for s in series]
        largest = (max(sizes) - min(sizes)) / min(sizes) * 100
        low = largest * rng.choice((0.2, 0.9, 0.999999, 1.0, 1.000001, 1.5))
        window = (low, low + rng.choice((0.05, 0.5, 50.0)))
        if _below(values, low):
            skipped += 1
            assert list(_series_growths(series, window)) == []
        elif low <= largest <= window[1]:
            # the pair of the largest over the smallest is found: not skipped at its edge
            assert any(
                abs(abs(v) - largest) < 1e-9 * largest
                for _, _, v in _series_growths(series, window)
            )
    assert 500 < skipped < 2_500


def test_a_series_with_a_loss_or_a_zero_is_never_skipped() -> None:
    assert not _below([-5.0, 100.0], 1e9)
    assert not _below([0.0, 100.0], 1e9)
    assert _below([100.0, 110.0], 10.5)
    assert not _below([100.0, 110.0], 10.0)  # 10 % is reached: (110 - 100) / 100
    # Losses alone are bounded by their sizes: -110 on -100 is a 10 % change.
    assert _below([-100.0, -110.0], 10.5)
    assert not _below([-100.0, -110.0], 10.0)


def test_of_growth_rates_that_all_match_the_one_reported_is_the_same_in_every_process() -> None:
    """Three concepts grew 10.0 %: the first by name is reported (before, the order of a
    set of strings chose, which differs with PYTHONHASHSEED)."""
    rows = [("2023-10-01", "2024-09-28", 200.0e9), ("2024-09-29", "2025-09-27", 220.0e9)]
    results = [
        facts_result(320193, "Apple Inc.", concept, [(s, e, v / k) for s, e, v in rows])
        for k, concept in enumerate(
            ("us-gaap:Revenues", "us-gaap:GrossProfit", "us-gaap:OperatingIncomeLoss"), 1
        )
    ]
    messages = conversation(*((FACTS, r, {"company_identifier": "AAPL"}) for r in results))
    report = figures.check(
        "In FY2025 Apple's operating income was $73.3 billion, up 10.0% on FY2024.",
        figures.build(messages),
    )
    growth = next(c for c in report.figures if c.figure.text == "10.0%")
    assert growth.status == "derived"
    assert growth.formula is not None and growth.formula.startswith("(us-gaap:GrossProfit ")
