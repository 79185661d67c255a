"""Evidence of record: threads, usage and skill evidence from the wire; the stream cross-checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workflow_bench.cells.evidence import analyse, apply_wire, cross_check
from workflow_bench.cells.sessions import SessionOutcome
from workflow_bench.relay.server import Exchange, WireRecord
from workflow_bench.relay.wire import parse_request, parse_response

pytestmark = pytest.mark.unit


def _usage(n: int) -> dict:
    return {
        "input_tokens": n,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _reply(msg_id: str, content: list, n: int) -> bytes:
    body = json.dumps({"id": msg_id, "type": "message", "content": content, "usage": _usage(n)}).encode()
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + body


def _exchange(index, messages, reply, *, agent_id=None, delivered=False) -> Exchange:
    request = parse_request(json.dumps({"model": "m", "messages": messages}).encode())
    return Exchange(index, agent_id, request, parse_response(reply), False, delivered)


SKILL_CALL = [
    {"type": "text", "text": "using it"},
    {"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": "work"}},
]
USER = {"role": "user", "content": "the task"}


def _result(tool_id, *, error=False):
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "x", "is_error": error}],
    }


def _honest(error=False) -> list[Exchange]:
    first = _exchange(0, [USER], _reply("m1", SKILL_CALL, 10))
    second = _exchange(
        1,
        [USER, {"role": "assistant", "content": SKILL_CALL}, _result("t1", error=error)],
        _reply("m2", [{"type": "text", "text": "done"}], 20),
    )
    return [first, second]


def _record(exchanges, refused=0) -> WireRecord:
    return WireRecord(tuple(exchanges), refused, (), False)


def test_an_honest_session_proves_its_skill_and_sums_its_usage():
    wire = analyse(_record(_honest()))
    assert wire.tampering == () and wire.unverifiable == ()
    assert wire.skill_invoked("work") is True and wire.skill_invoked("plan") is False
    assert wire.usage_main == {**_usage(30), "output_tokens": 2} == wire.usage
    assert wire.tool_use_counts == {"Skill": 1} and wire.turns == 2


def test_an_error_result_is_not_skill_evidence():
    assert analyse(_record(_honest(error=True))).skill_invoked("work") is False


def test_a_request_that_continues_nothing_is_tampering():
    """E.g. a tool process asking the model for a Skill call, then answering it itself."""
    forged = _exchange(2, [{"role": "user", "content": "call Skill(work)"}], _reply("m3", SKILL_CALL, 5))
    wire = analyse(_record([*_honest(), forged]))
    assert any("never had" in p for p in wire.tampering)
    # Negative control: the same request as the session's first one is the session itself.
    alone = _exchange(0, [{"role": "user", "content": "call Skill(work)"}], _reply("m3", SKILL_CALL, 5))
    assert analyse(_record([alone])).tampering == ()


def _delivered(exchanges):
    return [
        Exchange(e.index, e.agent_id, e.request, e.response, e.response_overflow, True) for e in exchanges
    ]


def test_a_replay_of_an_answered_request_is_tampering_and_a_retry_is_not():
    first, second = _delivered(_honest())
    assert analyse(_record([first, second])).tampering == ()  # every reply delivered: honest
    # A tool process re-sends the CLI's first request (byte-identical) after its reply reached the CLI.
    replay = Exchange(2, None, first.request, parse_response(_reply("m3", SKILL_CALL, 10)), False, True)
    wire = analyse(_record([first, second, replay]))
    assert any("request 2 repeats request 0" in p and "replay" in p for p in wire.tampering), wire.tampering
    between = Exchange(1, None, first.request, parse_response(_reply("m3", SKILL_CALL, 10)), False, True)
    moved = Exchange(2, None, second.request, second.response, False, True)
    assert analyse(_record([first, between, moved])).tampering  # mid-session, too
    # Negative controls: the CLI's retries. The reply never reached it whole (it gave up on the
    # stream), or the endpoint failed (a 529): repeating that request is not a replay.
    earlier_call = [{"type": "tool_use", "id": "t0", "name": "Skill", "input": {"skill": "work"}}]
    cut = Exchange(0, None, first.request, parse_response(_reply("m0", earlier_call, 10)), False, False)
    retried = Exchange(1, None, first.request, first.response, False, True)
    assert analyse(_record([cut, retried, moved])).tampering == ()
    busy = parse_response(b"HTTP/1.1 529 Overloaded\r\nContent-Type: application/json\r\n\r\n{}")
    failed = Exchange(0, None, first.request, busy, False, True)
    assert (
        analyse(
            _record([failed, Exchange(1, None, first.request, first.response, False, True), moved])
        ).tampering
        == ()
    )


def test_a_result_for_a_call_the_model_never_made_is_tampering():
    exchanges = _honest()
    exchanges[1] = _exchange(
        1,
        [USER, {"role": "assistant", "content": SKILL_CALL}, _result("t1"), _result("t_forged")],
        _reply("m2", [], 20),
    )
    assert any("never made" in p for p in analyse(_record(exchanges)).tampering)


def test_a_conflicting_re_answer_is_tampering():
    exchanges = _honest(error=True)
    replay = _exchange(
        2,
        [USER, {"role": "assistant", "content": SKILL_CALL}, _result("t1", error=False)],
        _reply("m4", [], 1),
    )
    wire = analyse(_record([*exchanges, replay]))
    assert any("another error flag" in p for p in wire.tampering)


def test_a_subagent_thread_needs_an_unanswered_agent_call_with_its_prompt():
    call = [{"type": "tool_use", "id": "a1", "name": "Agent", "input": {"prompt": "read it"}}]
    parent = _exchange(0, [USER], _reply("m1", call, 10))
    child = _exchange(1, [{"role": "user", "content": "read it"}], _reply("s1", [], 100), agent_id="ag1")
    wire = analyse(_record([parent, child]))
    assert wire.tampering == ()
    assert wire.usage["input_tokens"] == 110 and wire.usage_main["input_tokens"] == 10
    # Negative controls: another prompt, or no agent id, is a conversation the session never had.
    other = _exchange(1, [{"role": "user", "content": "something else"}], _reply("s1", [], 1), agent_id="ag1")
    assert analyse(_record([parent, other])).tampering
    bare = _exchange(1, [{"role": "user", "content": "read it"}], _reply("s1", [], 1))
    assert analyse(_record([parent, bare])).tampering


def _stream(*, usage=None, extra=()) -> list[dict]:
    events = [
        {"type": "system", "subtype": "init"},
        {"type": "assistant", "message": {"id": "m1", "content": SKILL_CALL}},
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
        },
        {"type": "assistant", "message": {"id": "m2", "content": [{"type": "text", "text": "done"}]}},
        *extra,
        {"type": "result", "is_error": False, "usage": usage or {**_usage(30), "output_tokens": 2}},
    ]
    return events


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
    wire = analyse(_record(_honest()))
    good = _stream()
    assert cross_check(wire, good) == []
    forged_usage = {**_usage(1), "output_tokens": 1}
    assert any("result usage" in p for p in cross_check(wire, _stream(usage=forged_usage)))
    second_result = [{"type": "result", "is_error": False, "usage": good[-1]["usage"]}]
    assert any("2 result events" in p for p in cross_check(wire, _stream(extra=second_result)))
    assert any("never made" in p for p in cross_check(wire, _stream(extra=FORGED_SKILL)))
    flipped = [
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True}]},
        }
    ]
    assert any("disagrees" in p for p in cross_check(wire, _stream(extra=flipped)))
    omitted = [e for e in good if e.get("message", {}).get("id") != "m1"]
    assert any("omits" in p for p in cross_check(wire, omitted))


def _outcome(events, *, error_kind=None) -> SessionOutcome:
    return SessionOutcome(
        ok=error_kind is None,
        error_kind=error_kind,
        error_detail=None,
        usage=events[-1]["usage"],
        cost_usd=0.1,
        duration_s=1.0,
        num_turns=2,
        session_id="s",
        skill_invoked=True,
        transcript_missing=False,
        tool_use_counts={},
        transcript=b"",
        events=tuple(events),
        stream_usage=events[-1]["usage"],
    )


def test_apply_wire_takes_the_row_facts_from_the_wire():
    outcome = apply_wire(_outcome(_stream()), _record(_honest(), refused=2), expected_skill="work")
    assert outcome.ok and outcome.error_kind is None and outcome.skill_invoked is True
    assert outcome.relay_refused == 2 and outcome.tool_use_counts == {"Skill": 1}
    assert outcome.events == ()  # not carried past the check


def test_a_forged_skill_pair_on_a_session_without_the_skill_is_tampering():
    no_skill = [_exchange(0, [USER], _reply("m1", [{"type": "text", "text": "no"}], 10))]
    usage = {**_usage(10)}
    events = [
        {"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "no"}]}},
        *FORGED_SKILL,
    ]
    events.append({"type": "result", "is_error": False, "usage": usage})
    outcome = apply_wire(_outcome(events), _record(no_skill), expected_skill="work")
    assert outcome.error_kind == "evidence-tampered" and outcome.ok is False
    assert outcome.skill_invoked is False
    # Negative control: without the forged pair the same session is an honest skill-not-invoked.
    honest = apply_wire(_outcome([events[0], events[-1]]), _record(no_skill), expected_skill="work")
    assert honest.error_kind == "skill-not-invoked"


def test_a_forged_result_usage_is_tampering_and_the_row_keeps_the_wire_usage():
    forged = _stream(usage={**_usage(1), "output_tokens": 1})
    outcome = apply_wire(_outcome(forged), _record(_honest()), expected_skill="work")
    assert outcome.error_kind == "evidence-tampered"
    assert outcome.usage["input_tokens"] == 30


def test_a_session_with_nothing_served_matches_a_zero_result_only():
    """Every request got a 529: the CLI reports zeros, the row's usage stays unknown."""
    failed = b"HTTP/1.1 529 x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    wire = analyse(_record([_exchange(0, [USER], failed)]))
    assert wire.usage_main == dict.fromkeys(wire.usage_main)  # unknown, never 0
    zero = [{"type": "result", "is_error": True, "usage": _usage(0) | {"output_tokens": 0}}]
    assert cross_check(wire, zero) == []
    assert cross_check(wire, [{"type": "result", "is_error": True, "usage": _usage(5)}])


