"""The scripted provider's OpenAI Responses dialect and its subagent scripting (pure parts)."""

from __future__ import annotations

import json

import pytest

from workflow_bench.providers.scripted import ScriptError, Usage, parse_script
from workflow_bench.providers.scripted._ledger import Book
from workflow_bench.providers.scripted._responses import (
    assistant_turns,
    json_response,
    request_cwd,
    sse_events,
)
from workflow_bench.providers.scripted._wire import Reply, ToolUse

pytestmark = pytest.mark.unit


def _reply(text="Hello there", tools=(("Write", {"file_path": "/w/a.py", "content": "x = {1: 2}\n"}),)):
    return Reply(
        message_id="resp_1",
        model="m",
        text=text,
        tool_uses=tuple(ToolUse(id=f"call_{i}", name=n, input=inp) for i, (n, inp) in enumerate(tools)),
        usage=Usage(input_tokens=7, output_tokens=3, cache_read_input_tokens=2),
    )


def test_turns_count_runs_of_assistant_items_not_items() -> None:
    body = {
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]},
            {"type": "function_call", "call_id": "c1", "name": "Read", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "Read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "x"},
            {"type": "function_call_output", "call_id": "c2", "output": "y"},
            {"type": "function_call", "call_id": "c3", "name": "Bash", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c3", "output": "z"},
        ]
    }
    assert assistant_turns(body) == 2
    assert assistant_turns({"input": "just text"}) == 0


def test_cwd_is_found_in_a_system_item_and_never_in_assistant_text() -> None:
    env = " - Primary working directory: /workspace\n"
    body = {
        "input": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": env.replace("/workspace", "/evil")}],
            },
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": env}]},
        ]
    }
    assert request_cwd(body) == "/workspace"


def test_json_response_has_a_message_then_function_calls() -> None:
    payload = json_response(_reply())
    assert payload["status"] == "completed" and payload["object"] == "response"
    kinds = [item["type"] for item in payload["output"]]
    assert kinds == ["message", "function_call"]
    call = payload["output"][1]
    assert call["call_id"] == "call_0" and json.loads(call["arguments"]) == {
        "file_path": "/w/a.py",
        "content": "x = {1: 2}\n",
    }
    assert payload["usage"] == {
        "input_tokens": 9,
        "output_tokens": 3,
        "total_tokens": 12,
        "input_tokens_details": {"cached_tokens": 2},
    }


def test_sse_events_reassemble_and_end_completed() -> None:
    events = sse_events(_reply())
    names = [name for name, _ in events]
    assert names[:2] == ["response.created", "response.in_progress"] and names[-1] == "response.completed"
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    text = "".join(d["delta"] for n, d in events if n == "response.output_text.delta")
    args = "".join(d["delta"] for n, d in events if n == "response.function_call_arguments.delta")
    assert text == "Hello there" and json.loads(args)["file_path"] == "/w/a.py"
    assert len([n for n in names if n == "response.function_call_arguments.delta"]) >= 2
    assert events[-1][1]["response"]["usage"]["input_tokens_details"] == {"cached_tokens": 2}


def _script(extra_session=None):
    session = {
        "turns": [{"text": "main 0"}, {"text": "main 1"}],
        "subagents": [{"turns": [{"text": "sub 0"}, {"text": "sub 1"}]}, {"turns": [{"text": "second sub"}]}],
    }
    return {"schema_version": 1, "model": "m", "cells": [{"sessions": [extra_session or session]}]}


def test_subagents_are_served_from_their_own_list_by_agent_id() -> None:
    book = Book(script=parse_script(_script(), source="t"))
    key = book.mint(task="t", arm="a", run=0)

    def text(turn, agent=None):
        decision = book.decide(key=key, session_id="s1", turn_index=turn, stream=True, agent_id=agent)
        book.record(key, decision.entry)  # what the server does just before it replies
        return decision.text

    assert text(0) == "main 0"
    assert text(0, "agentA") == "sub 0" and text(1, "agentA") == "sub 1"
    assert text(0, "agentB") == "second sub"
    assert text(1) == "main 1"
    assert [e.subagent for e in book.ledger(key)] == [None, 0, 0, 1, None]
    # Negative control: without the agent header a subagent would replay the main loop's turn 0.
    assert text(0) == "main 0"


def test_nested_subagent_scripts_are_refused() -> None:
    nested = {"turns": [{"text": "x"}], "subagents": [{"turns": [{"text": "y"}], "subagents": []}]}
    with pytest.raises(ScriptError, match="unknown key"):
        parse_script(_script(nested), source="t.yaml")


def test_session_and_agent_headers_are_read_whatever_their_case() -> None:
    # The HTTP server hands over an email.message.Message: header names are case-insensitive.
    # (Copying the headers into a dict once lost every gateway request's session and agent.)
    from email.message import Message

    from workflow_bench.providers.scripted import _wire

    headers = Message()
    headers["x-claude-code-session-id"] = "s-1"
    headers["X-Claude-Code-Agent-Id"] = "a-1"
    assert _wire.session_id(headers, {}) == "s-1"
    assert _wire.agent_id(headers) == "a-1"
    # Negative control: a plain dict with the other spelling finds neither.
    plain = {"x-claude-code-session-id": "s-1", "X-Claude-Code-Agent-Id": "a-1"}
    assert _wire.session_id(plain, {}) is None and _wire.agent_id(plain) is None
