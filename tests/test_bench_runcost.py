"""Case 1e's arithmetic: the scheduler's total split by the ticks' kernel share, and its
rows against the floor and the gateway of a round ago."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.case_instructions import _dumps
from bench.case_runcost import _rows, _split, run_cost_table
from bench.run import ROUND_SYSTEM, Bench


def test_the_total_is_the_schedulers_and_the_ticks_give_the_kernels_share() -> None:
    before, after = (100, 20, 5_000_000), (130, 30, 605_000_000)  # 30 + 10 ticks, 0.6 s
    user, kernel = _split(before, after, runs=400)
    assert user + kernel == pytest.approx(1_500.0)
    assert kernel == pytest.approx(375.0)
    assert _split(before, (100, 20, 5_000_000), runs=10) == (0.0, 0.0)


def bench_with(ticks: dict[str, list[tuple[float, float]]]) -> Bench:
    none: Any = None
    bench = Bench(True, none, none, none)
    _rows(bench, ticks, {"gateway": 1_500_000.0, "relay-raw": 900_000.0})
    return bench


def test_rows_hold_the_targets_of_the_issue() -> None:
    ticks = {
        "gateway": [(900.0, 200.0), (1_000.0, 200.0)],
        "relay-raw": [(600.0, 150.0), (700.0, 150.0)],
        ROUND_SYSTEM: [(1_000.0, 150.0), (1_200.0, 150.0)],
    }
    rows = {(row.figure[:5], row.ref_name): row for row in bench_with(ticks).rows}
    floor, old = rows[("Whole", "relay-raw")], rows[("Whole", ROUND_SYSTEM)]
    assert floor.ratio == pytest.approx((1_100 / 750 + 1_200 / 850) / 2)
    assert floor.passed is True  # <= 1.5x
    assert old.ratio == pytest.approx((1_100 / 1_150 + 1_200 / 1_350) / 2)
    assert old.passed is True
    assert rows[("Kerne", "relay-raw")].value == 200.0
    assert rows[("Instr", "relay-raw")].ratio_value() == pytest.approx(1.5 / 0.9)
    assert ("Instr", ROUND_SYSTEM) not in rows  # not counted: no row


def test_a_missing_reference_is_said_and_a_miss_is_a_miss() -> None:
    ticks = {"gateway": [(1_400.0, 200.0)], "relay-raw": [(800.0, 200.0)]}
    bench = bench_with(ticks)
    rows = {(row.figure[:5], row.ref_name): row for row in bench.rows}
    assert rows[("Whole", "relay-raw")].passed is False  # 1.6x
    assert "not measured" in rows[("Whole", ROUND_SYSTEM)].note
    bench.details["run_cost"] = {
        "user_us": {"gateway": [1_400.0]},
        "kernel_us": {"gateway": [200.0]},
        "instructions": {},
    }
    assert run_cost_table(bench) == [["gateway", "1400", "200", "1600", "–"]]


def test_the_dumps_are_read_in_order_and_the_exit_dump_left_out(tmp_path: Path) -> None:
    out = tmp_path / "gateway"
    out.write_text("totals: 0\n")  # the dump at exit: counting was off
    (tmp_path / "gateway.2").write_text("events: Ir\nsummary: 9\ntotals: 300\n")
    (tmp_path / "gateway.1").write_text("events: Ir\ntotals: 5000\n")
    (tmp_path / "gateway-other.1").write_text("totals: 7\n")
    assert _dumps(out) == [5_000, 300]
    (tmp_path / "gateway.2").unlink()
    with pytest.raises(RuntimeError, match="1 of 2 dumps"):
        _dumps(out)
