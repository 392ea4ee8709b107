"""The planted-error evaluation (bench/figures_eval.py) at its smallest honest size: 300
answers from the offline snapshot's real tool results. The numbers BENCH.md reports come
from the same code with more answers."""

from __future__ import annotations

from bench.figures_eval import ERRORS, evaluate, load


async def test_planted_errors_are_caught_and_correct_figures_pass() -> None:
    score = evaluate(await load(), 300, seed=11)
    planted, caught = sum(score.planted.values()), sum(score.caught.values())
    print("\n".join(score.lines()))
    assert score.answers == 300
    assert set(score.planted) == set(ERRORS) and min(score.planted.values()) >= 15
    assert caught / planted >= 0.98, score.misses
    assert score.flagged / score.correct <= 0.01, score.alarms[:10]
    assert score.unseen == 0
