"""Every answer the demo gives to its generated question set (tests/demo/generated.py),
follow-ups included, comes out of the figure check with no unsourced or other-period
figure, checked against the tool results of its own run."""

from __future__ import annotations

from collections import Counter
from typing import Any

from demo_model.companies import CompanyIndex
from gateway import figures
from tests.demo.drive import Answer, answer
from tests.demo.generated import generate
from tests.demo.test_generated import GENERATED
from tools import Toolset


def conversation(question: str, said: Answer) -> list[dict[str, Any]]:
    uses = [
        {"type": "tool_use", "id": f"toolu_{n}", "name": call.name, "input": call.input}
        for n, call in enumerate(said.calls)
    ]
    results = [
        {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": content}
        for n, content in enumerate(said.results)
    ]
    return [
        {"role": "user", "content": question},
        {"role": "assistant", "content": uses},
        {"role": "user", "content": results},
    ]


async def test_every_generated_answer_is_sourced(index: CompanyIndex, toolset: Toolset) -> None:
    memo: dict[str, tuple[str, bool]] = {}
    counts: Counter[str] = Counter()
    flagged = []
    for case in generate(GENERATED):
        before: tuple[tuple[str, str], ...] = ()
        for earlier in case.chain[:-1]:
            before += ((earlier, (await answer(index, toolset, earlier, before, memo=memo)).text),)
        asked = case.chain[-1]
        said = await answer(index, toolset, asked, before, memo=memo)
        report = figures.check(said.text, figures.build(conversation(asked, said)), asked)
        counts.update(report.counts())
        for checked in report.figures:
            if checked.status in ("unsourced", "other_period"):
                flagged.append(
                    f"{case.chain}: {checked.figure.text} {checked.status}\n  {said.text[:300]}"
                )
    print(f"demo figures over {GENERATED} generated questions: {dict(counts)}")
    assert not flagged, "\n".join(flagged[:20])
    assert counts["sourced"] > 1000 and counts["derived"] > 100  # the set states figures
