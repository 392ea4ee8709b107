"""Named API keys: which names exist, and which name a presented key belongs to.

`GATEWAY_API_KEYS` holds `name:key` pairs (a bare key is named by its position: `key1`,
`key2`...); `GATEWAY_API_KEYS_FILE` holds `name sha256hex` lines, so the keys themselves
need not sit on the server. Only SHA-256 digests are kept in memory. A presented key is
hashed and compared with every entry, in constant time, without stopping at a match: how
long the check takes says nothing about which entry matched or how much of it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from pathlib import Path

_NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
_HEX = re.compile(r"^[0-9a-fA-F]{64}$")


class KeyFileError(ValueError):
    """GATEWAY_API_KEYS_FILE cannot be read or has a malformed line."""


@dataclass(frozen=True)
class KeyRing:
    """Every accepted key as (name, SHA-256 digest)."""

    entries: tuple[tuple[str, bytes], ...] = ()
    from_file: frozenset[str] = frozenset()
    """The names read from GATEWAY_API_KEYS_FILE (the others came from GATEWAY_API_KEYS)."""

    @property
    def open(self) -> bool:
        return not self.entries

    def names(self) -> list[str]:
        return [name for name, _ in self.entries]

    def identify(self, key: str) -> str | None:
        """The name of the presented key, or None. Compares with every entry."""
        digest = hashlib.sha256(key.encode()).digest()
        found: str | None = None
        for name, expected in self.entries:
            if hmac.compare_digest(digest, expected) and found is None:
                found = name
        return found


def parse_keys(pairs: tuple[str, ...]) -> list[tuple[str, bytes]]:
    """`name:key` pairs, or bare keys named `key{position}` (1-based)."""
    entries = []
    for position, entry in enumerate(pairs, start=1):
        name, sep, key = entry.partition(":")
        if not (sep and _NAME.match(name) and key):
            name, key = f"key{position}", entry
        entries.append((name, hashlib.sha256(key.encode()).digest()))
    return entries


def read_key_file(path: str) -> list[tuple[str, bytes]]:
    """`name sha256hex` lines; blank lines and `#` comments are skipped."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise KeyFileError(f"GATEWAY_API_KEYS_FILE {path}: {exc.strerror}") from exc
    entries = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or not _NAME.match(parts[0]) or not _HEX.match(parts[1]):
            raise KeyFileError(f"GATEWAY_API_KEYS_FILE line {number}: want `name sha256hex`")
        entries.append((parts[0], bytes.fromhex(parts[1])))
    return entries


def load_keyring(pairs: tuple[str, ...], key_file: str | None) -> KeyRing:
    from_file = read_key_file(key_file) if key_file else []
    entries = parse_keys(pairs) + from_file
    names = [name for name, _ in entries]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:  # two keys under one name would share runs and limits by accident
        raise KeyFileError(f"API key names must be unique: {', '.join(duplicates)}")
    return KeyRing(tuple(entries), frozenset(name for name, _ in from_file))
