"""Just enough HTTP/1.1 for the load client: build a request, read a response head, undo
chunked transfer coding."""

from __future__ import annotations

from typing import Any

import orjson

_SIZE_LINE = -1
_CRLF = -2


def request_bytes(spec: dict[str, Any]) -> bytes:
    """One request; `Connection: close`, so the end of the body is the end of the stream."""
    body = b"" if spec.get("body") is None else orjson.dumps(spec["body"])
    lines = [
        f"{spec.get('method', 'POST')} {spec['path']} HTTP/1.1",
        f"Host: {spec['host']}:{spec['port']}",
        "Accept: text/event-stream",
        "Connection: close",
    ]
    if body:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in spec.get("headers", {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Response:
    """Collects the status line and headers; `feed` returns the body bytes after them."""

    def __init__(self) -> None:
        self.buffer = b""
        self.complete = False
        self.status = 0
        self.chunked = False

    def feed(self, data: bytes) -> bytes:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return b""
        lines = self.buffer[:end].decode("latin-1").split("\r\n")
        self.status = int(lines[0].split(" ", 2)[1])
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "transfer-encoding" and "chunked" in value.lower():
                self.chunked = True
        self.complete = True
        rest = self.buffer[end + 4 :]
        self.buffer = b""
        return rest


class Dechunker:
    """Chunked transfer coding to payload bytes; `done` after the zero-length chunk."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.need = _SIZE_LINE  # or the bytes left of the current chunk, or _CRLF
        self.done = False

    def feed(self, data: bytes) -> bytes:
        self.buffer += data
        out = bytearray()
        while not self.done and self.buffer:
            if self.need == _SIZE_LINE:
                line_end = self.buffer.find(b"\r\n")
                if line_end < 0:
                    break
                size = int(bytes(self.buffer[:line_end]).split(b";")[0], 16)
                del self.buffer[: line_end + 2]
                self.done = size == 0
                self.need = size
            elif self.need == _CRLF:
                if len(self.buffer) < 2:
                    break
                del self.buffer[:2]
                self.need = _SIZE_LINE
            else:
                take = min(self.need, len(self.buffer))
                out += self.buffer[:take]
                del self.buffer[:take]
                self.need -= take
                if self.need == 0:
                    self.need = _CRLF
        return bytes(out)
