"""`/mcp`'s sessions, each key's apart, and the admission every session and call goes
through.

A key has a budget of open sessions (`PER_KEY`): past it, its own least recently used
session ends, never another key's, so one key's many `initialize`s cannot end everybody
else's sessions. A session unused for `IDLE_S` ends too, and a revoked key's sessions end
at once (`end_key`). Opening a session and calling a tool each count as one run start
(`admission.admitted`: the key's own limits and budgets, as `start_run` counts a run).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from secrets import token_hex

from aiohttp import web

PER_KEY = 1_000
IDLE_S = 3600.0


class Sessions:
    """Open sessions of this process: key -> session id -> (protocol version, last use)."""

    def __init__(self, per_key: int = PER_KEY, idle_s: float = IDLE_S) -> None:
        self.per_key = per_key
        self.idle_s = idle_s
        self._by_key: dict[str, OrderedDict[str, tuple[str, float]]] = {}

    def open(self, version: str, caller: str) -> str:
        session_id = token_hex(16)
        now = time.monotonic()
        own = self._by_key.setdefault(caller, OrderedDict())
        own[session_id] = (version, now)
        while len(own) > self.per_key or now - next(iter(own.values()))[1] > self.idle_s:
            own.popitem(last=False)  # this key's least recently used
        return session_id

    def use(self, session_id: str, caller: str) -> bool:
        """True for an open session of this caller (and it counts as used now)."""
        own = self._by_key.get(caller)
        found = own.get(session_id) if own is not None else None
        if own is None or found is None:
            return False
        now = time.monotonic()
        if now - found[1] > self.idle_s:
            self._end(caller, session_id)
            return False
        own[session_id] = (found[0], now)
        own.move_to_end(session_id)
        return True

    def close(self, session_id: str, caller: str) -> bool:
        if not self.use(session_id, caller):
            return False
        self._end(caller, session_id)
        return True

    def end_key(self, caller: str) -> int:
        """End every session of a key (it was revoked): how many there were."""
        return len(self._by_key.pop(caller, ()))

    def count(self, caller: str) -> int:
        return len(self._by_key.get(caller, ()))

    def _end(self, caller: str, session_id: str) -> None:
        own = self._by_key[caller]
        del own[session_id]
        if not own:
            del self._by_key[caller]


SESSIONS = web.AppKey("mcp_sessions", Sessions)
