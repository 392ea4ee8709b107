"""Case 1e's arithmetic: the scheduler's total split by the ticks' kernel share, and its
rows against the floor and the gateway of a round ago."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from bench.case_instructions import _dumps
from bench.case_runcost import (
    SOURCE_SYSTEM,
    _compiled_row,
    _rows,
    _split,
    run_cost_table,
    runs_compiled,
)
from bench.run import ROUND_SYSTEM, Bench, env_wrapper


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
    # two repetitions: their ratios' range, which holds the median half the time
    assert floor.interval is not None
    low, high, coverage = floor.interval
    assert (low, high, coverage) == (1_200 / 850, 1_100 / 750, 0.5)
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


def test_the_compiled_row_is_the_gateway_against_its_source_and_says_when_not_as_meant() -> None:
    ticks = {
        "gateway": [(900.0, 100.0), (1_100.0, 100.0)],
        "relay-raw": [(600.0, 100.0), (600.0, 100.0)],
        SOURCE_SYSTEM: [(1_000.0, 100.0), (1_000.0, 100.0)],
    }
    counts = {"gateway": 1_400_000.0, SOURCE_SYSTEM: 1_500_000.0}
    bench = bench_with(ticks)
    _compiled_row(bench, ticks, counts, {"gateway": True, SOURCE_SYSTEM: False})
    cpu, instructions = bench.rows[-2:]
    assert (cpu.ref_name, cpu.value, cpu.ref_value) == (SOURCE_SYSTEM, 1_100.0, 1_100.0)
    assert cpu.ratio == pytest.approx((1_000 / 1_100 + 1_200 / 1_100) / 2)
    assert instructions.ratio_value() == pytest.approx(1.4 / 1.5)
    assert cpu.note == instructions.note == ""
    _compiled_row(bench, ticks, {}, {"gateway": True, SOURCE_SYSTEM: True})
    assert "not as meant" in bench.rows[-1].note and "Instr" not in bench.rows[-1].figure


def test_a_system_with_variables_of_its_own_runs_under_env() -> None:
    assert env_wrapper(SOURCE_SYSTEM) == ("env", "GATEWAY_PURE_PYTHON=1")
    assert env_wrapper("gateway") == ()


def test_the_memory_map_says_whether_the_compiled_modules_run() -> None:
    import gateway.events

    assert runs_compiled(os.getpid()) == gateway.events.__file__.endswith(".so")
    assert runs_compiled(2**22 + 1) is False  # no such process
