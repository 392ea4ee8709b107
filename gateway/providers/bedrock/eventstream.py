"""AWS's `application/vnd.amazon.eventstream` framing, decoded (pure).

A frame: total length (4 bytes, big-endian), headers length (4), CRC32 of those 8 bytes,
the headers, the payload, CRC32 of everything before it. Bedrock's
InvokeModelWithResponseStream sends each Messages API event as an `event` frame of
`:event-type` `chunk` whose payload is `{"bytes":"<base64 of the event's JSON>"}`, and a
failure as an `exception` frame (`:exception-type`, a JSON `{"message"}`) or an `error`
frame (`:error-code`, `:error-message`).

Per event the decoder checks both CRCs, compares the headers with the last `chunk`'s (the
same bytes every time: parsed once), and decodes the base64 straight from the frame: the
JSON it yields is what the SSE path's `data:` payload is.
"""

from __future__ import annotations

import binascii
import struct
import zlib

import orjson

from gateway.errors import UpstreamFailure
from gateway.providers.failures import aws_stream_failure

_PRELUDE = struct.Struct(">III")
_CRC = struct.Struct(">I")
_MIN_FRAME = 16
MAX_FRAME = 24 << 20  # AWS's limit on one message: 24 MiB
_CHUNK_PREFIX = b'{"bytes":"'
# Header value types: sizes of the fixed ones; 6 (bytes) and 7 (string) carry a length.
_FIXED = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}


class FrameError(UpstreamFailure):
    """A frame whose length or checksum is wrong: the stream cannot be trusted past it."""

    def __init__(self, message: str) -> None:
        super().__init__("NETWORK_ERROR", f"Bedrock event stream: {message}", retryable=True)


def parse_headers(data: bytes | memoryview) -> dict[str, str | bytes | int | bool]:
    """An event-stream frame's headers (strings decoded; other types as Python values)."""
    headers: dict[str, str | bytes | int | bool] = {}
    pos, end = 0, len(data)
    while pos < end:
        size = data[pos]
        name = bytes(data[pos + 1 : pos + 1 + size]).decode()
        kind = data[pos + 1 + size]
        pos += 2 + size
        if kind in (6, 7):
            (length,) = struct.unpack_from(">H", data, pos)
            raw = bytes(data[pos + 2 : pos + 2 + length])
            headers[name] = raw.decode() if kind == 7 else raw
            pos += 2 + length
        elif kind in _FIXED:
            width = _FIXED[kind]
            raw = bytes(data[pos : pos + width])
            headers[name] = kind == 0 if kind < 2 else int.from_bytes(raw, "big", signed=True)
            pos += width
        else:
            raise FrameError(f"unknown header type {kind}")
    if pos != end:
        raise FrameError("headers overrun their length")
    return headers


