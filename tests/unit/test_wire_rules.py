"""The wire parser's rules on hostile or odd input: facts marked unparseable, never an exception.

Everything parsed here comes from the sandbox (requests) or the provider (responses), so every
shape must yield facts: empty tuples rather than None, an unknown model or stream flag as None,
a body we cannot read named in ``parse_error``. And the normalization that lets the CLI's own
re-serialization count as "the same message": thinking blocks, empty text blocks and
``cache_control`` never change a digest; anything else does.
"""

from __future__ import annotations

import json

import pytest

from workflow_bench.relay.wire import message_digest, parse_request, parse_response

pytestmark = pytest.mark.unit


def _request(messages, **extra) -> bytes:
    return json.dumps({"model": "m", "stream": True, "messages": messages, **extra}).encode()


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"{not json", "request body is not JSON"),
        (b"[1]", "request body has no messages list"),
        (json.dumps({"messages": "x"}).encode(), "request body has no messages list"),
    ],
)
def test_an_unreadable_request_has_empty_facts_and_says_why(body, error) -> None:
    facts = parse_request(body)
    assert facts.parse_error.startswith(error)
    assert (facts.model, facts.stream) == (None, None)
    assert (facts.messages, facts.first_user_texts, facts.tool_results) == ((), (), ())


def test_a_request_error_message_is_bounded() -> None:
    assert len(parse_request(b"{" + b"x" * 5000).parse_error) <= 200


def test_a_non_object_message_keeps_the_model_and_stream_it_did_read() -> None:
    facts = parse_request(_request([{"role": "user", "content": "hi"}, "not an object"]))
    assert facts.parse_error == "a message is not an object"
    assert (facts.model, facts.stream) == ("m", True)
    assert (facts.messages, facts.first_user_texts, facts.tool_results) == ((), (), ())


def test_a_model_or_stream_of_the_wrong_type_is_unknown() -> None:
    facts = parse_request(json.dumps({"model": 5, "stream": "yes", "messages": []}).encode())
    assert (facts.model, facts.stream, facts.parse_error) == (None, None, None)
    assert facts.first_user_texts == ()


def test_odd_content_blocks_are_carried_not_fatal() -> None:
    content = [
        "plain",
        7,
        None,
        {"type": "tool_result"},
        {"type": "text", "text": 3},
        {"type": "text", "text": "ok"},
    ]
    facts = parse_request(_request([{"role": "user", "content": content}]))
    assert facts.parse_error is None and len(facts.messages) == 1
    assert facts.first_user_texts == ("ok",)  # only real text blocks of the first message
    assert facts.tool_results == ()  # a tool_result without a string id is no result


def test_tool_results_carry_their_error_flag_and_a_digest_of_their_content() -> None:
    def result(content, **extra):
        block = {"type": "tool_result", "tool_use_id": "t1", "content": content, **extra}
        return parse_request(_request([{"role": "user", "content": [block]}])).tool_results[0]

    assert result("a").is_error is False and result("a", is_error=True).is_error is True
    assert result("a", is_error="true").is_error is False  # only the JSON true is an error flag
    assert result("a").digest == result([{"type": "text", "text": "a"}]).digest  # same content
    assert result("a").digest != result("b").digest
    assert result("").digest != result("a").digest
    no_content = {"type": "tool_result", "tool_use_id": "t1"}
    missing = parse_request(_request([{"role": "user", "content": [no_content]}])).tool_results[0]
    assert missing.digest == result("").digest  # an absent content is the empty content


def test_only_user_messages_carry_tool_results() -> None:
    block = {"type": "tool_result", "tool_use_id": "t1", "content": "x"}
    facts = parse_request(_request([{"role": "assistant", "content": [block]}]))
    assert facts.tool_results == ()


def test_reserialization_does_not_change_a_digest_but_content_does() -> None:
    text = {"type": "text", "text": "a"}
    base = message_digest("assistant", [text])
    assert message_digest("assistant", "a") == base
    assert message_digest("assistant", [{"type": "thinking", "thinking": "x"}, text]) == base
    assert message_digest("assistant", [text, {"type": "redacted_thinking", "data": "x"}]) == base
    assert message_digest("assistant", [{"type": "text", "text": ""}, text]) == base
    assert message_digest("assistant", [{**text, "cache_control": {"type": "ephemeral"}}]) == base
    # negative controls: real content after an ignored block still counts, and so does the role
    assert message_digest("assistant", [{"type": "thinking", "thinking": "x"}]) != base
    assert message_digest("assistant", [{"type": "text", "text": ""}]) != base
    assert message_digest("user", [text]) != base
    assert message_digest("assistant", [text, {"type": "text", "text": "b"}]) != base


