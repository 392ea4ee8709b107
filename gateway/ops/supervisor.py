"""`python -m gateway --workers N`: N worker processes serving one port, kept alive.

Each worker is a whole `python -m gateway --worker I` binding the port with SO_REUSEPORT,
so the kernel spreads connections over them and no process relays bytes for another. The
supervisor only starts workers, restarts one that dies (after a pause that doubles while
they keep dying young), and on SIGTERM or SIGINT asks every worker to stop the way a single
gateway stops: each ends its runs with their terminal events.

A worker that cannot start (a bad key file, a port taken) would fail the same way forever:
after `boot_failures` (GATEWAY_WORKER_BOOT_FAILURES) failed starts in a row of one worker
within `BOOT_WINDOW_S`, the supervisor stops every worker and exits with status 1, logging
the worker's own error.
Each worker gets a path in the supervisor's private directory (`gateway.ops.fleet`): there it
says it got as far as serving, or why it failed, and the workers share their metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from gateway.ops.fleet import Member, bury

log = logging.getLogger(__name__)

BACKOFF_MIN_S = 0.5
BACKOFF_MAX_S = 30.0
STABLE_S = 30.0  # a worker that lived this long died of something new: restart at once
STOP_TIMEOUT_S = 30.0  # past this a worker that ignores SIGTERM is killed
BOOT_WINDOW_S = 600.0  # failed starts in a row of one worker count within this


class Supervisor:
    def __init__(self, workers: int, *, boot_failures: int = 5) -> None:
        self.workers = workers
        self.boot_failures = boot_failures
        self._stopping = asyncio.Event()
        self._procs: dict[int, asyncio.subprocess.Process] = {}
        self._gave_up: str | None = None  # why the supervisor stopped on its own
        self._started = 0

    async def run(self) -> int:
        self._dir = Path(tempfile.mkdtemp(prefix="research-gateway-"))  # private: mode 0700
        try:
            await self._run()
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)
        return 1 if self._gave_up else 0

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stopping.set)
        keepers = [asyncio.create_task(self._keep(index)) for index in range(self.workers)]
        await self._stopping.wait()
        log.info("supervisor: stopping %d workers", len(self._procs))
        for proc in self._procs.values():
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        _, late = await asyncio.wait(keepers, timeout=STOP_TIMEOUT_S)
        for proc in self._procs.values():
            if proc.returncode is None:
                log.warning("supervisor: worker pid %d ignored SIGTERM; killing it", proc.pid)
                proc.kill()
        await asyncio.gather(*late, return_exceptions=True)

    async def _keep(self, index: int) -> None:
        """Run worker `index` until the supervisor stops, restarting it when it dies."""
        backoff = BACKOFF_MIN_S
        failed_starts: list[float] = []  # when this worker last failed to start, in a row
        while not self._stopping.is_set():
            started = time.monotonic()
            self._started += 1
            member = Member(self._dir / f"worker-{index}-{self._started}")
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "gateway",
                "--worker",
                str(index),
                "--supervisor",
                str(os.getpid()),
                "--fleet-member",
                str(member.path),
            )
            self._procs[index] = proc
            code = await proc.wait()
            if self._stopping.is_set():
                return
            backoff = BACKOFF_MIN_S if time.monotonic() - started > STABLE_S else backoff
            if member.booted():
                failed_starts.clear()
                log.warning(
                    "supervisor: worker %d (pid %d) exited with %s; restarting in %.1f s",
                    index,
                    proc.pid,
                    code,
                    backoff,
                )
            else:
                why = member.failure() or f"exit status {code}"
                now = time.monotonic()
                failed_starts = [t for t in failed_starts if now - t < BOOT_WINDOW_S] + [now]
                if len(failed_starts) >= self.boot_failures:
                    self._give_up(
                        f"worker {index} failed to start {len(failed_starts)} times in a row "
                        f"within {BOOT_WINDOW_S:g} s; the last time: {why}"
                    )
                    return
                log.warning(
                    "supervisor: worker %d (pid %d) failed to start (%s); restarting in %.1f s",
                    index,
                    proc.pid,
                    why,
                    backoff,
                )
            bury(member)  # its numbers into the fleet's one file of dead workers
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(backoff):
                    await self._stopping.wait()
            backoff = min(backoff * 2, BACKOFF_MAX_S)

    def _give_up(self, why: str) -> None:
        if self._gave_up is None:
            self._gave_up = why
            log.error("supervisor: stopping all workers and exiting: %s", why)
            self._stopping.set()


def supervise(workers: int, *, boot_failures: int = 5) -> int:
    """Run the supervisor until SIGTERM (or workers that cannot start); its exit status."""
    return asyncio.run(Supervisor(workers, boot_failures=boot_failures).run())


def die_with_supervisor(supervisor_pid: int) -> None:
    """In a worker: get SIGTERM when the supervisor dies, even by SIGKILL, so no worker is
    left serving the port alone (Linux; elsewhere a no-op)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
    if os.getppid() != supervisor_pid:  # it died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)
