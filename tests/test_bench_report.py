"""BENCH.md's ratio column: a reader can recompute every ratio from its row, or the row
says what the ratio is of."""

from __future__ import annotations

import math

import pytest

from bench.common import median_interval
from bench.report import ratio_cell


def test_a_ratio_of_the_two_columns_stands_alone() -> None:
    assert ratio_cell(1.5, 3.0, 2.0) == "1.50"
    assert ratio_cell(1 / 11, 2.0, 22.0) == "1/11"


def test_a_median_of_per_repetition_ratios_says_so_with_the_columns_quotient() -> None:
    # case 1a as first reported: 2.05 against 1.26 is 1.63, the repetitions' median 1.22
    cell = ratio_cell(1.22, 2.05, 1.26)
    assert cell == "1.22 (median of the repetitions' ratios; value / reference 1.63)"


def test_no_reference_no_quotient() -> None:
    assert ratio_cell(None, 2.0, None) == "–"
    assert ratio_cell(0.5, 2.0, float("nan")) == "0.50"


def test_a_median_ratio_says_where_it_lies_given_the_repetitions_spread() -> None:
    cell = ratio_cell(1.02, 2.04, 2.0, (0.91, 1.12, 0.9375))
    assert cell == "1.02 (median of the repetitions' ratios; 94 % interval 0.91-1.12)"
    cell = ratio_cell(1.22, 2.05, 1.26, (1.10, 1.30, 0.5))
    assert cell == (
        "1.22 (median of the repetitions' ratios; 50 % interval 1.10-1.30; value / reference 1.63)"
    )
    assert ratio_cell(1.5, 3.0, 2.0, (1.5, 1.5, 0.0)) == "1.50"  # one repetition: no interval


def test_the_median_interval_is_the_order_statistics_the_binomial_allows() -> None:
    low, high, coverage = median_interval([])
    assert math.isnan(low) and math.isnan(high) and coverage == 0
    assert median_interval([3.0]) == (3.0, 3.0, 0.0)
    assert median_interval([2.0, 1.0]) == (1.0, 2.0, 0.5)
    # five or six: too few to drop one from each end and keep 90 %: the whole range
    low, high, coverage = median_interval([5.0, 1.0, 4.0, 2.0, 3.0])
    assert (low, high) == (1.0, 5.0) and coverage == pytest.approx(30 / 32)
    assert median_interval([float(v) for v in range(6)])[:2] == (0.0, 5.0)
    # eight: the 2nd smallest to the 2nd largest, 1 - 2 * (1 + 8) / 256 of the time
    low, high, coverage = median_interval([float(v) for v in (7, 0, 6, 1, 5, 2, 4, 3)])
    assert (low, high) == (1.0, 6.0) and coverage == pytest.approx(1 - 18 / 256)
    assert median_interval([float(v) for v in range(8)], least=0.95)[:2] == (0.0, 7.0)
