"""The reply as the relay records it (`relay.wire`): its text, its id, its tool input, its digest.

Pinned here: a reply's text is every text block joined in order with nothing between, kept to
its first 64 KiB; a message id that is not a string is no id (it would become a dedupe key of
the session's spend); an ``input_json_delta`` without string JSON is ignored, never fatal; a
body parsed on its own describes a 200; a tool_use block compares by type, id and name; and a
digest is the SHA-256 of the compact, key-sorted JSON (the form recorded digests were made in).
"""

from __future__ import annotations

import hashlib
import json

import pytest

from workflow_bench.relay.wire import (
    message_digest,
    normalize_content,
    parse_json_message,
    parse_response,
    parse_sse,
)

pytestmark = pytest.mark.unit


def _json(message: dict) -> bytes:
    body = json.dumps({"type": "message", "usage": {}, **message}).encode()
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + body


def _sse(*events: dict) -> bytes:
    return b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


def test_reply_text_joins_every_text_block_in_order() -> None:
    tool = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}
    facts = parse_response(_json({"id": "m1", "content": [_text("one "), tool, _text("two"), _text("!")]}))
    assert facts.text == "one two!"


def test_reply_text_is_kept_to_its_first_64_kib() -> None:
    long = "a" * (64 * 1024) + "b" * 2000
    facts = parse_response(_json({"id": "m1", "content": [_text(long)]}))
    assert facts.text == "a" * 65536


@pytest.mark.parametrize("bad_id", [7, ["m1"], {"id": "m1"}, True])
def test_a_message_id_that_is_not_a_string_is_no_id(bad_id) -> None:
    facts = parse_response(_json({"id": bad_id, "content": [_text("hi")]}))
    assert facts.message_id is None and facts.completed  # the reply itself still counts
    start = {"type": "message_start", "message": {"id": bad_id, "usage": {}}}
    streamed = parse_sse(_sse(start, {"type": "message_delta", "usage": {"output_tokens": 1}}))
    assert streamed.message_id is None and streamed.completed


def test_an_input_json_delta_without_string_json_is_ignored() -> None:
    events = [
        {"type": "message_start", "message": {"id": "m1", "usage": {}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t1", "name": "Skill", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": None},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"a"'},
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": 5}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": ": 1}"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "usage": {"output_tokens": 1}},
    ]
    facts = parse_sse(_sse(*events))
    assert facts.parse_error is None and facts.completed
    assert [(u.id, dict(u.input)) for u in facts.tool_uses] == [("t1", {"a": 1})]


def test_a_text_delta_never_feeds_a_tool_input() -> None:
    events = [
        {"type": "message_start", "message": {"id": "m1", "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": _text("hi")},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "partial_json": "{}"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "usage": {"output_tokens": 1}},
    ]
    facts = parse_sse(_sse(*events))
    assert facts.parse_error is None and facts.completed and facts.text == "hi"
    assert facts.reply_digest == message_digest("assistant", [_text("hi")])  # no "input" grew on it


def test_a_body_parsed_on_its_own_describes_a_200() -> None:
    start = {"type": "message_start", "message": {"id": "m1", "usage": {}}}
    assert parse_sse(_sse(start, {"type": "message_delta"})).status == 200
    assert parse_json_message(json.dumps({"type": "message", "id": "m1"}).encode()).status == 200


def test_a_tool_use_block_compares_by_its_type_id_and_name_only() -> None:
    block = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}, "cache_control": {}}
    assert normalize_content([block]) == [{"type": "tool_use", "id": "t1", "name": "Bash"}]


def test_a_digest_is_the_sha256_of_compact_key_sorted_json() -> None:
    content = [{"type": "text", "text": "héllo"}]
    canonical = '["user",[{"text":"héllo","type":"text"}]]'
    assert message_digest("user", content) == hashlib.sha256(canonical.encode()).hexdigest()[:32]