def test_a_tool_use_is_identified_by_its_id_and_name_not_its_rewritten_input() -> None:
    use = {"type": "tool_use", "id": "t1", "name": "Bash"}
    assert message_digest(
        "assistant", [{**use, "input": {"command": "cd /workspace && ls"}}]
    ) == message_digest("assistant", [{**use, "input": {"command": "ls"}}])
    assert message_digest("assistant", [use]) != message_digest("assistant", [{**use, "id": "t2"}])
    assert message_digest("assistant", [use]) != message_digest("assistant", [{**use, "name": "Read"}])


def test_digests_do_not_depend_on_key_order_but_do_on_every_character() -> None:
    a = message_digest("user", [{"type": "text", "text": "é"}])
    assert message_digest("user", [{"text": "é", "type": "text"}]) == a
    assert len(a) == 32 and a != message_digest("user", [{"type": "text", "text": "e"}])


# --- responses -----------------------------------------------------------------------------


def _http(body: bytes, *, status="200 OK", headers=("Content-Type: application/json",)) -> bytes:
    return f"HTTP/1.1 {status}\r\n".encode() + "".join(f"{h}\r\n" for h in headers).encode() + b"\r\n" + body


MESSAGE = json.dumps(
    {
        "id": "msg_1",
        "type": "message",
        "content": [{"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": "work"}}],
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
).encode()


def test_a_chunked_body_with_extensions_and_several_chunks_is_read_whole() -> None:
    chunked = b"".join(
        f"{len(part):x};ext=1\r\n".encode() + part + b"\r\n" for part in (MESSAGE[:10], MESSAGE[10:])
    )
    facts = parse_response(_http(chunked + b"0\r\n\r\n", headers=("Transfer-Encoding: chunked",)))
    assert facts.parse_error is None and facts.completed and facts.message_id == "msg_1"


@pytest.mark.parametrize(
    ("tail", "problem"),
    [(b"", "chunked body ended mid-chunk"), (b"zz\r\n", "malformed chunk size")],
)
def test_a_broken_chunked_body_keeps_what_arrived_but_is_not_complete(tail, problem) -> None:
    body = f"{len(MESSAGE):x}\r\n".encode() + MESSAGE + b"\r\n" + tail
    facts = parse_response(_http(body, headers=("Transfer-Encoding: chunked",)))
    assert facts.parse_error == problem and facts.completed is False and facts.status == 200
    assert facts.message_id == "msg_1" and facts.usage["input_tokens"] == 5
    assert [u.id for u in facts.tool_uses] == ["t1"] and facts.reply_digest is not None


def test_a_chunk_cut_short_is_mid_chunk() -> None:
    body = f"{len(MESSAGE) + 10:x}\r\n".encode() + MESSAGE
    facts = parse_response(_http(body, headers=("Transfer-Encoding: chunked",)))
    assert facts.parse_error == "chunked body ended mid-chunk" and facts.completed is False


def test_a_compressed_response_keeps_its_status_and_unknown_usage() -> None:
    facts = parse_response(_http(b"\x1f\x8b", headers=("Content-Encoding: gzip",)))
    assert facts.status == 200 and facts.parse_error == "compressed response (gzip) cannot be read"
    assert set(facts.usage.values()) == {None} and facts.tool_uses == () and facts.completed is False


def test_a_response_without_a_status_is_unparseable_not_an_exception() -> None:
    for raw in (b"HTTP/1.1 200 OK\r\nContent-Type: x", b"garbage\r\n\r\n", b""):
        facts = parse_response(raw)
        assert facts.status is None and facts.parse_error and facts.completed is False
        assert set(facts.usage.values()) == {None} and facts.tool_uses == ()


def test_a_reason_phrase_with_spaces_and_a_header_value_with_colons_are_fine() -> None:
    facts = parse_response(
        _http(MESSAGE, status="200 All Good Here", headers=("Content-Type: application/json; x=a:b",))
    )
    assert facts.status == 200 and facts.completed and facts.parse_error is None


def test_odd_tool_use_blocks_are_skipped_or_given_empty_input() -> None:
    content = [
        "text",
        {"type": "tool_use", "id": 5, "name": "Bash"},
        {"type": "tool_use", "id": "t2", "name": None},
        {"type": "tool_use", "id": "t3", "name": "Bash", "input": "ls"},
    ]
    body = json.dumps({"id": "m", "type": "message", "content": content, "usage": {}}).encode()
    facts = parse_response(_http(body))
    assert [(u.id, u.name, dict(u.input)) for u in facts.tool_uses] == [("t3", "Bash", {})]
    assert facts.status == 200
