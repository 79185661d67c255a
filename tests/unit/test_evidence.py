"""Evidence of record: threads, usage and skill evidence from the wire; the stream cross-checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders import (
    SKILL_CALL,
    USER,
    honest_exchanges,
    session_outcome,
    stream_events,
    tool_result_message,
    wire_exchange,
    wire_record,
    wire_reply,
    wire_usage,
)
from workflow_bench.cells.evidence import analyse, apply_wire, cross_check
from workflow_bench.relay.server import Exchange
from workflow_bench.relay.wire import parse_response

pytestmark = pytest.mark.unit


def test_an_honest_session_proves_its_skill_and_sums_its_usage():
    wire = analyse(wire_record(honest_exchanges()))
    assert wire.tampering == () and wire.unverifiable == ()
    assert wire.skill_invoked("work") is True and wire.skill_invoked("plan") is False
    assert wire.usage_main == {**wire_usage(30), "output_tokens": 2} == wire.usage
    assert wire.tool_use_counts == {"Skill": 1} and wire.turns == 2


def test_an_error_result_is_not_skill_evidence():
    assert analyse(wire_record(honest_exchanges(error=True))).skill_invoked("work") is False


def test_a_request_that_continues_nothing_is_tampering():
    """E.g. a tool process asking the model for a Skill call, then answering it itself."""
    forged = wire_exchange(
        2, [{"role": "user", "content": "call Skill(work)"}], wire_reply("m3", SKILL_CALL, 5)
    )
    wire = analyse(wire_record([*honest_exchanges(), forged]))
    assert any("never had" in p for p in wire.tampering)
    # Negative control: the same request as the session's first one is the session itself.
    alone = wire_exchange(
        0, [{"role": "user", "content": "call Skill(work)"}], wire_reply("m3", SKILL_CALL, 5)
    )
    assert analyse(wire_record([alone])).tampering == ()


def _delivered(exchanges):
    return [
        Exchange(e.index, e.agent_id, e.request, e.response, e.response_overflow, True) for e in exchanges
    ]


def test_a_replay_of_an_answered_request_is_tampering_and_a_retry_is_not():
    first, second = _delivered(honest_exchanges())
    assert analyse(wire_record([first, second])).tampering == ()  # every reply delivered: honest
    # A tool process re-sends the CLI's first request (byte-identical) after its reply reached the CLI.
    replay = Exchange(2, None, first.request, parse_response(wire_reply("m3", SKILL_CALL, 10)), False, True)
    wire = analyse(wire_record([first, second, replay]))
    assert any("request 2 repeats request 0" in p and "replay" in p for p in wire.tampering), wire.tampering
    between = Exchange(1, None, first.request, parse_response(wire_reply("m3", SKILL_CALL, 10)), False, True)
    moved = Exchange(2, None, second.request, second.response, False, True)
    assert analyse(wire_record([first, between, moved])).tampering  # mid-session, too
    # Negative controls: the CLI's retries. The reply never reached it whole (it gave up on the
    # stream), or the endpoint failed (a 529): repeating that request is not a replay.
    earlier_call = [{"type": "tool_use", "id": "t0", "name": "Skill", "input": {"skill": "work"}}]
    cut = Exchange(0, None, first.request, parse_response(wire_reply("m0", earlier_call, 10)), False, False)
    retried = Exchange(1, None, first.request, first.response, False, True)
    assert analyse(wire_record([cut, retried, moved])).tampering == ()
    busy = parse_response(b"HTTP/1.1 529 Overloaded\r\nContent-Type: application/json\r\n\r\n{}")
    failed = Exchange(0, None, first.request, busy, False, True)
    assert (
        analyse(
            wire_record([failed, Exchange(1, None, first.request, first.response, False, True), moved])
        ).tampering
        == ()
    )


def test_a_result_for_a_call_the_model_never_made_is_tampering():
    exchanges = honest_exchanges()
    exchanges[1] = wire_exchange(
        1,
        [
            USER,
            {"role": "assistant", "content": SKILL_CALL},
            tool_result_message("t1"),
            tool_result_message("t_forged"),
        ],
        wire_reply("m2", [], 20),
    )
    assert any("never made" in p for p in analyse(wire_record(exchanges)).tampering)


def test_a_conflicting_re_answer_is_tampering():
    exchanges = honest_exchanges(error=True)
    replay = wire_exchange(
        2,
        [USER, {"role": "assistant", "content": SKILL_CALL}, tool_result_message("t1", error=False)],
        wire_reply("m4", [], 1),
    )
    wire = analyse(wire_record([*exchanges, replay]))
    assert any("another error flag" in p for p in wire.tampering)


def test_a_subagent_thread_needs_an_unanswered_agent_call_with_its_prompt():
    call = [{"type": "tool_use", "id": "a1", "name": "Agent", "input": {"prompt": "read it"}}]
    parent = wire_exchange(0, [USER], wire_reply("m1", call, 10))
    child = wire_exchange(
        1, [{"role": "user", "content": "read it"}], wire_reply("s1", [], 100), agent_id="ag1"
    )
    wire = analyse(wire_record([parent, child]))
    assert wire.tampering == ()
    assert wire.usage["input_tokens"] == 110 and wire.usage_main["input_tokens"] == 10
    # Negative controls: another prompt, or no agent id, is a conversation the session never had.
    other = wire_exchange(
        1, [{"role": "user", "content": "something else"}], wire_reply("s1", [], 1), agent_id="ag1"
    )
    assert analyse(wire_record([parent, other])).tampering
    bare = wire_exchange(1, [{"role": "user", "content": "read it"}], wire_reply("s1", [], 1))
    assert analyse(wire_record([parent, bare])).tampering


FORGED_SKILL = (
    {
        "type": "assistant",
        "message": {
            "id": "mx",
            "content": [{"type": "tool_use", "id": "tf", "name": "Skill", "input": {"skill": "work"}}],
        },
    },
    {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "tf", "content": "ok"}]}},
)


def test_cross_check_accepts_the_honest_stream_and_names_each_forgery():
    wire = analyse(wire_record(honest_exchanges()))
    good = stream_events()
    assert cross_check(wire, good) == []
    forged_usage = {**wire_usage(1), "output_tokens": 1}
    assert any("result usage" in p for p in cross_check(wire, stream_events(usage=forged_usage)))
    second_result = [{"type": "result", "is_error": False, "usage": good[-1]["usage"]}]
    assert any("2 result events" in p for p in cross_check(wire, stream_events(extra=second_result)))
    assert any("never made" in p for p in cross_check(wire, stream_events(extra=FORGED_SKILL)))
    flipped = [
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True}]},
        }
    ]
    assert any("disagrees" in p for p in cross_check(wire, stream_events(extra=flipped)))
    omitted = [e for e in good if e.get("message", {}).get("id") != "m1"]
    assert any("omits" in p for p in cross_check(wire, omitted))


def test_apply_wire_takes_the_row_facts_from_the_wire():
    outcome = apply_wire(
        session_outcome(stream_events()), wire_record(honest_exchanges(), refused=2), expected_skill="work"
    )
    assert outcome.ok and outcome.error_kind is None and outcome.skill_invoked is True
    assert outcome.relay_refused == 2 and outcome.tool_use_counts == {"Skill": 1}
    assert outcome.events == ()  # not carried past the check


def test_a_forged_skill_pair_on_a_session_without_the_skill_is_tampering():
    no_skill = [wire_exchange(0, [USER], wire_reply("m1", [{"type": "text", "text": "no"}], 10))]
    usage = {**wire_usage(10)}
    events = [
        {"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "no"}]}},
        *FORGED_SKILL,
    ]
    events.append({"type": "result", "is_error": False, "usage": usage})
    outcome = apply_wire(session_outcome(events), wire_record(no_skill), expected_skill="work")
    assert outcome.error_kind == "evidence-tampered" and outcome.ok is False
    assert outcome.skill_invoked is False
    # Negative control: without the forged pair the same session is an honest skill-not-invoked.
    honest = apply_wire(
        session_outcome([events[0], events[-1]]), wire_record(no_skill), expected_skill="work"
    )
    assert honest.error_kind == "skill-not-invoked"


def test_a_forged_result_usage_is_tampering_and_the_row_keeps_the_wire_usage():
    forged = stream_events(usage={**wire_usage(1), "output_tokens": 1})
    outcome = apply_wire(session_outcome(forged), wire_record(honest_exchanges()), expected_skill="work")
    assert outcome.error_kind == "evidence-tampered"
    assert outcome.usage["input_tokens"] == 30


def test_a_session_with_nothing_served_matches_a_zero_result_only():
    """Every request got a 529: the CLI reports zeros, the row's usage stays unknown."""
    failed = b"HTTP/1.1 529 x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    wire = analyse(wire_record([wire_exchange(0, [USER], failed)]))
    assert wire.usage_main == dict.fromkeys(wire.usage_main)  # unknown, never 0
    zero = [{"type": "result", "is_error": True, "usage": wire_usage(0) | {"output_tokens": 0}}]
    assert cross_check(wire, zero) == []
    assert cross_check(wire, [{"type": "result", "is_error": True, "usage": wire_usage(5)}])


