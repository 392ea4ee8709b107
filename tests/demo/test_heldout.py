"""The demo model on 24 analyst questions kept aside (tests/demo/heldout.py): at least 20
right, none leading with a figure of another period or company, every figure grounded."""

from __future__ import annotations

import orjson
import pytest

from tests.demo.conftest import Client
from tests.demo.heldout import CASES, Case, Verdict, score
from tests.demo.heldout2 import SET_P, SET_Q
from tests.demo.heldout3 import SET_R
from tests.demo.support import ask, replay, ungrounded
from tools import Toolset

TARGET = 20


async def run_case(client: Client, toolset: Toolset, case: Case) -> tuple[Verdict, list[str]]:
    session: dict[str, str] = {}
    for earlier in case.before:
        first = await ask(client, earlier, **session)
        session = {"sessionId": first.final["session_id"]}
    run = await ask(client, case.question, **session)
    sources = await replay(run, toolset)
    asked = orjson.dumps([use["tool"]["input"] for use in run.uses]).decode()
    return score(case, run.answer), ungrounded(run.result, [*sources, asked])


async def test_heldout_analyst_questions(demo_gateway: Client, toolset: Toolset) -> None:
    verdicts = {case.question: await run_case(demo_gateway, toolset, case) for case in CASES}
    report = "\n".join(
        f"{'ok ' if v.right else 'BAD'} {q!r}: {v.why}" + (f"; ungrounded {u}" if u else "")
        for q, (v, u) in verdicts.items()
    )
    right = sum(v.right for v, _ in verdicts.values())
    assert right >= TARGET, f"{right}/{len(CASES)} right:\n{report}"
    assert not [q for q, (v, _) in verdicts.items() if v.wrong_lead], report
    assert not [q for q, (_, u) in verdicts.items() if u], report


@pytest.mark.parametrize(
    "cases",
    [SET_P, SET_Q, SET_R],
    ids=["periods-and-figures", "filers-and-refusals", "analysts-quarters-ratios-changes"],
)
async def test_more_heldout_sets(
    demo_gateway: Client, toolset: Toolset, cases: tuple[Case, ...]
) -> None:
    """Three more sets of 24 (tests/demo/heldout2.py, heldout3.py): the same bar, each set
    on its own."""
    assert len(cases) == 24
    verdicts = {case.question: await run_case(demo_gateway, toolset, case) for case in cases}
    report = "\n".join(
        f"{'ok ' if v.right else 'BAD'} {q!r}: {v.why}" + (f"; ungrounded {u}" if u else "")
        for q, (v, u) in verdicts.items()
    )
    right = sum(v.right for v, _ in verdicts.values())
    print(f"held-out set: {right}/{len(cases)} right\n{report}")
    assert right >= TARGET, f"{right}/{len(cases)} right:\n{report}"
    assert not [q for q, (v, _) in verdicts.items() if v.wrong_lead], report
    assert not [q for q, (_, u) in verdicts.items() if u], report


def test_a_refusal_must_name_what_it_lacks() -> None:
    case = Case("costco revenue fy24", False, expect=("costco",))
    assert score(
        case, "I can't: no company I know (I didn't recognise “costco”). Ask for Apple."
    ).right
    assert not score(case, "I can't answer that. Ask for Apple's revenue instead.").right


def test_the_scoring_tells_right_from_wrong() -> None:
    """The score itself: the right figure passes, another period's figure is a wrong lead,
    a plain refusal with an offer passes, a figure before the refusal does not."""
    case = Case("apple dividend per share", True, "$1.02 per share", ("FY2025",))
    assert score(case, "Apple paid **$1.02 per share** (FY2025).").right
    wrong = score(case, "Apple paid $0.98 per share (FY2024).")
    assert not wrong.right and wrong.wrong_lead
    assert not score(case, "Apple paid $1.02 per share.").right  # no period
    nope = Case("tesla revenue 2024", False)
    assert score(nope, "The snapshot has no FY2024 revenue for Tesla. Ask for 2021.").right
    leads = score(nope, "Tesla revenue was $53.8 billion (FY2021); it has no 2024 value.")
    assert not leads.right and leads.wrong_lead
    assert not score(nope, "Here are Tesla's filings.").right


def test_grounding_check_catches_made_up_facts() -> None:
    """The grounding check the held-out run relies on: reported values, changes and
    margins pass; a figure or percentage no two reported values give does not."""
    facts = ['{"units": {"USD": [{"end": "2025-09-27", "value": 195201000000}, '
             '{"end": "2025-09-27", "value": 416161000000}]}}']  # fmt: skip
    assert ungrounded("Gross margin **46.9%**: $195.2 billion on $416.2 billion.", facts) == []
    assert ungrounded("Revenue of $416.2 billion at 2025-09-27.", facts) == []
    assert ungrounded("Gross margin 51.3%.", facts) == ["51.3%"]
    assert ungrounded("Revenue of $420.0 billion (FY2024).", facts) == ["FY2024", "$420.0 billion"]
    flows = ['{"operating": 11497000000, "capex": 6482000000}']
    fcf = "Free cash flow **$5.01 billion**: $11.5 billion less $6.48 billion."
    assert ungrounded(fcf, flows) == []
    assert ungrounded("Free cash flow $5.01 billion.", flows) == ["$5.01 billion"]  # no parts
