"""The compiled build (setup.py, mypyc; `gateway.native` lists its modules): used where it
was built from the source as it is, never when the source changed since; the same answers
either way."""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gateway
from gateway import figures, native

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
INDEX = "figures.index"
LOG = "store.eventlog"


def _package(tmp_path: Path, compiled: tuple[str, ...]) -> Path:
    """A copy of the compiled modules' sources, with stand-in builds for `compiled`."""
    for name in native.MODULES:
        copy = native.source(name, tmp_path)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(native.source(name), copy)
    for name in compiled:
        stem = native.source(name, tmp_path).with_suffix("")
        stem.with_name(stem.name + SUFFIX).write_bytes(b"")
    return tmp_path


def test_the_run_path_and_the_figure_check_are_listed() -> None:
    assert {LOG, "providers.anthropic.stream", INDEX, "figures.check"} <= set(native.MODULES)
    assert all(native.source(name).exists() for name in native.MODULES)


def test_a_build_of_the_source_as_it_is_is_not_stale(tmp_path: Path) -> None:
    root = _package(tmp_path, (INDEX, LOG))
    (root / native.BUILT_FROM).write_text(json.dumps(native.source_hashes(root)))
    assert native.stale(root) == []


def test_an_edited_module_or_a_build_without_its_record_is_stale(tmp_path: Path) -> None:
    root = _package(tmp_path, (INDEX, LOG))
    (root / native.BUILT_FROM).write_text(json.dumps(native.source_hashes(root)))
    with native.source(LOG, root).open("a") as source:
        source.write("# edited\n")
    assert native.stale(root) == [LOG]
    (root / native.BUILT_FROM).unlink()
    assert sorted(native.stale(root)) == sorted([INDEX, LOG])


def test_no_build_is_never_stale(tmp_path: Path) -> None:
    assert native.stale(_package(tmp_path, ())) == []


def test_a_stale_build_is_passed_over_for_the_source() -> None:
    finder = native._FromSource()
    for name in (INDEX, LOG):
        spec = finder.find_spec(f"gateway.{name}", None)
        assert spec is not None and spec.origin == str(native.source(name))
    assert finder.find_spec("gateway.native", None) is None
    assert finder.find_spec("gateway.http.app", None) is None
    assert finder.find_spec("tools.store.eventlog", None) is None


def _copy_with_broken_build(tmp_path: Path) -> Path:
    """A copy of the package beside a build of files that are not modules."""
    root = tmp_path / "copy"
    shutil.copytree(Path(gateway.__file__).parent, root / "gateway")
    for name in native.MODULES:
        stem = native.source(name, root / "gateway").with_suffix("")
        stem.with_name(stem.name + SUFFIX).write_bytes(b"not a module")
    return root


def test_an_edit_takes_effect_before_the_next_build(tmp_path: Path) -> None:
    """A process that imports the package while a compiled module is stale runs every
    module from source (checked in a fresh interpreter against a copy of the package)."""
    root = _copy_with_broken_build(tmp_path)
    (root / "gateway" / native.BUILT_FROM).write_text(json.dumps({}))
    probe = (
        "import gateway, gateway.figures as f, gateway.store.eventlog as e;"
        "print(f.COMPILED, sorted(gateway.STALE_BUILD) == sorted(gateway.native.MODULES),"
        " e.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[:2] == ["False", "True"] and out[2].endswith("eventlog.py")


def test_the_environment_can_ask_for_the_source(tmp_path: Path) -> None:
    """GATEWAY_PURE_PYTHON=1 runs the source beside a build that is not stale."""
    root = _copy_with_broken_build(tmp_path)
    record = native.source_hashes(root / "gateway")
    (root / "gateway" / native.BUILT_FROM).write_text(json.dumps(record))
    probe = "import gateway, gateway.figures as f; print(f.COMPILED, gateway.STALE_BUILD)"
    env = {**os.environ, native.PURE_PYTHON: "1"}
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, env=env, capture_output=True, text=True
    )
    assert out.stdout.split() == ["False", "[]"], out.stderr
    env.pop(native.PURE_PYTHON)
    broken = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, env=env, capture_output=True, text=True
    )
    assert broken.returncode != 0  # without it, the (here broken) build is what loads


def test_the_install_compiled_what_it_lists_where_it_could() -> None:
    """`make install` compiles the listed modules where a C compiler is (CI's machines
    have one); elsewhere this is a skip, which CI turns into a failure."""
    if not figures.COMPILED:
        pytest.skip(f"the gateway runs as Python here (stale: {gateway.STALE_BUILD})")
    assert native.stale() == []
    assert all(native.running_compiled(name) for name in native.MODULES if name in _imported())


def _imported() -> set[str]:
    return {name.removeprefix("gateway.") for name in sys.modules if name.startswith("gateway.")}