class EventStreamDecoder:
    """`feed(chunk)` -> the Messages API events' JSON payloads of the complete frames in it;
    a broken frame (`FrameError`) or an exception frame (its mapped `UpstreamFailure`)
    ends the stream: it is put in `failure`."""

    __slots__ = ("_buffer", "_chunk_headers", "failure")

    def __init__(self) -> None:
        self._buffer = b""
        self._chunk_headers = b""
        self.failure: UpstreamFailure | None = None
        """The stream's end by an exception frame or a broken frame, once decoded: the
        payloads before it in the same read are returned first."""

    def feed(self, chunk: bytes) -> list[bytes]:
        payloads: list[bytes] = []
        if self.failure is not None:
            return payloads
        try:
            self._feed(chunk, payloads)
        except UpstreamFailure as failure:
            self.failure = failure
        return payloads

    def _feed(self, chunk: bytes, payloads: list[bytes]) -> None:
        data = self._buffer + chunk if self._buffer else chunk
        view = memoryview(data)
        pos, size = 0, len(data)
        crc32, unpack, unpack_crc = zlib.crc32, _PRELUDE.unpack_from, _CRC.unpack_from
        a2b = binascii.a2b_base64
        known, append = self._chunk_headers, payloads.append
        try:
            while size - pos >= 12:
                total, head_len, prelude_crc = unpack(data, pos)
                if crc32(view[pos : pos + 8]) != prelude_crc:
                    raise FrameError("prelude checksum mismatch")
                if total < _MIN_FRAME + head_len or total > MAX_FRAME:
                    raise FrameError(f"frame length {total} out of range")
                end = pos + total
                if end > size:
                    break
                stop = end - 4
                if crc32(view[pos:stop]) != unpack_crc(data, stop)[0]:
                    raise FrameError("message checksum mismatch")
                start = pos + 12 + head_len
                # A chunk with the headers of the last one (the same bytes every time): its
                # base64 decoded in place, no call per event (`_chunk_json` has the rest).
                if (
                    head_len == len(known)
                    and data.startswith(known, pos + 12)
                    and data.startswith(_CHUNK_PREFIX, start)
                ):
                    quote = data.find(b'"', start + 10, stop)
                    if quote > 0:
                        append(a2b(data[start + 10 : quote], strict_mode=True))
                        pos = end
                        continue
                self._frame(data[pos + 12 : start], data, view, start, stop, payloads)
                known = self._chunk_headers
                pos = end
        except binascii.Error as exc:
            raise FrameError(f"a chunk's bytes are not base64 ({exc})") from exc
        finally:
            self._buffer = data[pos:]

    def _frame(
        self,
        raw: bytes,
        data: bytes,
        view: memoryview,
        start: int,
        stop: int,
        payloads: list[bytes],
    ) -> None:
        headers = parse_headers(raw)
        kind = headers.get(":message-type")
        if kind == "event":
            if headers.get(":event-type") == "chunk":
                self._chunk_headers = raw
                payloads.append(_chunk_json(data, view, start, stop))
            return  # other event types (none today) are not the model's
        if kind == "exception":
            raise aws_stream_failure(
                str(headers.get(":exception-type")), _message(view[start:stop])
            )
        if kind == "error":
            code, message = headers.get(":error-code"), headers.get(":error-message")
            raise aws_stream_failure(str(code), str(message or "error"))
        raise FrameError(f"unknown message type {kind!r}")

    @property
    def pending(self) -> int:
        """Bytes of a frame not complete yet (a stream ending here was cut short)."""
        return len(self._buffer)


def _chunk_json(data: bytes, view: memoryview, start: int, stop: int) -> bytes:
    """The event JSON inside a chunk's `{"bytes":"<base64>"}` (base64 has no `"`), decoded
    from the frame in place."""
    try:
        if data.startswith(_CHUNK_PREFIX, start, stop):
            quote = data.find(b'"', start + 10, stop)
            if quote > 0:
                return binascii.a2b_base64(view[start + 10 : quote], strict_mode=True)
        value = orjson.loads(view[start:stop])["bytes"]
        return binascii.a2b_base64(value, strict_mode=True)
    except (orjson.JSONDecodeError, KeyError, TypeError, binascii.Error) as exc:
        raise FrameError(f"a chunk without its bytes ({exc})") from exc


def _message(body: memoryview) -> str:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return bytes(body).decode(errors="replace")
    message = value.get("message") or value.get("Message") if isinstance(value, dict) else None
    return str(message or "upstream error")


def encode_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One frame with string headers (the fakes' and the bench's side)."""
    head = b"".join(
        bytes([len(name)])
        + name.encode()
        + b"\x07"
        + struct.pack(">H", len(value.encode()))
        + value.encode()
        for name, value in headers.items()
    )
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + head + payload
    return message + struct.pack(">I", zlib.crc32(message))


def chunk_frame(event_json: bytes) -> bytes:
    """A `chunk` event frame carrying one Messages API event, as Bedrock sends it."""
    payload = b'{"bytes":"' + binascii.b2a_base64(event_json, newline=False) + b'"}'
    headers = {
        ":event-type": "chunk",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return encode_frame(headers, payload)
