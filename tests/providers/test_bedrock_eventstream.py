"""The AWS event-stream decoder against frames botocore itself reads, split anywhere,
broken on purpose, and ending in AWS's exception and error frames."""

from __future__ import annotations

import json
import struct
import zlib

import pytest
from botocore.eventstream import EventStreamBuffer

from gateway.errors import UpstreamFailure
from gateway.providers.bedrock.eventstream import (
    EventStreamDecoder,
    FrameError,
    chunk_frame,
    encode_frame,
    parse_headers,
)
from gateway.providers.failures import aws_answer_failure, aws_stream_failure, google_failure
from tests.fakes.bedrock import exception_frame

EVENTS = [
    {"type": "message_start", "message": {"id": "m", "model": "claude-sonnet-5", "usage": {}}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "é ✓"}},
    {"type": "message_stop"},
]
STREAM = b"".join(chunk_frame(json.dumps(e).encode()) for e in EVENTS)


def test_the_frames_are_the_ones_botocore_reads() -> None:
    buffer = EventStreamBuffer()
    buffer.add_data(STREAM)
    messages = list(buffer)
    assert [m.headers[":event-type"] for m in messages] == ["chunk"] * 3
    assert [m.headers[":message-type"] for m in messages] == ["event"] * 3


def test_split_at_every_byte_the_payloads_are_the_events() -> None:
    for cut in range(1, len(STREAM)):
        decoder = EventStreamDecoder()
        payloads = decoder.feed(STREAM[:cut]) + decoder.feed(STREAM[cut:])
        assert [json.loads(p) for p in payloads] == EVENTS
        assert decoder.failure is None and decoder.pending == 0


def test_one_byte_at_a_time() -> None:
    decoder = EventStreamDecoder()
    payloads = [p for i in range(len(STREAM)) for p in decoder.feed(STREAM[i : i + 1])]
    assert [json.loads(p) for p in payloads] == EVENTS


@pytest.mark.parametrize("where", ["prelude", "message", "length"])
def test_a_broken_frame_ends_the_stream_after_the_events_before_it(where: str) -> None:
    broken = bytearray(chunk_frame(b'{"type":"ping"}'))
    if where == "prelude":
        broken[9] ^= 0x01  # the prelude's CRC
    elif where == "message":
        broken[-1] ^= 0x01
    else:  # a length with a matching prelude CRC, past any frame's size
        prelude = struct.pack(">II", 1 << 30, 0)
        broken[:12] = prelude + struct.pack(">I", zlib.crc32(prelude))
    decoder = EventStreamDecoder()
    payloads = decoder.feed(STREAM[:-16] + STREAM[-16:] + bytes(broken) + STREAM)
    assert [json.loads(p) for p in payloads] == EVENTS  # what came before, not after
    assert isinstance(decoder.failure, FrameError)
    assert decoder.failure.code == "NETWORK_ERROR" and decoder.failure.retryable
    assert decoder.feed(STREAM) == []  # nothing past a broken frame


def test_an_exception_frame_is_the_mapped_failure() -> None:
    decoder = EventStreamDecoder()
    payloads = decoder.feed(STREAM + exception_frame("modelStreamErrorException", "bad model"))
    assert len(payloads) == 3
    failure = decoder.failure
    assert failure is not None and failure.code == "UNKNOWN_ERROR"
    assert failure.message == "bad model"
    assert failure.details["upstream_type"] == "modelStreamErrorException"


def test_an_error_frame_is_a_failure() -> None:
    frame = encode_frame(
        {":message-type": "error", ":error-code": "InternalFailure", ":error-message": "try later"},
        b"",
    )
    decoder = EventStreamDecoder()
    assert decoder.feed(frame) == []
    assert decoder.failure is not None and decoder.failure.message == "try later"


def test_a_chunk_in_another_json_layout_and_one_without_bytes() -> None:
    event = b'{"type":"ping"}'
    headers = {
        ":event-type": "chunk",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    spaced = encode_frame(headers, b'{ "p": "abc", "bytes": "eyJ0eXBlIjoicGluZyJ9" }')
    assert EventStreamDecoder().feed(spaced) == [event]
    decoder = EventStreamDecoder()
    assert decoder.feed(encode_frame(headers, b'{"p":"abc"}')) == []
    assert isinstance(decoder.failure, FrameError)


def test_headers_of_every_type() -> None:
    raw = (
        b"\x01a\x00"
        + b"\x01b\x01"
        + b"\x01c\x02\x05"
        + b"\x01d\x03\x00\x07"
        + b"\x01e\x04\x00\x00\x00\x09"
        + b"\x01f\x05"
        + (11).to_bytes(8, "big")
        + b"\x01g\x06\x00\x02ab"
        + b"\x01h\x07\x00\x02hi"
        + b"\x01i\x08"
        + (1).to_bytes(8, "big")
        + b"\x01j\x09"
        + bytes(16)
    )
    assert parse_headers(raw) == {
        "a": True,
        "b": False,
        "c": 5,
        "d": 7,
        "e": 9,
        "f": 11,
        "g": b"ab",
        "h": "hi",
        "i": 1,
        "j": 0,
    }
    with pytest.raises(FrameError):
        parse_headers(b"\x01a\x0e")


@pytest.mark.parametrize(
    ("kind", "status", "code", "retryable"),
    [
        ("ThrottlingException", 429, "RATE_LIMIT_ERROR", True),
        ("throttlingException", None, "RATE_LIMIT_ERROR", True),
        ("ModelNotReadyException", 429, "OVERLOADED_ERROR", True),
        ("AccessDeniedException", 403, "PERMISSION_ERROR", False),
        ("ValidationException", 400, "VALIDATION_ERROR", False),
        ("ResourceNotFoundException", 404, "NOT_FOUND", False),
        ("ExpiredTokenException", 403, "AUTHENTICATION_ERROR", True),
        ("SomethingNewException", 500, "UNKNOWN_ERROR", True),
        ("SomethingNewException", 400, "VALIDATION_ERROR", False),
    ],
)
def test_aws_exceptions(kind: str, status: int | None, code: str, retryable: bool) -> None:
    failure = aws_stream_failure(kind, "m", status)
    assert (failure.code, failure.retryable) == (code, retryable)


def test_an_aws_answer_reads_its_type_header_body_and_request_id() -> None:
    headers = {
        "x-amzn-errortype": "ThrottlingException:http://internal.amazon.com/coral/x",
        "x-amzn-requestid": "req-1",
        "retry-after": "2",
    }
    failure = aws_answer_failure(429, {"message": "Too many requests"}, headers)
    assert failure.code == "RATE_LIMIT_ERROR" and failure.message == "Too many requests"
    assert failure.retry_after_s == 2.0 and failure.details["upstream_request_id"] == "req-1"
    typed = aws_answer_failure(403, {"__type": "com.amazon#AccessDeniedException"}, {})
    assert typed.code == "PERMISSION_ERROR"


def test_google_errors_and_the_messages_api_shape_through_vertex() -> None:
    quota = {"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}
    failure = google_failure(429, [quota], {})
    assert failure is not None and failure.code == "RATE_LIMIT_ERROR" and failure.retryable
    assert google_failure(529, {"type": "error", "error": {"type": "overloaded_error"}}, {}) is None
    assert isinstance(google_failure(500, {"error": {"code": 500}}, {}), UpstreamFailure)
