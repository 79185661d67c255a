"""The relay's HTTP framing rules (`relay.wire.split_http_response`, `parse_response`).

Pinned here: a status line is ``HTTP-version SP status-code SP reason`` (RFC 9112, single spaces);
a header's value keeps every colon after the first; a response that cannot be framed carries no
body; a chunked body cut short or malformed keeps every whole chunk it got, in order, and so
does the reply parsed from it (a cut stream may still be billed); an empty ``Content-Encoding``
is identity; and a response that cannot be read says why.
"""

from __future__ import annotations

import json

import pytest

from workflow_bench.relay.wire import parse_response, split_http_response

pytestmark = pytest.mark.unit


def _chunked(*chunks: bytes) -> bytes:
    return b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in chunks)


HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"


def test_a_response_cut_inside_its_headers_has_no_status_and_no_body() -> None:
    assert split_http_response(b"HTTP/1.1 200 OK\r\nContent-Ty") == (
        None,
        {},
        b"",
        "response ended inside its headers",
    )


def test_a_malformed_status_line_has_no_status_and_no_body() -> None:
    assert split_http_response(b"HTTP/1.1 two hundred\r\n\r\nbody") == (
        None,
        {},
        b"",
        "malformed status line",
    )


@pytest.mark.parametrize("line", [b"HTTP/1.1  200 OK", b"HTTP/1.1\t200 OK", b" HTTP/1.1 200 OK"])
def test_a_status_line_is_split_on_single_spaces_only(line: bytes) -> None:
    status, _, body, problem = split_http_response(line + b"\r\n\r\nbody")
    assert (status, body, problem) == (None, b"", "malformed status line")


def test_a_header_value_keeps_every_colon_after_the_first() -> None:
    raw = b"HTTP/1.1 200 OK\r\nDate: Mon, 30 Nov 2026 22:01:20 GMT\r\nX-Trace: a:b:c\r\n\r\n"
    _, headers, _, _ = split_http_response(raw)
    assert headers == {"date": "Mon, 30 Nov 2026 22:01:20 GMT", "x-trace": "a:b:c"}


def test_a_chunked_body_cut_mid_chunk_keeps_every_whole_chunk_in_order() -> None:
    # the size line of the third chunk never got its CRLF
    raw = HEAD + _chunked(b"hello ", b"world") + b"1"
    assert split_http_response(raw)[2:] == (b"hello world", "chunked body ended mid-chunk")
    # a chunk cut inside its data keeps what arrived of it
    raw = HEAD + _chunked(b"hello ") + b"5\r\nwor"
    assert split_http_response(raw)[2:] == (b"hello wor", "chunked body ended mid-chunk")


def test_a_malformed_chunk_size_keeps_every_whole_chunk_before_it() -> None:
    raw = HEAD + _chunked(b"hello ", b"world") + b"zz\r\n"
    assert split_http_response(raw)[2:] == (b"hello world", "malformed chunk size")


def test_a_reply_cut_mid_chunk_keeps_its_id_usage_and_text() -> None:
    events = [
        {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 12}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "par"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "tial"}},
    ]
    frames = [f"data: {json.dumps(e)}\n\n".encode() for e in events]
    raw = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        + _chunked(*frames)
        + b"40\r\ndata: {"
    )
    facts = parse_response(raw)
    assert (facts.status, facts.completed, facts.parse_error) == (200, False, "chunked body ended mid-chunk")
    assert facts.message_id == "msg_1" and facts.usage["input_tokens"] == 12
    assert facts.text == "partial"  # a cut reply still says what it said


def test_an_empty_content_encoding_is_identity() -> None:
    body = json.dumps({"id": "m1", "type": "message", "content": [], "usage": {}}).encode()
    raw = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: \r\n\r\n" + body
    facts = parse_response(raw)
    assert facts.parse_error is None and facts.message_id == "m1" and facts.completed
    gzip = raw.replace(b"Content-Encoding: ", b"Content-Encoding: gzip")
    assert parse_response(gzip).parse_error == "compressed response (gzip) cannot be read"


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Ty", "response ended inside its headers"),
        (b"HTTP/1.1 ok\r\n\r\n", "malformed status line"),
    ],
)
def test_a_response_without_a_status_says_why(raw: bytes, problem: str) -> None:
    facts = parse_response(raw)
    assert (facts.status, facts.completed, facts.parse_error) == (None, False, problem)
