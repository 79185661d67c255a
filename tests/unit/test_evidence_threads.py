"""The wire record read as conversations: retries, cut streams, replayed ids and the per-exchange record.

Pins the accounting rules of `cells.evidence.analyse` that the honest/forged cases in
test_evidence.py do not reach: a retry (the same request again) continues its conversation and
only the reply the CLI kept counts toward the session's usage, while every reply served counts
as spend; a stream cut mid-reply may still be billed; one message served twice is spent once; a
200 the relay could not read makes the session unverifiable (an error status does not); and the
wire.jsonl line of each exchange records its facts.
"""

from __future__ import annotations

import json

import pytest

from tests.builders import (
    SKILL_CALL,
    USER,
    honest_exchanges,
    wire_exchange,
    wire_record,
    wire_reply,
    wire_usage,
)
from workflow_bench.cells.evidence import analyse, wire_lines
from workflow_bench.relay.server import Exchange, WireRecord
from workflow_bench.relay.wire import ResponseFacts

pytestmark = pytest.mark.unit
TEXT = [{"type": "text", "text": "a"}]


def _facts(*, status=200, message_id="mx", usage=None, completed=True, parse_error=None) -> ResponseFacts:
    return ResponseFacts(
        status=status,
        message_id=message_id,
        usage=usage or wire_usage(7),
        tool_uses=(),
        completed=completed,
        reply_digest=None,
        parse_error=parse_error,
    )


def _raw(index, response, *, messages=(USER,), overflow=False) -> Exchange:
    base = wire_exchange(index, list(messages), wire_reply("unused", TEXT, 1))
    return Exchange(index, None, base.request, response, overflow)


def test_a_retry_continues_its_conversation_and_only_the_kept_reply_is_the_sessions() -> None:
    first = wire_exchange(0, [USER], wire_reply("m0", TEXT, 10))
    retry = wire_exchange(1, [USER], wire_reply("m1", TEXT, 20))
    wire = analyse(wire_record([first, retry]))
    assert wire.tampering == ()
    assert wire.usage_main["input_tokens"] == 20 and wire.turns == 1  # the reply the CLI kept
    assert wire.usage["input_tokens"] == 30  # both replies were served: both are spend
    assert [line["accepted"] for line in wire.summary] == [False, True]
    assert [line["thread"] for line in wire.summary] == [0, 0]


def test_a_cut_stream_is_still_spend_but_not_a_turn() -> None:
    cut = _raw(0, _facts(completed=False, usage=wire_usage(7)))
    retry = wire_exchange(1, [USER], wire_reply("m1", TEXT, 10))
    wire = analyse(wire_record([cut, retry]))
    assert wire.tampering == () and wire.unverifiable == ()
    assert wire.usage["input_tokens"] == 17 and wire.turns == 1
    # CLI 2.1.332 counts a message from its message_start on (measured, tests/e2e/test_fork_accounting)
    assert wire.usage_main["input_tokens"] == 17
    unstarted = _raw(0, _facts(completed=False, message_id=None, usage=wire_usage(7)))
    assert analyse(wire_record([unstarted, retry])).usage_main["input_tokens"] == 10


def test_one_message_served_twice_is_spent_once_but_messages_without_ids_each_count() -> None:
    same = [
        wire_exchange(0, [USER], wire_reply("m1", TEXT, 10)),
        wire_exchange(1, [USER], wire_reply("m1", TEXT, 10)),
    ]
    assert analyse(wire_record(same)).usage["input_tokens"] == 10
    anonymous = [
        _raw(0, _facts(message_id=None, usage=wire_usage(10))),
        _raw(1, _facts(message_id=None, usage=wire_usage(10))),
    ]
    assert analyse(wire_record(anonymous)).usage["input_tokens"] == 20


def test_an_unreadable_200_is_unverifiable_an_unreadable_error_status_is_not() -> None:
    bad = analyse(wire_record([_raw(0, _facts(parse_error="not SSE", completed=False))]))
    assert bad.unverifiable == ("response 0: not SSE",)
    error = analyse(wire_record([_raw(0, _facts(status=529, parse_error="not SSE", completed=False))]))
    assert error.unverifiable == ()


def test_a_response_over_the_record_cap_is_unverifiable() -> None:
    wire = analyse(wire_record([_raw(0, _facts(), overflow=True)]))
    assert wire.unverifiable == ("response 0 exceeded the record cap",)
    assert analyse(WireRecord((), 0, (), True)).unverifiable == ("the wire record exceeded its exchange cap",)


def test_continuing_a_conversation_under_another_agent_id_is_tampering() -> None:
    first = wire_exchange(0, [USER], wire_reply("m0", TEXT, 10))
    follow = [USER, {"role": "assistant", "content": TEXT}, {"role": "user", "content": "more"}]
    other = wire_exchange(1, follow, wire_reply("m1", TEXT, 10), agent_id="ag1")
    assert analyse(wire_record([first, other])).tampering == (
        "request 1 continues a conversation under another agent id",
    )
    same = wire_exchange(1, follow, wire_reply("m1", TEXT, 10))
    assert analyse(wire_record([first, same])).tampering == ()  # negative control


def test_a_tool_call_id_served_twice_is_tampering() -> None:
    again = wire_exchange(2, [USER], wire_reply("m9", SKILL_CALL, 1))  # a retry answered with a reused id
    assert analyse(wire_record([*honest_exchanges(), again])).tampering == (
        "response 2 repeats tool call id t1",
    )


def test_each_exchange_has_one_wire_line_with_its_facts() -> None:
    wire = analyse(wire_record(honest_exchanges()))
    first = wire.summary[0]
    assert first == {
        "request": 0,
        "thread": 0,
        "agent_id": None,
        "model": "m",
        "messages": 1,
        "tool_results": [],
        "status": 200,
        "message_id": "m1",
        "completed": True,
        "accepted": True,
        "usage": wire_usage(10),
        "tool_uses": [["t1", "Skill"]],
    }
    assert wire.summary[1]["tool_results"] == [["t1", False]] and wire.summary[1]["messages"] == 3
    lines = wire_lines(wire.summary).decode().splitlines()
    assert [json.loads(line) for line in lines] == list(wire.summary)
    assert lines[0] == json.dumps(first, sort_keys=True)
