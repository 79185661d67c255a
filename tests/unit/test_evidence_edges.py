"""Evidence edge cases: conversations continued in unusual ways, and the bounds on what is quoted.

Rules (cells.evidence): a request that is an earlier request plus its reply and nothing more
(an assistant prefill) continues that conversation; a subagent thread keeps its agent id; a reply
the provider never finished anchors no continuation; one bad tool result does not hide the next;
every id or tool name quoted into a problem, a count or the wire record is bounded; and the
outcome of a session the wire fully explains carries no stale failure detail from the stream.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.builders import (
    SKILL_CALL,
    USER,
    honest_exchanges,
    session_outcome,
    stream_events,
    wire_exchange,
    wire_record,
    wire_reply,
    wire_usage,
)
from workflow_bench.cells.evidence import analyse, apply_wire, cross_check
from workflow_bench.cells.skill_evidence import TOOL_NAME_CHARS
from workflow_bench.relay.server import Exchange, WireRecord
from workflow_bench.relay.wire import ResponseFacts, message_digest

pytestmark = pytest.mark.unit
TEXT = [{"type": "text", "text": "a"}]
LONG = "z" * 500
BOUNDED = "z" * 63 + "…"


def test_a_prefill_request_continues_the_conversation_it_extends() -> None:
    first = wire_exchange(0, [USER], wire_reply("m0", TEXT, 10))
    prefill = wire_exchange(1, [USER, {"role": "assistant", "content": TEXT}], wire_reply("m1", TEXT, 10))
    assert analyse(wire_record([first, prefill])).tampering == ()


def test_a_subagent_thread_keeps_its_agent_id() -> None:
    call = [{"type": "tool_use", "id": "a1", "name": "Agent", "input": {"prompt": "read it"}}]
    parent = wire_exchange(0, [USER], wire_reply("m1", call, 10))
    child = wire_exchange(
        1, [{"role": "user", "content": "read it"}], wire_reply("s1", TEXT, 1), agent_id="ag1"
    )
    follow = [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": TEXT},
        {"role": "user", "content": "more"},
    ]
    again = wire_exchange(2, follow, wire_reply("s2", TEXT, 1), agent_id="ag1")
    wire = analyse(wire_record([parent, child, again]))
    assert wire.tampering == ()
    assert [line["agent_id"] for line in wire.summary] == [None, "ag1", "ag1"]
    assert [line["thread"] for line in wire.summary] == [0, 1, 1]


def test_a_reply_that_never_finished_anchors_no_continuation() -> None:
    # the digest the reply would have had: only its being unfinished keeps it from anchoring
    cut = ResponseFacts(200, "m0", wire_usage(3), (), False, message_digest("assistant", TEXT))
    base = wire_exchange(0, [USER], wire_reply("unused", TEXT, 1))
    first = Exchange(0, None, base.request, cut, False)
    wire = analyse(wire_record([first]))
    follow = wire_exchange(
        1,
        [USER, {"role": "assistant", "content": TEXT}, {"role": "user", "content": "go"}],
        wire_reply("m1", TEXT, 1),
    )
    assert analyse(wire_record([first, follow])).tampering == (
        "request 1 starts a conversation the session never had",
    )
    assert wire.usage["input_tokens"] == 3  # a cut reply may still be billed


def test_one_unknown_tool_result_does_not_hide_the_next() -> None:
    first, _ = honest_exchanges()
    results = [
        {"type": "tool_result", "tool_use_id": "zz", "content": "x"},
        {"type": "tool_result", "tool_use_id": "t1", "content": "x"},
    ]
    answer = wire_exchange(
        1,
        [USER, {"role": "assistant", "content": SKILL_CALL}, {"role": "user", "content": results}],
        wire_reply("m2", TEXT, 1),
    )
    flipped = wire_exchange(
        2,
        [
            USER,
            {"role": "assistant", "content": SKILL_CALL},
            {"role": "user", "content": [{**results[1], "is_error": True}]},
        ],
        wire_reply("m3", TEXT, 1),
    )
    tampering = analyse(wire_record([first, answer, flipped])).tampering
    assert "request 1 answers tool call zz the model never made" in tampering
    assert "request 2 re-answers t1 with another error flag" in tampering


def test_every_quoted_id_is_bounded() -> None:
    use = [{"type": "tool_use", "id": LONG, "name": "Bash", "input": {}}]
    first = wire_exchange(0, [USER], wire_reply("m0", use, 1))
    answers = lambda i, flag: wire_exchange(  # noqa: E731
        i,
        [
            USER,
            {"role": "assistant", "content": use},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": LONG, "is_error": flag}]},
        ],
        wire_reply(f"m{i}", TEXT, 1),
    )
    stranger = wire_exchange(
        3,
        [USER, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": LONG + "y"}]}],
        wire_reply("m3", TEXT, 1),
    )
    repeat = wire_exchange(4, [USER], wire_reply("m4", use, 1))
    wire = analyse(wire_record([first, answers(1, False), answers(2, True), stranger, repeat]))
    assert f"request 2 re-answers {BOUNDED} with another error flag" in wire.tampering
    assert f"request 3 answers tool call {BOUNDED} the model never made" in wire.tampering
    assert f"response 4 repeats tool call id {BOUNDED}" in wire.tampering
    honest = analyse(wire_record([first, answers(1, False)]))
    flipped = {
        "type": "user",
        "message": {"content": [{"type": "tool_result", "tool_use_id": LONG, "is_error": True}]},
    }
    problems = cross_check(honest, [flipped])
    assert f"the stream's result for {BOUNDED} disagrees with the one sent" in problems
    assert f"the stream omits tool call {BOUNDED} the model made" in problems


def test_tool_names_are_bounded_and_counted_per_name() -> None:
    name = "T" * 300
    calls = [{"type": "tool_use", "id": f"t{i}", "name": name, "input": {}} for i in range(2)]
    wire = analyse(wire_record([wire_exchange(0, [USER], wire_reply("m0", calls, 1))]))
    [(counted, count)] = wire.tool_use_counts.items()
    assert count == 2 and len(counted) == TOOL_NAME_CHARS
    assert [len(n) for _, n in wire.summary[0]["tool_uses"]] == [TOOL_NAME_CHARS] * 2
    long_agent = wire_exchange(0, [USER], wire_reply("m0", TEXT, 1), agent_id="a" * 300)
    assert len(analyse(wire_record([long_agent])).summary[0]["agent_id"]) == TOOL_NAME_CHARS


def test_the_evidence_counts_exchanges_and_refusals() -> None:
    wire = analyse(WireRecord(tuple(honest_exchanges()), 3, (), False))
    assert (wire.exchanges, wire.refused) == (2, 3)


def test_a_session_the_wire_explains_drops_the_streams_stale_failure() -> None:
    stale = replace(
        session_outcome(stream_events()),
        error_kind="skill-not-invoked",
        ok=False,
        error_detail="x",
        transcript_missing=True,
    )
    outcome = apply_wire(stale, wire_record(honest_exchanges()), expected_skill="work")
    assert (outcome.ok, outcome.error_kind, outcome.error_detail, outcome.transcript_missing) == (
        True,
        None,
        None,
        False,
    )


def test_an_unverified_session_still_carries_the_wire_facts() -> None:
    record = WireRecord(tuple(honest_exchanges()), 2, (), True)
    outcome = apply_wire(session_outcome(stream_events()), record, expected_skill="work")
    assert outcome.error_kind == "evidence-unverified"
    assert outcome.relay_refused == 2 and outcome.tool_use_counts == {"Skill": 1}
    assert (
        outcome.usage_wire["input_tokens"] == 30 and len(outcome.wire_summary) == 2 and outcome.events == ()
    )


@pytest.mark.parametrize(
    ("problem", "tampered"),
    [
        ("line 2 is not JSON", True),
        ("line 2 is not UTF-8", True),
        ("a non-finite number", True),
        ("cut mid-line", False),
    ],
)
def test_only_bytes_the_cli_never_prints_are_foreign(problem: str, tampered: bool) -> None:
    detail = {"process_state": "exited", "returncode": 0, "event_stream_error": problem}
    outcome = replace(session_outcome(stream_events()), events=(), error_detail=detail)
    kind = apply_wire(outcome, wire_record(honest_exchanges()), expected_skill="work").error_kind
    assert (kind == "evidence-tampered") is tampered


def test_a_session_without_events_or_detail_is_judged_on_the_wire_alone() -> None:
    outcome = replace(session_outcome(stream_events()), events=(), error_detail=None)
    assert apply_wire(outcome, wire_record(honest_exchanges()), expected_skill="work").error_kind is None
