"""Bad input never breaks the check: no figures, ten thousand, tables and code blocks,
tool results that are not JSON (or not text), odd conversations."""

from __future__ import annotations

from typing import Any

from gateway import figures
from gateway.figures import extract
from gateway.figures.index import MAX_RESULT_CHARS, MAX_TEXT_CHARS
from gateway.runs.figures import question
from tests.figures.support import APPLE_GROSS, APPLE_REVENUE, FACTS, conversation, facts_result

APPLE = conversation((FACTS, APPLE_REVENUE, {}), (FACTS, APPLE_GROSS, {}))


def test_no_figures() -> None:
    for answer in ("", "No figures here.", "Apple filed its 10-K on 2025-10-31 for FY2025."):
        report = figures.check(answer, figures.build(APPLE))
        assert report.figures == []
        assert report.counts() == {"sourced": 0, "derived": 0, "unsourced": 0, "other_period": 0}


def test_ten_thousand_figures_are_capped() -> None:
    answer = " ".join(f"Line {n}: ${n}.5 million in FY2025." for n in range(10_000))
    report = figures.check(answer, figures.build(APPLE))
    assert len(report.figures) == extract.MAX_FIGURES
    assert report.figures[-1].figure.text == f"${extract.MAX_FIGURES - 1}.5 million"
    assert sum(report.counts().values()) == extract.MAX_FIGURES


def test_tables_take_their_scale_note() -> None:
    answer = (
        "Apple, FY2025 (in millions):\n\n| | FY2025 | FY2024 |\n|---|---|---|\n"
        "| Revenue | 416,161 | 391,035 |\n| Gross profit | 195,201 | 180,683 |\n"
        "| Other | 1,234 | 12 |\n"
        "\nAfter the table, 416,161 is just a number."
    )
    report = figures.check(answer, figures.build(APPLE))
    got = [(c.figure.text, c.figure.value, c.status) for c in report.figures]
    assert got == [
        ("416,161", 416161e6, "sourced"),
        ("391,035", 391035e6, "sourced"),
        ("195,201", 195201e6, "sourced"),
        ("180,683", 180683e6, "sourced"),
        ("1,234", 1234e6, "unsourced"),
        ("12", 12e6, "unsourced"),
        ("416,161", 416161.0, "unsourced"),
    ]


def test_code_blocks_are_text_like_any_other() -> None:
    answer = "```\nrevenue = 416_161  # $416.2 billion in FY2025\nratio = 1.5\n```"
    report = figures.check(answer, figures.build(APPLE))
    assert [(c.figure.text, c.status) for c in report.figures] == [("$416.2 billion", "sourced")]


def test_results_that_are_not_json() -> None:
    messages = conversation(
        ("fetch", "Revenue rose to $416.2 billion; margin 46.9%. {broken", {}),
        ("search", "{not json at all: 391,035 million", {}),
        ("document", "(In millions)\nNet sales 416,161 383,285", {}),
        ("blob", "", {}),
    )
    messages[2]["content"].append(
        {
            "type": "tool_result",
            "tool_use_id": "toolu_x",
            "content": [
                {"type": "text", "text": "Cash was $29.9 billion."},
                {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
            ],
        }
    )
    messages[2]["content"].append(
        {
            "type": "tool_result",
            "tool_use_id": "toolu_y",
            "content": "$777 bn",
            "is_error": True,
        }
    )
    answer = (
        "Sales $416.2 billion, margin 46.9%, $391,035 million, $383.3 billion, "
        "cash $29.9 billion, $777 billion."
    )
    report = figures.check(answer, figures.build(messages))
    assert {c.figure.text: c.status for c in report.figures} == {
        "$416.2 billion": "sourced",
        "46.9%": "sourced",
        "$391,035 million": "sourced",
        "$383.3 billion": "sourced",
        "$29.9 billion": "sourced",
        "$777 billion": "unsourced",  # an error result is no source
    }
    sources = [s.public() for s in report.figures[0].sources]  # the text, the note's scale
    assert sorted(sources, key=str) == [
        {"tool_use_id": "toolu_0", "tool": "fetch"},
        {"tool_use_id": "toolu_2", "tool": "document"},
    ]


def test_huge_text_results_are_read_up_to_a_cap() -> None:
    filler = "x" * MAX_TEXT_CHARS
    messages = conversation(("b", "$416.2 billion", {}), ("a", filler, {}))  # latest first
    report = figures.check("It was $416.2 billion.", figures.build(messages))
    assert report.counts()["unsourced"] == 1  # past the cap: not read


def test_odd_conversations() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": None},
        {"role": "assistant", "content": "plain text"},
        {"role": "assistant", "content": [None, 3, {"type": "tool_use"}]},
        {"role": "user", "content": [{"type": "tool_result", "content": {"odd": [1, 2]}}]},
        {"role": "user", "content": [{"type": "text", "text": "Apple revenue FY2025?"}]},
    ]
    figures.check("It was $416.2 billion.", figures.build(messages))
    assert question(messages) == "Apple revenue FY2025?"
    assert question([]) == ""


def test_results_past_the_cap_are_no_source() -> None:
    old = facts_result(320193, "Apple Inc.", "us-gaap:Revenues", [(None, "2025-09-27", 7.25)])
    filler = "[" + ",".join(["1"] * (MAX_RESULT_CHARS // 2)) + "]"
    alone = conversation(("old", old, {}))
    assert figures.check("EPS $7.25.", figures.build(alone)).counts()["sourced"] == 1
    crowded = conversation(("old", old, {}), ("big", filler, {}))  # indexed latest first
    assert figures.check("EPS $7.25.", figures.build(crowded)).counts()["unsourced"] == 1
