"""Thousands of generated analyst questions (tests/demo/generated.py), answered by the demo
model in-process with the real offline tools, and a sample through the gateway over HTTP.
Every answer: no figure of a period or company that was not asked, the period asked named
in the first sentence, every refusal naming what was not understood or not held."""

from __future__ import annotations

import collections

from demo_model.companies import CompanyIndex
from tests.demo.conftest import Client
from tests.demo.drive import answer
from tests.demo.generated import BY_KEY, COMPANIES, Case, Period, check, expected, generate
from tests.demo.support import ask
from tools import Toolset

GENERATED = 2500
ANSWERED_AT_LEAST = 0.98
"""Of the questions the snapshot can answer; the rest of the set must be declined."""


async def run_case(
    index: CompanyIndex, toolset: Toolset, case: Case, memo: dict[str, tuple[str, bool]]
) -> str:
    before: tuple[tuple[str, str], ...] = ()
    for earlier in case.chain[:-1]:
        said = await answer(index, toolset, earlier, before, memo=memo)
        before += ((earlier, said.text),)
    return (await answer(index, toolset, case.chain[-1], before, memo=memo)).text


async def test_generated_questions(index: CompanyIndex, toolset: Toolset) -> None:
    cases = generate(GENERATED)
    memo: dict[str, tuple[str, bool]] = {}
    counts: collections.Counter[str] = collections.Counter()
    failures = []
    for case in cases:
        said = await run_case(index, toolset, case, memo)
        verdict = check(case, said)
        counts[case.kind] += 1
        counts["answerable"] += case.expect.value is not None
        counts["answered"] += verdict.answered
        counts["wrong figures"] += len(verdict.wrong)
        if verdict.wrong or verdict.problems:
            failures.append(f"{case.chain}: {verdict.wrong} {verdict.problems}\n  {said[:400]}")
    share = counts["answered"] / counts["answerable"]
    print(f"generated: {len(cases)} questions, {counts['answerable']} answerable, "
          f"{counts['answered']} answered ({share:.1%}), {counts['wrong figures']} wrong "
          f"figures; by kind {dict(counts)}")  # fmt: skip
    assert not failures, f"{len(failures)} answers break a property:\n" + "\n".join(failures[:20])
    assert counts["wrong figures"] == 0
    assert share >= ANSWERED_AT_LEAST
    for kind in ("year before", "that year", "another company", "declined", "not held",
                 "named quarter", "latest 10-Q", "change", "not reported",
                 "quarter before", "figure follow-up"):  # fmt: skip
        assert counts[kind] > 20  # the mix the set is meant to have


async def test_a_generated_sample_through_the_gateway(
    demo_gateway: Client, toolset: Toolset
) -> None:
    """The same properties over HTTP: /api/stream, sessions carrying follow-ups."""
    cases = generate(400, seed=7)[::25]
    assert len({c.kind for c in cases}) >= 3
    for case in cases:
        session: dict[str, str] = {}
        for earlier in case.chain[:-1]:
            first = await ask(demo_gateway, earlier, **session)
            session = {"sessionId": first.final["session_id"]}
        run = await ask(demo_gateway, case.chain[-1], **session)
        verdict = check(case, run.answer)
        assert not verdict.wrong and not verdict.problems, (case.chain, verdict, run.answer)
        assert verdict.answered == (case.expect.value is not None), (case.chain, run.answer)


def test_the_check_tells_a_wrong_period_from_the_right_one() -> None:
    """The check itself: Apple's FY2025 net income for a question on FY2023 is a wrong
    figure; FY2023's is right; a miss without the period it lacks is a problem."""
    apple = COMPANIES[0]
    asked = Period("fiscal", "fy23", 2023)
    case = Case(("apple net income fy23",), expected(apple, BY_KEY["net_income"], asked), apple,
                COMPANIES[1:])  # fmt: skip
    assert case.expect.value == 96_995_000_000 and case.expect.period == "FY2023"
    right = check(case, "**Apple Inc.** reported net income of **$97.0 billion** (FY2023).")
    assert right.answered and not right.wrong and not right.problems
    other_year = check(case, "**Apple Inc.** reported net income of **$112.0 billion** (FY25).")
    assert not other_year.answered and other_year.wrong == ["$112.0 billion"]
    unnamed = check(case, "**Apple Inc.** reported net income of **$97.0 billion**.")
    assert unnamed.problems == ["first sentence does not name FY2023"]
    nvidia = check(case, "**Apple Inc.** reported **$97.0 billion** (FY2023); NVIDIA more.")
    assert nvidia.wrong == ["names NVIDIA"]
    fy30 = expected(apple, BY_KEY["net_income"], Period("fiscal", "fy30", 2030))
    future = Case(("apple net income fy30",), fy30)
    assert not check(future, "I have no net income of Apple for fiscal year 2030: ...").answered
    assert not check(future, "I have no net income of Apple for fiscal year 2030.").problems
    assert check(future, "Apple has no such value.").problems
    assert check(future, "Apple's FY2025 net income was $112.0 billion.").wrong
