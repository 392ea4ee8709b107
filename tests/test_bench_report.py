"""BENCH.md's ratio column: a reader can recompute every ratio from its row, or the row
says what the ratio is of."""

from __future__ import annotations

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
