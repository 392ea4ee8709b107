"""Whether the figure check runs compiled (setup.py builds its modules with mypyc where it
can), and the guard that keeps a stale build from running: a build records a hash of each
module's source (`BUILT_FROM`); a module whose source changed since, or a build with no
record, is loaded from its source instead, so an edit always takes effect."""

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

HERE = Path(__file__).parent
PACKAGE = __name__.rpartition(".")[0]
MODULES = tuple(
    sorted(p.stem for p in HERE.glob("*.py") if p.name not in ("__init__.py", "native.py"))
)
BUILT_FROM = "_built_from.json"
"""Written by the build beside the compiled modules: module -> sha256 of its source."""


def source_hashes(directory: Path = HERE) -> dict[str, str]:
    return {
        name: hashlib.sha256((directory / f"{name}.py").read_bytes()).hexdigest()
        for name in MODULES
    }


def compiled_files(directory: Path = HERE) -> dict[str, Path]:
    """Each module's compiled file, where there is one."""
    found = {}
    for name in MODULES:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            if (directory / f"{name}{suffix}").exists():
                found[name] = directory / f"{name}{suffix}"
                break
    return found


def stale(directory: Path = HERE) -> list[str]:
    """The compiled modules not built from their source as it is now."""
    compiled = compiled_files(directory)
    if not compiled:
        return []
    try:
        built = json.loads((directory / BUILT_FROM).read_text())
    except (OSError, ValueError):
        built = {}
    now = source_hashes(directory)
    return [name for name in compiled if built.get(name) != now[name]]


class _FromSource(importlib.abc.MetaPathFinder):
    """Loads the package's modules from their `.py` files, never a compiled build."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.rpartition(".")
        if package != PACKAGE or name not in MODULES:
            return None
        return importlib.util.spec_from_file_location(fullname, HERE / f"{name}.py")


PURE_PYTHON = "GATEWAY_PURE_PYTHON"
"""Set to 1: the source runs even where a build is (and setup.py builds none)."""


def guard() -> list[str]:
    """Before the package imports its modules: if any compiled one is stale (or the
    environment asks for the source), every one loads from source (compiled together,
    they call each other directly)."""
    old = stale()
    wanted = old or os.environ.get(PURE_PYTHON) == "1"
    if wanted and not any(isinstance(f, _FromSource) for f in sys.meta_path):
        sys.meta_path.insert(0, _FromSource())
    return old


def running_compiled() -> bool:
    """Whether the figure check's modules in use are the compiled ones."""
    module = sys.modules.get(f"{PACKAGE}.index")
    return module is not None and not str(getattr(module, "__file__", "")).endswith(".py")