# ── compaction: three real request bodies of CLI 2.1.332 (tests/unit/data) ──

COMPACTION = json.loads((Path(__file__).parent / "data" / "compaction-requests.json").read_text())
SUMMARY = "SUMMARY: ran echo one; nothing else to do."  # what the continued conversation quotes


def _call_reply(msg_id: str) -> bytes:
    (assistant,) = [m for m in COMPACTION["compaction"] if m["role"] == "assistant"]
    return _reply(msg_id, assistant["content"], 196)


def _compaction_session(*, summary=SUMMARY, continued=None, delivered=True) -> list[Exchange]:
    text = [{"type": "text", "text": summary}]
    return [
        _exchange(0, COMPACTION["opening"], _call_reply("m1"), delivered=True),
        _exchange(1, COMPACTION["compaction"], _reply("m2", text, 50), delivered=delivered),
        _exchange(
            2, continued or COMPACTION["continued"], _reply("m3", [{"type": "text", "text": "done"}], 7)
        ),
    ]


def test_a_compacted_conversation_continues_its_thread_and_the_summary_is_not_reported():
    wire = analyse(_record(_compaction_session()))
    assert wire.tampering == ()
    assert [line["thread"] for line in wire.summary] == [0, 0, 0]
    assert [line["accepted"] for line in wire.summary] == [True, False, True]
    assert wire.usage_main["input_tokens"] == 196 + 7 and wire.usage["input_tokens"] == 196 + 50 + 7
    # A real model wraps it: <analysis>…</analysis><summary>…</summary>; the CLI quotes the summary.
    tagged = f"<analysis>what happened</analysis>\n<summary>\n{SUMMARY}\n</summary>"
    assert analyse(_record(_compaction_session(summary=tagged))).tampering == ()


def test_a_new_conversation_that_quotes_no_summary_is_still_tampering():
    other = json.loads(json.dumps(COMPACTION["continued"]).replace("ran echo one", "ran echo two"))
    assert any(
        "starts a conversation" in p for p in analyse(_record(_compaction_session(continued=other))).tampering
    )
    # the summary never reached the CLI whole: nothing may quote it
    assert analyse(_record(_compaction_session(delivered=False))).tampering
    # each summary anchors one continuation: a second conversation quoting it is someone else's
    exchanges = _compaction_session()
    second = [COMPACTION["continued"][0], {"role": "user", "content": "another conversation"}]
    again = _exchange(3, second, _reply("m4", [{"type": "text", "text": "ok"}], 1), delivered=True)
    assert any(
        "request 3 starts a conversation" in p for p in analyse(_record([*exchanges, again])).tampering
    )