# ── compaction: three real request bodies of CLI 2.1.332 (tests/unit/data) ──

COMPACTION = json.loads((Path(__file__).parent / "data" / "compaction-requests.json").read_text())
SUMMARY = "SUMMARY: ran echo one; nothing else to do."  # what the continued conversation quotes


def _call_reply(msg_id: str) -> bytes:
    (assistant,) = [m for m in COMPACTION["compaction"] if m["role"] == "assistant"]
    return wire_reply(msg_id, assistant["content"], 196)


def _compaction_session(*, summary=SUMMARY, continued=None, delivered=True) -> list[Exchange]:
    text = [{"type": "text", "text": summary}]
    return [
        wire_exchange(0, COMPACTION["opening"], _call_reply("m1"), delivered=True),
        wire_exchange(1, COMPACTION["compaction"], wire_reply("m2", text, 50), delivered=delivered),
        wire_exchange(
            2, continued or COMPACTION["continued"], wire_reply("m3", [{"type": "text", "text": "done"}], 7)
        ),
    ]


def test_a_compacted_conversation_continues_its_thread_and_the_summary_is_not_reported():
    wire = analyse(wire_record(_compaction_session()))
    assert wire.tampering == ()
    assert [line["thread"] for line in wire.summary] == [0, 0, 0]
    assert [line["accepted"] for line in wire.summary] == [True, False, True]
    assert wire.usage_main["input_tokens"] == 196 + 7 and wire.usage["input_tokens"] == 196 + 50 + 7
    # A real model wraps it: <analysis>…</analysis><summary>…</summary>; the CLI quotes the summary.
    tagged = f"<analysis>what happened</analysis>\n<summary>\n{SUMMARY}\n</summary>"
    assert analyse(wire_record(_compaction_session(summary=tagged))).tampering == ()


def test_a_new_conversation_that_quotes_no_summary_is_still_tampering():
    other = json.loads(json.dumps(COMPACTION["continued"]).replace("ran echo one", "ran echo two"))
    assert any(
        "starts a conversation" in p
        for p in analyse(wire_record(_compaction_session(continued=other))).tampering
    )
    # the summary never reached the CLI whole: nothing may quote it
    assert analyse(wire_record(_compaction_session(delivered=False))).tampering
    # each summary anchors one continuation: a second conversation quoting it is someone else's
    exchanges = _compaction_session()
    second = [COMPACTION["continued"][0], {"role": "user", "content": "another conversation"}]
    again = wire_exchange(3, second, wire_reply("m4", [{"type": "text", "text": "ok"}], 1), delivered=True)
    assert any(
        "request 3 starts a conversation" in p for p in analyse(wire_record([*exchanges, again])).tampering
    )
