"""Which of the gateway's modules run compiled, and the guard that keeps a stale build from
running.

setup.py compiles `MODULES` to C with mypyc where the install can (a C compiler and
Python's headers): the code every run goes through (its start, the model call, each
relayed event, its end) that does no waiting, and the figure check at a run's end.
Compiled, they cost a run and an event fewer instructions and the check a third less CPU
(bench/notes.md).

A build records a hash of each module's source (`BUILT_FROM`). At import (`gateway`'s
`__init__` calls `guard()` before anything else of the package loads) every one of these
modules loads from its `.py` instead when any compiled one was built from other source, or
from no record, or when `GATEWAY_PURE_PYTHON=1`: compiled together they call each other
directly, so they run all compiled or none. An edit always takes effect; the next `make`
compiles it again.

Only the standard library here: setup.py loads this file by its path, before the package's
dependencies are installed.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

PACKAGE = "gateway"
ROOT = Path(__file__).parent
"""The package's directory (`gateway/`)."""

RUN_PATH = (
    "events",
    "sse",
    "ops.metrics",
    "ops.observe",
    "ops.telemetry",
    "providers.anthropic.stream",
    "runs.wiring",
    "store.eventlog",
)
"""The run's path that does no waiting: the translator, the framing and the log every
relayed event goes through, and a run's metrics, spans and wiring; chosen by the Python
opcodes a short run spends in each (`python -m bench.perrun`). The modules that await
stay Python: compiled, a `finally` that awaits after an exception caught inside the
await re-raised the outer one (a reader of a run on another worker lost its `error`
event when Redis went), and their cancellation paths are where that matters most."""


def _figures() -> tuple[str, ...]:
    found = (ROOT / "figures").glob("*.py")
    return tuple(sorted(f"figures.{p.stem}" for p in found if p.name != "__init__.py"))


MODULES = RUN_PATH + _figures()
"""Compiled together (names within the package)."""
GROUP = "gateway_native"
"""The mypyc group they are compiled as: its shared library is `GROUP__mypyc.*.so`."""
BUILT_FROM = "_built_from.json"
"""Written by the build in the package's directory: module -> sha256 of its source."""
PURE_PYTHON = "GATEWAY_PURE_PYTHON"
"""Set to 1: the source runs even where a build is (and setup.py builds none)."""


def source(name: str, root: Path = ROOT) -> Path:
    return root.joinpath(*name.split(".")).with_suffix(".py")


def source_hashes(root: Path = ROOT) -> dict[str, str]:
    return {name: hashlib.sha256(source(name, root).read_bytes()).hexdigest() for name in MODULES}


def compiled_files(root: Path = ROOT) -> dict[str, Path]:
    """Each module's compiled file, where there is one."""
    found = {}
    for name in MODULES:
        stem = source(name, root).with_suffix("")
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            built = stem.with_name(stem.name + suffix)
            if built.exists():
                found[name] = built
                break
    return found


def stale(root: Path = ROOT) -> list[str]:
    """The compiled modules not built from their source as it is now."""
    compiled = compiled_files(root)
    if not compiled:
        return []
    try:
        built = json.loads((root / BUILT_FROM).read_text())
    except (OSError, ValueError):
        built = {}
    now = source_hashes(root)
    return [name for name in compiled if built.get(name) != now[name]]


class _FromSource(importlib.abc.MetaPathFinder):
    """Loads the compiled modules from their `.py` files, never from a build."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.partition(".")
        if package != PACKAGE or name not in MODULES:
            return None
        return importlib.util.spec_from_file_location(fullname, source(name))


def guard() -> list[str]:
    """Before the package imports any of `MODULES`: if a compiled one is stale (or the
    environment asks for the source), all of them load from source. The stale ones."""
    old = stale()
    wanted = old or os.environ.get(PURE_PYTHON) == "1"
    if wanted and not any(isinstance(f, _FromSource) for f in sys.meta_path):
        sys.meta_path.insert(0, _FromSource())
    return old


def running_compiled(name: str) -> bool:
    """Whether module `name` (within the package), as imported, is the compiled one."""
    module = sys.modules.get(f"{PACKAGE}.{name}")
    return module is not None and not str(getattr(module, "__file__", "")).endswith(".py")


if __name__ == "__main__":  # the Makefile's list of what a build depends on
    print(" ".join(str(source(name, Path(PACKAGE))) for name in MODULES))
