"""The demo model and the gateway stay apart, and the linter is what keeps them apart: the
demo imports nothing of the gateway, and only gateway/providers/configured.py imports the
demo, lazily."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAZY = (
    "def start() -> object:\n"
    "    from demo_model import create_demo_app\n\n    return create_demo_app\n"
)


def lint_codes(path: str, source: str) -> set[str]:
    """The TID rules ruff reports for `source` as if it were the file at `path`."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--stdin-filename", path, "--select", "TID",
         "--output-format", "concise", "-"],
        input=source, capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    return {part.split()[0] for part in done.stdout.split(": ")[1:] if part[:3] == "TID"}


@pytest.mark.parametrize(
    ("path", "source", "codes"),
    [
        ("demo_model/probe.py", "from gateway.settings import Settings\n", {"TID251"}),
        ("demo_model/probe.py", "import gateway\n", {"TID251"}),
        ("demo_model/probe.py", "from demo_model.fmt import money\n", set()),
        ("gateway/probe.py", "from demo_model import create_demo_app\n", {"TID251", "TID253"}),
        ("tools/probe.py", "import demo_model.server\n", {"TID251", "TID253"}),
        ("gateway/providers/configured.py", "from demo_model import create_demo_app\n", {"TID253"}),
        ("gateway/providers/configured.py", LAZY, set()),
    ],
)
def test_the_linter_enforces_the_boundary(path: str, source: str, codes: set[str]) -> None:
    assert lint_codes(path, source) == codes


def test_the_demo_imports_nothing_of_the_gateway() -> None:
    sources = "\n".join(p.read_text("utf-8") for p in (ROOT / "demo_model").glob("*.py"))
    assert "from gateway" not in sources and "import gateway" not in sources
