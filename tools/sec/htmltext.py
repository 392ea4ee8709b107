"""Filing HTML (plain or inline XBRL) to readable text with the standard library parser.

One line per paragraph or table row; table cells joined with " | ". What a reader never
sees is dropped: `<head>`, scripts, styles, the inline-XBRL header (`<ix:header>`, a wall of
hidden facts) and anything styled `display:none`.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["html_to_text", "looks_like_html", "tidy_lines"]

_BLOCK = frozenset(
    "p div br tr li ul ol h1 h2 h3 h4 h5 h6 table section hr center pre blockquote "  # noqa: SIM905
    "dt dd dl article header footer page".split()
)
_SKIP = frozenset({"script", "style", "head", "ix:header", "noscript", "template", "xml"})
_VOID = frozenset(
    "br hr img meta link input col area base wbr param source".split()  # noqa: SIM905
)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none", re.IGNORECASE)
_SPACES = re.compile(r"[ \t\r\f\v\u00a0\u2002\u2003\u2009\u200b]+")
# Currency signs and closing parts of a number live in their own cells in SEC tables;
# glued back to the number they belong to, "$ | 391,035 | )" reads as "$391,035)".
_LEADING_CELLS = frozenset({"$", "€", "£", "¥", "("})
_TRAILING_CELLS = frozenset({")", "%", ")%", "%)"})


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self._hidden_tag: str | None = None
        self._hidden_depth = 0
        self._table_depth = 0
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._hidden_tag is not None:
            self._hidden_depth += tag == self._hidden_tag and tag not in _VOID
            return
        style = next((v for k, v in attrs if k == "style" and v), "")
        if tag in _SKIP or _HIDDEN_STYLE.search(style):
            if tag not in _VOID:
                self._hidden_tag, self._hidden_depth = tag, 1
            return
        if tag == "table":
            self._table_depth += 1
            self._break()
        elif self._table_depth == 1 and tag == "tr":
            self._end_row()  # HTML 4 lets </tr> and </td> be left out
            self._row = []
        elif self._table_depth == 1 and tag in ("td", "th"):
            self._end_cell()
            self._cell = []
        elif tag in _BLOCK or tag in ("td", "th"):  # cells of a nested table: spaced apart
            self._break()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # `<br/>`, `<div/>`: nothing to enter, at most a line break.
        if self._hidden_tag is None and tag in _BLOCK and tag != "table":
            self._break()

    def handle_endtag(self, tag: str) -> None:
        if self._hidden_tag is not None:
            if tag == self._hidden_tag:
                self._hidden_depth -= 1
                if self._hidden_depth == 0:
                    self._hidden_tag = None
            return
        if tag == "table":
            if self._table_depth == 1:  # a nested table ends inside the outer row
                self._end_row()
            self._table_depth = max(0, self._table_depth - 1)
            self._break()
        elif self._table_depth == 1 and tag in ("td", "th"):
            self._end_cell()
        elif self._table_depth == 1 and tag == "tr":
            self._end_row()
        elif tag in _BLOCK:
            self._break()

    def handle_data(self, data: str) -> None:
        if self._hidden_tag is not None:
            return
        text = _SPACES.sub(" ", data.replace("\n", " "))
        if self._cell is not None:
            self._cell.append(text)
        elif self._row is not None:
            return  # stray text between cells is layout whitespace
        else:
            self.out.append(text)

    def _break(self) -> None:
        if self._cell is not None:
            self._cell.append(" ")
        elif self._row is None:
            self.out.append("\n")

    def _end_cell(self) -> None:
        if self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
        self._cell = None

    def _end_row(self) -> None:
        self._end_cell()
        if self._row is not None:
            line = join_cells(self._row)
            if line:
                self.out.append("\n" + line + "\n")
        self._row = None


def join_cells(cells: list[str]) -> str:
    """Non-empty cells joined with " | ", currency signs and closing brackets glued on."""
    merged: list[str] = []
    pending = ""
    for cell in (c for c in cells if c):
        if cell in _LEADING_CELLS:
            pending += cell
        elif cell in _TRAILING_CELLS and merged:
            merged[-1] += cell
        else:
            merged.append(pending + cell)
            pending = ""
    if pending:
        merged.append(pending)
    return " | ".join(merged)


def tidy_lines(text: str) -> str:
    """Strip every line, drop empty ones; paragraphs stay one per line."""
    lines = (line.strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def html_to_text(html: str) -> str:
    """Readable text of an HTML or inline-XBRL document."""
    parser = _Extractor()
    parser.feed(html)
    parser.close()
    return tidy_lines("".join(parser.out))


def looks_like_html(text: str) -> bool:
    head = text[:2000].lower()
    return any(tag in head for tag in ("<html", "<body", "<div", "<p>", "<table", "<font"))
