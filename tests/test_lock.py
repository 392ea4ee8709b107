"""The lock files pin every dependency pyproject.toml names, at a version its range
admits, each with hashes: `make run` and `make check` install from them (`make lock`
refreshes them)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^ \\]+)", re.M)


def pins(name: str) -> dict[str, Version]:
    text = (ROOT / name).read_text()
    return {canonicalize_name(n): Version(v) for n, v in PIN.findall(text)}


def requirements(extra: str | None) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = project["dependencies"] + (project["optional-dependencies"][extra] if extra else [])
    return [Requirement(line) for line in listed]


@pytest.mark.parametrize(
    ("lock", "extra"), [("requirements.lock", None), ("requirements-dev.lock", "dev")]
)
def test_every_dependency_is_pinned_within_its_range(lock: str, extra: str | None) -> None:
    pinned = pins(lock)
    for requirement in requirements(extra):
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{requirement} is not in {lock}: run `make lock`"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"{lock} pins {name}=={pinned[name]}, outside {requirement}: run `make lock`"
        )


@pytest.mark.parametrize("lock", ["requirements.lock", "requirements-dev.lock"])
def test_every_pin_has_a_hash(lock: str) -> None:
    blocks = re.split(r"\n(?=[A-Za-z0-9_.-]+==)", (ROOT / lock).read_text())
    unhashed = [b.split()[0] for b in blocks if "==" in b.split()[0] and "--hash=" not in b]
    assert not unhashed, f"pinned without a hash in {lock}: {unhashed}"
