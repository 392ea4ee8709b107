"""The figure check at the end of a run: the answer `final` carries, checked against every
tool result of the conversation, as a `figures` event (appended just before `final`),
counts in `final.figures` and the `gateway_answer_figures_total` metric."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from gateway import events, figures
from gateway.events import Event, Final
from gateway.ops.observe import RunObserver

MAX_ANSWER_CHARS = 16_000
"""Longer answers are not checked (a `warning` `figure_check_skipped` says so): the check
runs on the event loop, about 1.5 ms per 1,000 characters, and a 20,000-delta answer of
numbers cost ~160 ms of it (bench case 1a)."""
_DIGIT = re.compile(r"\d")
"""Every figure the check reads has a digit (`figures.extract`: amounts, percentages,
accession numbers and CIKs all match `\\d`); an answer without one has none to check."""
SKIPPED = "The answer is longer than the figure check reads ({chars:,} characters): not checked"

Annotate = Callable[[Final], Event | None]
"""Given `final`: sets its `figures` counts and returns the `figures` event (None for an
answer without figures: `final.figures` says so with its zeros)."""


def annotator(
    enabled: bool, messages: list[dict[str, Any]], observer: RunObserver
) -> Annotate | None:
    """The run's figure check, or None when it is off."""
    return functools.partial(_annotate, messages, observer) if enabled else None


def _annotate(messages: list[dict[str, Any]], observer: RunObserver, final: Final) -> Event | None:
    answer = final["result"]
    if len(answer) > MAX_ANSWER_CHARS:
        return events.warning(
            "figure_check_skipped", SKIPPED.format(chars=MAX_ANSWER_CHARS), final["turns"]
        )
    if _DIGIT.search(answer) is None:  # no figure: no index to build, nothing to count
        final["figures"] = dict.fromkeys(figures.STATUSES, 0)
        return None
    report = figures.check(answer, figures.build(messages), question(messages))
    if final["outcome"] != "completed":
        _drop_cut_off(report, answer)
    counts = report.counts()
    event = events.figures([c.public() for c in report.figures], counts)
    observer.count_figures(final["model"], counts)
    final["figures"] = counts  # last: a check that raised leaves `final` as it was
    return event if report.figures else None


def _drop_cut_off(report: figures.Report, answer: str) -> None:
    """An answer cut off (max_tokens, a cancel) may end inside a figure: "$1.2" of
    "$1.25 billion". Its last figure, if the text ends with it, is not checked."""
    if report.figures and report.figures[-1].figure.end >= len(answer.rstrip()):
        report.figures.pop()


def question(messages: list[dict[str, Any]]) -> str:
    """The run's question: the last user message that is not tool results."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            texts = [b.get("text", "") for b in content if isinstance(b, dict)]
            if not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
                return " ".join(t for t in texts if isinstance(t, str))
    return ""
