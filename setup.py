"""The gateway's modules on a run's path and its figure check compiled to C with mypyc when
the install can (`gateway/native.py` lists them and says why): compiled, a short run costs
about 7 % fewer instructions and the check a third less CPU. Everything else, and all
of them wherever no C compiler is at hand or `GATEWAY_PURE_PYTHON=1` is set, installs as
plain Python: the same source either way (`gateway.native` tells which is running and
never runs a stale build). The project's metadata is in pyproject.toml."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

from setuptools import setup  # type: ignore[import-untyped]
from setuptools.command.build_ext import build_ext  # type: ignore[import-untyped]


def _native() -> Any:
    """`gateway/native.py`, which checks a build at import, loaded by its path (it needs
    only the standard library; the gateway package's dependencies are not here): the
    build records what that check compares, made by the same code."""
    spec = importlib.util.spec_from_file_location("gateway_native", "gateway/native.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NATIVE = _native()
SOURCES = [str(NATIVE.source(name, Path("gateway"))) for name in NATIVE.MODULES]


class OptionalBuildExt(build_ext):  # type: ignore[misc]
    """A compile that fails leaves the Python source in charge, with a warning; one that
    works records what it was built from (`gateway/native.py` checks it)."""

    def run(self) -> None:
        target = Path("." if self.inplace else self.build_lib) / "gateway"
        try:
            super().run()
        except Exception as exc:  # no compiler, no headers: the pure-Python install
            print(f"not compiled ({exc}): the gateway runs as Python", file=sys.stderr)
            for built in NATIVE.compiled_files(target).values():  # no half a build
                built.unlink()
            return
        if self.extensions:
            target.mkdir(parents=True, exist_ok=True)
            record = NATIVE.source_hashes(Path("gateway"))
            (target / NATIVE.BUILT_FROM).write_text(json.dumps(record, indent=1))


METADATA = {"egg_info", "dist_info", "sdist"}
BUILDS = {"build", "build_ext", "bdist_wheel", "editable_wheel", "install", "develop"}


def native_modules() -> list[Any]:
    if os.environ.get(NATIVE.PURE_PYTHON) == "1":
        return []
    words = set(sys.argv[1:])
    if words & METADATA and not words & BUILDS:  # pip asks for the metadata first: no compile
        return []
    try:
        from mypyc.build import mypycify

        # No config file: the project's names plugins the build's environment has not.
        options = ["--config-file", "", "--ignore-missing-imports"]
        return mypycify([*options, *SOURCES], opt_level="3", group_name=NATIVE.GROUP)
    except (Exception, SystemExit) as exc:  # mypyc missing, or it refused the source
        print(f"not compiled ({exc}): the gateway runs as Python", file=sys.stderr)
        return []


setup(ext_modules=native_modules(), cmdclass={"build_ext": OptionalBuildExt})
