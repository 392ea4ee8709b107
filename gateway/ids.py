"""Random ids (runs, sessions, requests, limit tickets): `secrets.token_hex`'s, drawn from a
buffer of `os.urandom` bytes, so a run start's four ids cost one `getrandom` syscall in
every 256 ids, not one each. The bytes are the kernel's CSPRNG's, as `secrets` gives them;
each is handed out once. A forked child starts with an empty buffer: it must never
repeat its parent's ids."""

from __future__ import annotations

import os

POOL_BYTES = 4096

_pool = b""
_at = 0


def token_hex(nbytes: int = 16) -> str:
    """`2 * nbytes` hex digits of fresh random bytes (at most `POOL_BYTES`)."""
    global _pool, _at
    end = _at + nbytes
    if end > len(_pool):
        _pool, _at, end = os.urandom(max(POOL_BYTES, nbytes)), 0, nbytes
    start, _at = _at, end
    return _pool[start:end].hex()


def _forget() -> None:
    global _pool, _at
    _pool, _at = b"", 0


os.register_at_fork(after_in_child=_forget)
