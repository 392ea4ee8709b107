"""Find a 10-K / 10-Q / 8-K item in a filing's text, and page through long text.

Item headings are lines that start with "Item 1A.", "ITEM 7", "Item 5.02" and so on. The
table of contents lists the same headings, one line each, so for every candidate heading
the body runs to the next heading of another item, and the longest body wins: the real
section is pages long, its table-of-contents entry one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Heading", "Section", "find_section", "headings", "page"]

_ITEM_ID = r"(\d{1,2}[A-Da-d]?(?:\.\d{2})?)"
# A heading: "Item 7.", "ITEM 1A:", "Item 1C |", or "Item 7 Management's..." (a capital
# after the number). "Item 7 of this report" on a wrapped line is prose, not a heading.
_HEADING = re.compile(
    r"^[ \t]*(?:PART[ \t]+([IV]+)[^\w\n]+)?ITEM\s+"
    + _ITEM_ID
    + r"""(?=\s*(?:[.:|\-—–]|$)|\s+(?-i:[A-Z"“'’]))""",
    re.IGNORECASE | re.MULTILINE,
)
# A part heading is a short line of its own ("PART II. OTHER INFORMATION"), not prose.
_PART = re.compile(r"^[ \t]*PART[ \t]+([IV]+)\b[^\n]{0,60}$", re.IGNORECASE | re.MULTILINE)
_SIGNATURES = re.compile(r"^[ \t]*SIGNATURES?\s*$", re.IGNORECASE | re.MULTILINE)
# A contents row as the table converter writes it: "Item 1A. | Risk Factors | 12".
_CONTENTS_ROW = re.compile(r"\|.*\|\s*(\d+|[ivx]+)\s*$", re.IGNORECASE)
_REQUEST = re.compile(rf"^\s*(?:part\s+([ivx]+)\W+)?(?:item\s*)?{_ITEM_ID}\.?\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Heading:
    """An item heading line: where it starts, its item id ("1A", "5.02"), part, title."""

    start: int
    item: str
    part: str
    title: str

    @property
    def in_contents(self) -> bool:
        return bool(_CONTENTS_ROW.search(self.title))


@dataclass(frozen=True, slots=True)
class Section:
    item: str
    title: str
    text: str


def _norm_item(item: str) -> str:
    return item.upper().rstrip(".")


def headings(text: str) -> list[Heading]:
    parts = [(m.start(), m.group(1).upper()) for m in _PART.finditer(text)]
    found = []
    for match in _HEADING.finditer(text):
        line_end = text.find("\n", match.start())
        line = text[match.start() : line_end if line_end >= 0 else len(text)].strip()
        part = match.group(1) or next((p for pos, p in reversed(parts) if pos <= match.start()), "")
        found.append(Heading(match.start(), _norm_item(match.group(2)), part.upper(), line))
    return found


def _body_end(text: str, all_headings: list[Heading], index: int) -> int:
    this = all_headings[index]
    end = next(
        (h.start for h in all_headings[index + 1 :] if h.item != this.item or h.part != this.part),
        len(text),
    )
    # A part heading or the signatures also end the last item before them.
    stops = (_PART.search(text, this.start + 1, end), _SIGNATURES.search(text, this.start, end))
    return min((m.start() for m in stops if m), default=end)


def _wanted(request: str) -> tuple[str | None, str | None, str | None]:
    """(part, item, title words) from "Item 1A", "1a", "Part II Item 1A" or "Risk Factors"."""
    match = _REQUEST.match(request)
    if match:
        part = match.group(1).upper() if match.group(1) else None
        return part, _norm_item(match.group(2)), None
    return None, None, " ".join(re.findall(r"\w+", request.lower()))


def _matches(h: Heading, part: str | None, item: str | None, title: str | None) -> bool:
    if item is not None:
        return h.item == item and (part is None or h.part == part)
    return (
        title is not None and bool(title) and title in " ".join(re.findall(r"\w+", h.title.lower()))
    )


def find_section(text: str, request: str) -> Section | None:
    """The body of the requested item, or None when it is not there.

    Headings outside the table of contents are preferred; among those the longest body wins.
    """
    part, item, title = _wanted(request)
    all_headings = headings(text)
    best: tuple[bool, int, int, int] | None = None
    for index, h in enumerate(all_headings):
        if not _matches(h, part, item, title):
            continue
        end = _body_end(text, all_headings, index)
        candidate = (not h.in_contents, end - h.start, h.start, index)
        best = max(best, candidate) if best else candidate
    if best is None:
        return None
    heading = all_headings[best[3]]
    return Section(heading.item, heading.title, text[best[2] : best[2] + best[1]].strip())


def section_titles(text: str) -> list[str]:
    """Each item's heading once (the body's when there is one), for error messages."""
    seen: dict[tuple[str, str], Heading] = {}
    for h in headings(text):
        known = seen.get((h.part, h.item))
        if known is None or (known.in_contents and not h.in_contents):
            seen[(h.part, h.item)] = h
    return [h.title for h in seen.values()]


def page(text: str, offset: int, max_chars: int) -> tuple[str, int | None]:
    """A slice of at most max_chars from offset, cut at a line or word end when one is near.

    Returns the slice and the offset to continue from (None at the end of the text).
    """
    end = offset + max_chars
    if end >= len(text):
        return text[offset:], None
    floor = offset + max_chars * 3 // 4  # never give up more than a quarter of the page
    cut = text.rfind("\n", floor, end)
    if cut < 0:
        cut = text.rfind(" ", floor, end)
    end = cut + 1 if cut >= 0 else end
    return text[offset:end], end
