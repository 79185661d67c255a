"""The relay's wire parser: SSE and JSON responses, chunked and partial bodies, request facts."""

from __future__ import annotations

import json

import pytest

from tests.builders import SSE_USAGE, http_response, sse, sse_message
from workflow_bench.relay.wire import message_digest, parse_request, parse_response

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("framing", ["length", "chunked", "close"])
def test_sse_message_is_reduced_to_id_usage_tool_calls_and_reply(framing):
    body = sse(*sse_message())
    raw = http_response(body, chunked=framing == "chunked", length=framing == "length")
    facts = parse_response(raw)
    assert facts.parse_error is None and facts.completed and facts.status == 200
    assert facts.message_id == "msg_1"
    # message_delta's cumulative output_tokens overrides message_start's, field by field
    assert facts.usage == {**SSE_USAGE, "output_tokens": 7}
    assert [(u.id, u.name, dict(u.input)) for u in facts.tool_uses] == [
        ("toolu_1", "Skill", {"skill": "work"})
    ]
    expected = [{"type": "text", "text": "Hello"}, {"type": "tool_use", "id": "toolu_1", "name": "Skill"}]
    assert facts.reply_digest == message_digest("assistant", expected)


def test_json_message():
    body = json.dumps(
        {
            "id": "msg_j",
            "type": "message",
            "content": [{"type": "tool_use", "id": "toolu_j", "name": "Bash", "input": {"command": "ls"}}],
            "usage": SSE_USAGE,
        }
    ).encode()
    facts = parse_response(http_response(body, content_type="application/json"))
    assert facts.completed and facts.message_id == "msg_j" and facts.usage == SSE_USAGE
    assert [u.name for u in facts.tool_uses] == ["Bash"]


def test_partial_streams_are_not_completed():
    full = sse(*sse_message())
    cut_mid_frame = full[: full.index(b"message_delta") + 20]
    for body in (cut_mid_frame, sse(*sse_message()[:6])):
        facts = parse_response(http_response(body, length=False))
        assert facts.completed is False, body[-80:]
    # Negative control: the same bytes whole are a completed message; so is a stream cut after
    # message_delta (inside message_stop, or without it), which the CLI accepts as finished.
    assert parse_response(http_response(full, length=False)).completed is True
    assert (
        parse_response(http_response(full[: full.rindex(b"message_stop") + 5], length=False)).completed
        is True
    )
    assert parse_response(http_response(sse(*sse_message(stop=False)), length=False)).completed is True


def test_a_body_shorter_than_its_length_or_a_cut_chunk_is_partial():
    body = sse(*sse_message())
    short = http_response(body)[:-10]
    assert parse_response(short).completed is False
    chunked = http_response(body, chunked=True)
    assert parse_response(chunked[:-5]).completed is False
    assert parse_response(chunked).completed is True


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n",  # ended inside headers
        b"garbage\r\n\r\n",
        http_response(b"data: {not json}\n\n"),
        http_response(b"event: ping\ndata: {}\n\n"),  # no message_start
        http_response(b"{}", content_type="application/json"),
    ],
)
def test_malformed_responses_yield_facts_with_a_problem_never_an_exception(raw):
    facts = parse_response(raw)
    assert facts.completed is False and facts.message_id is None


def test_compressed_responses_are_refused_as_unreadable():
    raw = http_response(b"\x1f\x8b...", content_type="text/event-stream").replace(
        b"\r\n\r\n", b"\r\nContent-Encoding: gzip\r\n\r\n", 1
    )
    assert "compressed" in (parse_response(raw).parse_error or "")


def test_error_status_has_no_message():
    facts = parse_response(http_response(b'{"type":"error"}', content_type="application/json", status=529))
    assert facts.status == 529 and facts.message_id is None and facts.completed is False


def test_request_facts_normalize_the_clis_reserialization():
    first = {
        "model": "m",
        "stream": True,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "do it"}]},
            {"role": "system", "content": [{"type": "text", "text": "env", "cache_control": {"type": "x"}}]},
        ],
    }
    later = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "do it"},
            {"role": "system", "content": "env"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "s"},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": True}],
            },
        ],
    }
    a, b = parse_request(json.dumps(first).encode()), parse_request(json.dumps(later).encode())
    assert a.messages == b.messages[:2]
    assert [(r.tool_use_id, r.is_error) for r in b.tool_results] == [("t1", True)]
    assert a.first_user_texts == ("do it",) and a.model == "m" and a.stream is True
    # Negative control: a changed user text is a different conversation.
    first["messages"][0]["content"][0]["text"] = "do something else"
    assert parse_request(json.dumps(first).encode()).messages[0] != a.messages[0]


@pytest.mark.parametrize("body", [b"not json", b"[]", b'{"messages": "x"}', b'{"messages": [1]}'])
def test_bad_request_bodies_are_marked(body):
    assert parse_request(body).parse_error


def test_a_lone_surrogate_compares_as_the_replacement_character_the_cli_sends_back():
    """The canary's lone-surrogate tool name: the CLI re-sends it as U+FFFD (the row stayed intact)."""
    served = [{"type": "tool_use", "id": "t", "name": "Bash\ud800"}]
    resent = [{"type": "tool_use", "id": "t", "name": "Bash\ufffd"}]
    assert message_digest("assistant", served) == message_digest("assistant", resent)
    # Negative control: another name is another message.
    assert message_digest("assistant", served) != message_digest("assistant", [{**resent[0], "name": "Bash"}])
