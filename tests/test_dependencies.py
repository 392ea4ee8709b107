"""Every third-party module the code imports comes from a distribution pyproject.toml
declares: the service's (gateway/, tools/, demo_model/) among `dependencies`, the tests'
among those or the `dev` extras. A module that is only there because another package
depends on it works until that package stops depending on it."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from importlib.metadata import distribution, packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIRST_PARTY = {"gateway", "tools", "demo_model", "tests", "bench"}
RUNTIME = ("gateway", "tools", "demo_model")


def canonical(name: str) -> str:
    """A distribution's name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(*extras: str) -> set[str]:
    """The distributions pyproject.toml names in `dependencies` and the given extras."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in extras:
        specs += project["optional-dependencies"][extra]
    names = (re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", spec) for spec in specs)
    return {canonical(name.group()) for name in names if name}


def imported(source: str) -> Iterator[str]:
    """Absolute imports, as dotted names (`from a import b` gives `a.b`: b may be a module,
    which matters where a namespace is shared by several distributions)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


@cache
def top_level() -> Mapping[str, list[str]]:
    return packages_distributions()  # reads every distribution's file list: once


@cache
def modules_of(dist: str) -> frozenset[str]:
    """Dotted names of the modules and packages a distribution installs."""
    found = set()
    for file in distribution(dist).files or ():
        parts = file.parts
        if parts and parts[-1].endswith(".py"):
            name = parts[:-1] if parts[-1] == "__init__.py" else (*parts[:-1], parts[-1][:-3])
            found.add(".".join(name))
    return frozenset(found)


def owners(module: str) -> set[str]:
    """The distributions a module comes from: one, unless its top-level name is a namespace
    shared by several (opentelemetry): then the one holding its longest known prefix."""
    dists = top_level().get(module.split(".")[0], [])
    if len(set(dists)) <= 1:
        return {canonical(d) for d in dists}
    parts = module.split(".")
    for end in range(len(parts), 1, -1):
        prefix = ".".join(parts[:end])
        holders = {canonical(d) for d in dists if prefix in modules_of(d)}
        if holders:
            return holders
    return {canonical(d) for d in dists}


def undeclared(modules: Iterable[str], allowed: set[str]) -> dict[str, set[str]]:
    """Third-party modules whose distribution is not among `allowed` (a module no installed
    distribution provides is reported with no owner)."""
    missing: dict[str, set[str]] = {}
    for module in modules:
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top in FIRST_PARTY:
            continue
        found = owners(module)
        if not found & allowed:
            missing[module] = found
    return missing


def imports_under(*folders: str) -> dict[str, str]:
    """Every absolute import under the folders: module -> a file importing it."""
    found: dict[str, str] = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for module in imported(path.read_text()):
                found.setdefault(module, str(path.relative_to(ROOT)))
    return found


def test_the_service_imports_only_what_it_declares() -> None:
    found = imports_under(*RUNTIME)
    missing = undeclared(found, declared())
    assert not missing, {module: (found[module], owners) for module, owners in missing.items()}


def test_the_tests_import_only_what_is_declared_for_them() -> None:
    found = imports_under("tests")
    missing = undeclared(found, declared("dev"))
    assert not missing, {module: (found[module], owners) for module, owners in missing.items()}


def test_an_undeclared_import_is_found() -> None:
    source = "import yarl\nfrom opentelemetry import trace\nfrom opentelemetry.sdk import trace\n"
    modules = list(imported(source))
    assert undeclared(modules, {"opentelemetry-sdk"}) == {
        "yarl": {"yarl"},
        "opentelemetry.trace": {"opentelemetry-api"},
    }
    assert undeclared(["no_such_module_anywhere"], set()) == {"no_such_module_anywhere": set()}
    assert undeclared(["json", "gateway.ops.audit"], set()) == {}
