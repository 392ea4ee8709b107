"""Starting, pinning, probing and stopping the bench's processes.

Systems under test (gateway, relays) are pinned to one core, the upstream, the load
client and this orchestrator to another, when the machine lets this process use two.
Children get a clean environment: no `ANTHROPIC_*`, `GATEWAY_*`, `OTEL_*`, `REDIS_URL`...
so nothing outside the bench configures them.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import aiohttp

from bench.common import cpu_s, rss_kb

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "bench" / "results"
_DROPPED = ("ANTHROPIC_", "GATEWAY_", "SDK_", "OTEL_", "REDIS_", "SEC_", "SEARCH_", "EXA_")


@dataclass(frozen=True)
class Cores:
    server: frozenset[int] | None
    load: frozenset[int] | None
    allowed: frozenset[int]

    @classmethod
    def plan(cls) -> Cores:
        allowed = sorted(os.sched_getaffinity(0))
        if len(allowed) < 2:
            return cls(None, None, frozenset(allowed))
        return cls(frozenset({allowed[1]}), frozenset({allowed[0]}), frozenset(allowed))

    def describe(self) -> str:
        if self.server is None or self.load is None:
            return "not pinned (only one core available)"
        return (
            f"system under test on core {min(self.server)}; upstream, load client and "
            f"orchestrator on core {min(self.load)} (`os.sched_setaffinity`)"
        )


def child_env(root: Path = ROOT) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)}
    for name in ("REDIS_URL", "HOST", "PORT"):
        env.pop(name, None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    return env


@contextlib.contextmanager
def source_tree(rev: str) -> Iterator[Path | None]:
    """This repository's files at `rev` in a temporary folder (`git archive`), removed on
    exit; None when git or the commit is not here (a shallow clone)."""
    with tempfile.TemporaryDirectory(prefix="bench-tree-") as folder:
        try:
            done = subprocess.run(
                ["git", "-C", str(ROOT), "archive", "--format=tar", rev],
                capture_output=True, check=True, timeout=60,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            yield None
            return
        with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
            archive.extractall(folder, filter="data")
        yield Path(folder)


def _log_file(name: str) -> BinaryIO:
    LOGS.mkdir(parents=True, exist_ok=True)
    return (LOGS / f"{name}.log").open("ab")


def pin(pid: int, cores: frozenset[int] | None) -> None:
    if cores is not None:
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(pid, cores)


class Proc:
    """A child that prints `READY <port>` once it listens on 127.0.0.1."""

    def __init__(self, name: str, process: asyncio.subprocess.Process, port: int) -> None:
        self.name = name
        self.process = process
        self.port = port

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    async def start(
        cls, name: str, args: list[str], cores: frozenset[int] | None, root: Path = ROOT,
        wrapper: tuple[str, ...] = (), ready_s: float = 60,
    ) -> Proc:  # fmt: skip
        """`python -m *args` from the source tree at `root` (another revision's, say),
        run by `wrapper` if given (valgrind, say: it keeps the pid)."""
        with _log_file(name) as log:
            process = await asyncio.create_subprocess_exec(
                *wrapper,
                sys.executable,
                "-m",
                *args,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                env=child_env(root),
                cwd=root,
            )
        pin(process.pid, cores)
        assert process.stdout is not None
        try:
            line = await asyncio.wait_for(process.stdout.readline(), ready_s)
        except TimeoutError:
            process.kill()
            raise RuntimeError(f"{name} did not start; see {LOGS / name}.log") from None
        if not line.startswith(b"READY "):
            raise RuntimeError(f"{name} did not start: {line!r}; see {LOGS / name}.log")
        return cls(name, process, int(line.split()[1]))

    async def stats(self, session: aiohttp.ClientSession, reset: bool = False) -> dict[str, Any]:
        path = "/stats" if self.name == "upstream" else "/_bench/stats"
        async with session.get(self.url + path, params={"reset": "1" if reset else "0"}) as r:
            data: dict[str, Any] = await r.json(content_type=None)
            return data

    def rss_kb(self) -> int:
        return rss_kb(self.pid)

    def cpu_s(self) -> float:
        return cpu_s(self.pid)

    async def stop(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(self.process.wait(), 15)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()


async def run_load(spec: dict[str, Any], cores: frozenset[int] | None) -> dict[str, Any]:
    """One load-client process; its JSON result."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.load",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(),
        cwd=ROOT,
    )
    pin(process.pid, cores)
    limit = float(spec.get("deadline_s", 60)) + float(spec.get("ramp_s", 0)) + 30
    try:
        out, err = await asyncio.wait_for(process.communicate(json.dumps(spec).encode()), limit)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise RuntimeError("the load client did not finish in time") from None
    if process.returncode != 0:
        raise RuntimeError(f"load client failed: {err.decode()[-2000:]}")
    result: dict[str, Any] = json.loads(out)
    return result
