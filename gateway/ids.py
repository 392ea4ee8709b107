"""Random ids (runs, sessions, requests, limit tickets): `secrets.token_hex`'s, drawn from a
buffer of `os.urandom` bytes, so a run start's four ids cost one `getrandom` syscall in
every 256 ids, not one each. The bytes are the kernel's CSPRNG's, as `secrets` gives them;
each is handed out once, under a lock (a thread switch between reading the position and
moving it would hand two callers the same bytes). A forked child starts with an empty
buffer: it must never repeat its parent's ids."""

from __future__ import annotations

import os
import threading

POOL_BYTES = 4096

_pool = b""
_at = 0
_lock = threading.Lock()


def token_hex(nbytes: int = 16) -> str:
    """`2 * nbytes` hex digits of random bytes no caller was given before."""
    global _pool, _at
    with _lock:
        end = _at + nbytes
        if end > len(_pool):
            _pool, _at, end = os.urandom(max(POOL_BYTES, nbytes)), 0, nbytes
        start, _at = _at, end
        chunk = _pool[start:end]
    return chunk.hex()


def _forget() -> None:
    global _pool, _at, _lock
    _pool, _at = b"", 0
    _lock = threading.Lock()  # a thread of the parent may have held it at the fork


os.register_at_fork(after_in_child=_forget)
