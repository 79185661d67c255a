"""The SSE reader on the stream shapes a provider (or a proxy) really sends, and on cut streams.

Rules: CRLF and LF framing, `data:` with or without its space, payloads split over several
`data:` lines and comment/ping frames are all the same stream; invalid UTF-8 is replaced, never
fatal; a stream cut before `message_delta` is not a completed message and says why (the first
problem wins); the reply text is the start block's text plus its deltas, in order.
"""

from __future__ import annotations

import json

import pytest

from tests.builders import http_response, sse, sse_message
from workflow_bench.relay.wire import MID_FRAME, message_digest, parse_response, sse_events

pytestmark = pytest.mark.unit


def _frames(events, *, sep="\n") -> bytes:
    return "".join(f"event: {e['type']}{sep}data: {json.dumps(e)}{sep}{sep}" for e in events).encode()


def test_crlf_framing_no_space_after_data_and_ping_frames_are_the_same_stream() -> None:
    reference = parse_response(http_response(sse(*sse_message())))
    crlf = parse_response(http_response(_frames(sse_message(), sep="\r\n")))
    tight = parse_response(http_response(sse(*sse_message()).replace(b"data: ", b"data:")))
    events = sse_message()
    pinged = b"".join(
        _frames([e]) + (b": ping\n\nevent: ping\ndata: \n\n" if i == 2 else b"") for i, e in enumerate(events)
    )
    for facts in (crlf, tight, parse_response(http_response(pinged))):
        assert facts.completed and facts.parse_error is None
        assert (facts.message_id, facts.usage, facts.reply_digest) == (
            reference.message_id,
            reference.usage,
            reference.reply_digest,
        )


def test_a_payload_split_over_data_lines_is_joined() -> None:
    start = sse_message()[0]
    text = json.dumps(start, indent=1)  # several lines, each its own data: line
    frame = "event: message_start\n" + "".join(f"data: {line}\n" for line in text.splitlines()) + "\n"
    events, problem = sse_events(frame.encode())
    assert problem is None and events == [start]


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    body = sse(*sse_message()).replace(b"Hel", b"H\xffl")
    facts = parse_response(http_response(body))
    assert facts.completed and facts.message_id == "msg_1"


def test_a_stream_cut_mid_frame_or_before_message_delta_is_not_complete() -> None:
    events = sse_message(stop=False)
    whole = sse(*events)
    assert sse_events(whole)[1] is None
    assert sse_events(whole + b"event: message_stop\ndata: {")[1] == MID_FRAME
    before_delta = sse(*events[:-1]) + b"event: message_delta\ndata: {"
    facts = parse_response(http_response(before_delta))
    assert facts.completed is False and facts.parse_error == MID_FRAME
    assert facts.message_id == "msg_1" and facts.status == 200


def test_the_first_problem_wins_and_an_error_event_is_named() -> None:
    start = sse_message()[0]
    error = {"type": "error", "error": {"type": "overloaded_error"}}
    facts = parse_response(http_response(sse(start, error)))
    assert facts.completed is False and facts.parse_error == "the stream carried an error event"
    bad_input = [
        start,
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "X"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{nope"},
        },
        {"type": "content_block_stop", "index": 0},
        error,
    ]
    assert parse_response(http_response(sse(*bad_input))).parse_error == "a tool_use input is not JSON"


def test_a_stream_without_message_start_is_unparseable_with_its_status() -> None:
    facts = parse_response(http_response(sse(*sse_message()[1:])))
    assert facts.status == 200 and facts.completed is False
    assert facts.parse_error == "the stream has no message_start"
    cut = parse_response(http_response(sse(*sse_message()[1:3]) + b"data: {"))
    assert cut.parse_error == MID_FRAME  # the earlier problem is the one reported


def test_odd_blocks_and_deltas_are_carried_not_fatal() -> None:
    events = [
        sse_message()[0],
        {"type": "content_block_start", "index": 0, "content_block": None},
        {"type": "content_block_delta", "index": 0, "delta": "not a dict"},
        {"type": "content_block_delta", "index": 7, "delta": {"type": "text_delta", "text": "orphan"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "t", "name": "X"},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "usage": {"output_tokens": 1}},
    ]
    facts = parse_response(http_response(sse(*events)))
    assert facts.completed and facts.parse_error is None
    assert [(u.id, dict(u.input)) for u in facts.tool_uses] == [("t", {})]  # empty input is {}


def test_the_reply_text_is_the_start_text_plus_its_deltas() -> None:
    events = [
        sse_message()[0],
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Hi"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " the"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "re"}},
        {"type": "message_delta", "usage": {"output_tokens": 1}},
    ]
    facts = parse_response(http_response(sse(*events)))
    assert facts.reply_digest == message_digest("assistant", [{"type": "text", "text": "Hi there"}])


def test_chunk_framing_edge_cases() -> None:
    body = json.dumps({"id": "m", "type": "message", "content": [], "usage": {}}).encode()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    two = b"%x;a=1;b=2\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (10, body[:10], len(body) - 10, body[10:])
    assert parse_response(head + two).completed is True  # extensions, however many
    cut = b"%x\r\n%s\r\n%x\r\n%s" % (10, body[:10], len(body) - 10, body[10:20])
    facts = parse_response(head + cut)
    assert facts.parse_error == "chunked body ended mid-chunk" and facts.completed is False
    assert parse_response(head + b"\r\n" + body).parse_error == "malformed chunk size"


def test_a_cut_chunked_stream_keeps_every_byte_that_arrived() -> None:
    body = sse(*sse_message())
    pieces = [body[i : i + 50] for i in range(0, len(body), 50)]
    encoded = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces[:-1])
    encoded += b"%x\r\n%s" % (len(pieces[-1]) + 99, pieces[-1])  # the last chunk never completes
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    facts = parse_response(head + encoded)
    whole = parse_response(http_response(body))
    assert facts.parse_error == "chunked body ended mid-chunk" and facts.completed is False
    assert (facts.message_id, facts.usage, facts.reply_digest) == (
        whole.message_id,
        whole.usage,
        whole.reply_digest,
    )


def test_only_message_start_sets_the_message_and_a_cut_after_message_delta_is_complete() -> None:
    events = sse_message()
    stray = {"type": "ping", "message": {"id": "evil", "usage": {"input_tokens": 999}}}
    facts = parse_response(http_response(sse(events[0], stray, *events[1:])))
    assert facts.message_id == "msg_1" and facts.usage["input_tokens"] == 10
    cut = sse(*sse_message(stop=False)) + b"event: message_stop\ndata: {"  # cut inside message_stop
    done = parse_response(http_response(cut))
    assert done.completed is True and done.parse_error is None  # as the CLI itself accepts it


def test_a_text_block_without_start_text_and_deltas_of_other_kinds() -> None:
    events = [
        sse_message()[0],
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "citations_delta", "partial_json": "x"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "usage": {"output_tokens": 1}},
    ]
    facts = parse_response(http_response(sse(*events)))
    assert facts.reply_digest == message_digest("assistant", [{"type": "text", "text": "Hi"}])


def test_an_unreadable_json_response_says_so() -> None:
    bad = parse_response(_json_http(b"{nope"))
    assert bad.parse_error.startswith("JSON response is not JSON") and bad.completed is False
    other = parse_response(_json_http(json.dumps({"type": "error"}).encode()))
    assert other.parse_error == "JSON response is not a message" and other.completed is False
    text = parse_response(_json_http(json.dumps({"id": "m", "type": "message", "content": "hi"}).encode()))
    assert text.completed and text.reply_digest == message_digest("assistant", [])  # not a block list


def _json_http(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + body
