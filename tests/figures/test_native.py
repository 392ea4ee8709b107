"""The figure check's compiled build (setup.py, mypyc): used where it was built from the
source as it is, never when the source changed since; the same answers either way."""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gateway import figures
from gateway.figures import native

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _package(tmp_path: Path, compiled: tuple[str, ...]) -> Path:
    """A copy of the package's sources, with stand-in compiled files for `compiled`."""
    for name in native.MODULES:
        shutil.copy(native.HERE / f"{name}.py", tmp_path / f"{name}.py")
    for name in compiled:
        (tmp_path / f"{name}{SUFFIX}").write_bytes(b"")
    return tmp_path


def test_a_build_of_the_source_as_it_is_is_not_stale(tmp_path: Path) -> None:
    directory = _package(tmp_path, ("index", "check"))
    (directory / native.BUILT_FROM).write_text(json.dumps(native.source_hashes(directory)))
    assert native.stale(directory) == []


def test_an_edited_module_or_a_build_without_its_record_is_stale(tmp_path: Path) -> None:
    directory = _package(tmp_path, ("index", "check"))
    (directory / native.BUILT_FROM).write_text(json.dumps(native.source_hashes(directory)))
    with (directory / "index.py").open("a") as source:
        source.write("# edited\n")
    assert native.stale(directory) == ["index"]
    (directory / native.BUILT_FROM).unlink()
    assert sorted(native.stale(directory)) == ["check", "index"]


def test_no_build_is_never_stale(tmp_path: Path) -> None:
    assert native.stale(_package(tmp_path, ())) == []


def test_a_stale_build_is_passed_over_for_the_source() -> None:
    spec = native._FromSource().find_spec("gateway.figures.index", None)
    assert spec is not None and spec.origin == str(native.HERE / "index.py")
    assert native._FromSource().find_spec("gateway.figures.native", None) is None
    assert native._FromSource().find_spec("gateway.http.app", None) is None


def test_an_edit_takes_effect_before_the_next_build(tmp_path: Path) -> None:
    """A process that imports the package while a compiled module is stale runs every
    module from source (checked in a fresh interpreter against a copy of the package)."""
    root = tmp_path / "copy"
    shutil.copytree(Path(figures.__file__).parents[2] / "gateway", root / "gateway")
    figures_dir = root / "gateway" / "figures"
    for name in native.MODULES:
        (figures_dir / f"{name}{SUFFIX}").write_bytes(b"not a module")  # a broken build
    (figures_dir / native.BUILT_FROM).write_text(json.dumps({}))
    probe = (
        "import gateway.figures as f, gateway.figures.index as i;"
        "print(f.COMPILED, sorted(f.STALE_BUILD) == sorted(f.native.MODULES), i.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[:2] == ["False", "True"] and out[2].endswith("index.py")


def test_the_environment_can_ask_for_the_source(tmp_path: Path) -> None:
    """GATEWAY_PURE_PYTHON=1 runs the source beside a build that is not stale."""
    root = tmp_path / "copy"
    shutil.copytree(Path(figures.__file__).parents[2] / "gateway", root / "gateway")
    figures_dir = root / "gateway" / "figures"
    for name in native.MODULES:
        (figures_dir / f"{name}{SUFFIX}").write_bytes(b"not a module")
    (figures_dir / native.BUILT_FROM).write_text(json.dumps(native.source_hashes(figures_dir)))
    probe = "import gateway.figures as f; print(f.COMPILED, f.STALE_BUILD)"
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


def test_the_install_compiled_the_check_where_it_could() -> None:
    """`make install` compiles the check where a C compiler is (CI's machines have one);
    elsewhere this is a skip, which CI turns into a failure."""
    if not figures.COMPILED:
        pytest.skip(f"the figure check runs as Python here (stale: {figures.STALE_BUILD})")
    assert native.stale() == []
