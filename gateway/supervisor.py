"""`python -m gateway --workers N`: N worker processes serving one port, kept alive.

Each worker is a whole `python -m gateway --worker I` binding the port with SO_REUSEPORT,
so the kernel spreads connections over them and no process relays bytes for another. The
supervisor only starts workers, restarts one that dies (after a pause that doubles while
they keep dying young), and on SIGTERM or SIGINT asks every worker to stop the way a single
gateway stops: each ends its runs with their terminal events.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time

log = logging.getLogger(__name__)

BACKOFF_MIN_S = 0.5
BACKOFF_MAX_S = 30.0
STABLE_S = 30.0  # a worker that lived this long died of something new: restart at once
STOP_TIMEOUT_S = 30.0  # past this a worker that ignores SIGTERM is killed


class Supervisor:
    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._stopping = asyncio.Event()
        self._procs: dict[int, asyncio.subprocess.Process] = {}

    async def run(self) -> int:
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
        return 0

    async def _keep(self, index: int) -> None:
        """Run worker `index` until the supervisor stops, restarting it when it dies."""
        backoff = BACKOFF_MIN_S
        while not self._stopping.is_set():
            started = time.monotonic()
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "gateway", "--worker", str(index),
                "--supervisor", str(os.getpid()),
            )  # fmt: skip
            self._procs[index] = proc
            code = await proc.wait()
            if self._stopping.is_set():
                return
            backoff = BACKOFF_MIN_S if time.monotonic() - started > STABLE_S else backoff
            log.warning("supervisor: worker %d (pid %d) exited with %s; restarting in %.1f s",
                        index, proc.pid, code, backoff)  # fmt: skip
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(backoff):
                    await self._stopping.wait()
            backoff = min(backoff * 2, BACKOFF_MAX_S)


def supervise(workers: int) -> int:
    """Run the supervisor until SIGTERM; its exit status."""
    return asyncio.run(Supervisor(workers).run())


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
