"""The gateway's packages are layers, and each imports only the layers below it:

    core (gateway/*.py) -> providers, store -> ops -> runs -> access -> http -> __main__

`providers` and `store` stand side by side and import neither each other nor anything above.
Imports made only for type checking count too (they are dependencies all the same), and
the modules' import graph, type-only imports left out, has no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "gateway"
RANK = {"core": 0, "providers": 1, "store": 1, "ops": 2, "runs": 3, "access": 4, "http": 5}
RANK["batches"] = 4  # beside access (neither imports the other): runs advanced in rounds


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str:
    parts = module.split(".")
    if module == "gateway.__main__":
        return "main"
    if len(parts) > 2 and parts[1] in RANK:
        return parts[1]
    return parts[1] if len(parts) == 2 and parts[1] in RANK else "core"


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(path: Path) -> list[tuple[str, bool]]:
    """(imported gateway module, only for type checking) for every import in the file."""
    tree = ast.parse(path.read_text())
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _type_checking(node):
            typing_only.update(id(inner) for inner in ast.walk(node))
    found: list[tuple[str, bool]] = []
    known = {module_name(p) for p in ROOT.rglob("*.py")}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from gateway.x import y` names module gateway.x.y when y is a module
            names = [
                f"{node.module}.{alias.name}"
                if f"{node.module}.{alias.name}" in known
                else node.module
                for alias in node.names
            ]
        else:
            continue
        found += [(name, id(node) in typing_only) for name in names if name.startswith("gateway")]
    return found


MODULES = {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def rank(layer_name: str) -> int:
    return 6 if layer_name == "main" else RANK[layer_name]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_only_layers_below(module: str) -> None:
    mine = layer(module)
    wrong = []
    for imported, _ in imports(MODULES[module]):
        theirs = layer(imported)
        if imported == "gateway" or theirs == mine:
            continue
        sideways = {mine, theirs} == {"providers", "store"}
        if sideways or rank(theirs) > rank(mine):
            wrong.append(f"{imported} ({theirs})")
    assert not wrong, f"{module} ({mine}) imports from above or beside it: {wrong}"


def test_no_import_cycles() -> None:
    graph = {
        module: {name for name, typing_only in imports(path) if not typing_only and name in MODULES}
        for module, path in MODULES.items()
    }
    done: set[str] = set()
    stack: list[str] = []

    def visit(module: str) -> None:
        if module in stack:
            cycle = [*stack[stack.index(module) :], module]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if module in done:
            return
        stack.append(module)
        for imported in sorted(graph[module]):
            # a package's __init__ runs before its modules: importing the package is no edge back
            if not module.startswith(imported + "."):
                visit(imported)
        stack.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The check itself: an import, and one made only for type checking, are both seen."""
    source = tmp_path / "probe.py"
    source.write_text(
        "from gateway.http import keys\nif TYPE_CHECKING:\n    import gateway.ops.metrics\n"
    )
    assert imports(source) == [("gateway.http.keys", False), ("gateway.ops.metrics", True)]
    assert layer("gateway.http.keys") == "http" and layer("gateway.events") == "core"
    assert layer("gateway.store.redis.runs") == "store" and layer("gateway.__main__") == "main"


def third_party_imports(path: Path) -> set[str]:
    """The top-level names of every module the file imports (type-only imports too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("module", sorted(MODULES))
def test_only_the_store_imports_redis(module: str) -> None:
    """Redis (and SQLite) are the store's business: the rest of the gateway reaches them
    through the interfaces of `gateway/store` (`store/configured.py` hands them out)."""
    if layer(module) == "store":
        return
    clients = third_party_imports(MODULES[module]) & {"redis", "sqlite3"}
    assert not clients, f"{module} imports {clients}: only gateway/store/ may"


def test_the_check_sees_a_redis_import(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text("import redis.asyncio as redis\nfrom redis.exceptions import RedisError\n")
    assert third_party_imports(source) == {"redis"}


PROVIDER_SPECIFIC = ("gateway.providers.anthropic", "gateway.providers.openai")
# runs/ modules that serve one provider's own API by design, with why.
ONE_PROVIDER = {
    "gateway.runs.planner": "plans a run from the Messages API's model records",
    "gateway.runs.files": "reads a turn's files through the Anthropic Files API",
}


def provider_specific(imported: str) -> bool:
    return any(imported == name or imported.startswith(name + ".") for name in PROVIDER_SPECIFIC)


RUNS = sorted(m for m in MODULES if layer(m) == "runs" and m not in ONE_PROVIDER)


@pytest.mark.parametrize("module", RUNS)
def test_runs_need_no_one_provider(module: str) -> None:
    """The loop and the run drivers see a model backend only through `providers/base.py`
    (and `plan.py`, `seam.py` beside it), never one provider's package."""
    assert "gateway.runs.loop" in RUNS
    found = [name for name, _ in imports(MODULES[module]) if provider_specific(name)]
    assert not found, f"{module} imports one provider's modules: {found}"


def test_the_check_sees_a_provider_import(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text("from gateway.providers.anthropic.request import plan_run\n")
    assert [provider_specific(name) for name, _ in imports(source)] == [True]
    assert not provider_specific("gateway.providers.plan")
    assert provider_specific("gateway.providers.openai")
