"""`apply_wire`'s verdict on a session, branch by branch: what the row says when the wire disagrees.

test_evidence.py pins how the wire is read and which forgeries the cross-check names; these pin
what each outcome then records. Tampering is a charged failure of the arm (never excluded, never
"transcript missing"), naming every problem; a cancelled session stays cancelled; a failed session
keeps its unknown usage while ``usage_wire`` keeps what was served; a wire record we cannot read
is ``evidence-unverified`` with unknown skill evidence (not False); an honest session is ok.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.builders import (
    USER,
    honest_exchanges,
    session_outcome,
    stream_events,
    wire_exchange,
    wire_record,
    wire_reply,
    wire_usage,
)
from workflow_bench.cells.evidence import MAX_DETAIL_PROBLEMS, apply_wire
from workflow_bench.relay.server import WireRecord

pytestmark = pytest.mark.unit
WIRE_USAGE = {**wire_usage(30), "output_tokens": 2}
FORGED = {**wire_usage(1), "output_tokens": 1}


def _forgery() -> list:
    """A request continuing no conversation: wire-side tampering."""
    return [
        *honest_exchanges(),
        wire_exchange(2, [{"role": "user", "content": "forged"}], wire_reply("m3", [], 5)),
    ]


def test_an_honest_session_is_ok_with_the_wire_facts() -> None:
    outcome = apply_wire(
        session_outcome(stream_events()), wire_record(honest_exchanges()), expected_skill="work"
    )
    assert (outcome.ok, outcome.error_kind, outcome.error_detail) == (True, None, None)
    assert outcome.skill_invoked is True and outcome.transcript_missing is False
    assert outcome.usage == WIRE_USAGE and outcome.usage_wire == WIRE_USAGE
    assert len(outcome.wire_summary) == 2


def test_without_an_expected_skill_there_is_no_skill_verdict() -> None:
    outcome = apply_wire(
        session_outcome(stream_events()), wire_record(honest_exchanges()), expected_skill=None
    )
    assert outcome.ok is True and outcome.skill_invoked is None


def test_tampering_is_a_charged_failure_naming_every_problem() -> None:
    before = session_outcome(stream_events(usage=FORGED))
    before = replace(before, diagnostics=("earlier",), transcript_missing=True)
    outcome = apply_wire(before, wire_record(_forgery()), expected_skill="work")
    assert outcome.ok is False and outcome.error_kind == "evidence-tampered"
    problems = outcome.error_detail.split("; ")
    # both the wire's own finding and the stream's disagreement are kept
    assert any("never had" in p for p in problems) and any("result usage" in p for p in problems)
    assert outcome.diagnostics[0] == "earlier" and set(problems) <= set(outcome.diagnostics)
    assert outcome.transcript_missing is False  # tampered, not missing: charged, never excused
    assert outcome.skill_invoked is True and outcome.usage_wire["input_tokens"] == 35  # all served


def test_the_detail_names_at_most_five_problems_but_diagnostics_keep_all() -> None:
    forged = [
        wire_exchange(i, [{"role": "user", "content": f"forged {i}"}], wire_reply(f"f{i}", [], 1))
        for i in range(2, 9)
    ]
    outcome = apply_wire(
        session_outcome(stream_events()), wire_record([*honest_exchanges(), *forged]), expected_skill="work"
    )
    assert len(outcome.error_detail.split("; ")) == MAX_DETAIL_PROBLEMS == 5
    assert len(outcome.diagnostics) >= 7


def test_a_session_the_stream_could_not_verify_is_judged_on_the_wire() -> None:
    """The stream showed no skill evidence either way (sessions.py: evidence-unverified); the wire has it."""
    unverified = session_outcome(stream_events(), error_kind="evidence-unverified")
    outcome = apply_wire(unverified, wire_record(honest_exchanges()), expected_skill="work")
    assert (outcome.ok, outcome.error_kind, outcome.skill_invoked) == (True, None, True)
    assert outcome.usage == WIRE_USAGE and outcome.transcript_missing is False


def test_a_cancelled_session_stays_cancelled_whatever_the_wire_says() -> None:
    outcome = apply_wire(
        session_outcome(stream_events(), error_kind="cancelled"),
        wire_record(_forgery()),
        expected_skill="work",
    )
    assert outcome.error_kind == "cancelled"


def test_a_failed_session_keeps_its_unknown_usage_and_the_served_usage_on_the_side() -> None:
    failed = replace(
        session_outcome(stream_events(), error_kind="session-failed"), usage=dict.fromkeys(WIRE_USAGE)
    )
    outcome = apply_wire(failed, wire_record(honest_exchanges()), expected_skill="work")
    assert outcome.error_kind == "session-failed" and outcome.ok is False
    assert outcome.usage == dict.fromkeys(WIRE_USAGE)  # unknown, never the wire's figure
    assert outcome.usage_wire == WIRE_USAGE and outcome.tool_use_counts == {"Skill": 1}


def test_a_wire_record_over_its_cap_is_unverified_not_passed() -> None:
    record = WireRecord(tuple(honest_exchanges()), 0, (), True)  # overflow
    before = replace(session_outcome(stream_events()), diagnostics=("earlier",))
    outcome = apply_wire(before, record, expected_skill="work")
    assert outcome.ok is False and outcome.error_kind == "evidence-unverified"
    assert outcome.error_detail == "the wire record exceeded its exchange cap"
    assert outcome.skill_invoked is None  # unknown, not False
    assert outcome.transcript_missing is True
    assert outcome.diagnostics == ("earlier", "the wire record exceeded its exchange cap")
    assert outcome.usage == WIRE_USAGE


def test_foreign_bytes_on_a_clean_exit_are_tampering_only_on_a_clean_exit() -> None:
    def parsed_nothing(returncode: int):
        detail = {
            "process_state": "exited",
            "returncode": returncode,
            "event_stream_error": "line 3 is not JSON",
        }
        return replace(session_outcome(stream_events()), events=(), error_detail=detail)

    outcome = apply_wire(parsed_nothing(0), wire_record(honest_exchanges()), expected_skill="work")
    assert outcome.error_kind == "evidence-tampered"
    assert outcome.error_detail == "the stream carries bytes the CLI does not print (not JSON lines)"
    # negative control: a CLI killed mid-line legitimately leaves a cut line
    assert (
        apply_wire(parsed_nothing(-9), wire_record(honest_exchanges()), expected_skill="work").error_kind
        is None
    )


def test_refused_requests_before_a_session_error_are_tampering() -> None:
    failing = session_outcome(stream_events(), error_kind="session-error")
    outcome = apply_wire(failing, wire_record(honest_exchanges(), refused=2), expected_skill="work")
    assert outcome.error_kind == "evidence-tampered"
    assert "the relay refused 2 request(s) from inside the sandbox" in outcome.error_detail
    assert outcome.relay_refused == 2
    # negative control: without refusals the session error stands
    assert (
        apply_wire(failing, wire_record(honest_exchanges()), expected_skill="work").error_kind
        == "session-error"
    )


def test_a_skill_in_the_stream_but_not_on_the_wire_is_tampering() -> None:
    no_skill = [wire_exchange(0, [USER], wire_reply("m1", [{"type": "text", "text": "no"}], 10))]
    events = [
        {"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "no"}]}},
        {"type": "result", "is_error": False, "usage": {**wire_usage(10)}},
    ]
    honest = apply_wire(session_outcome(events), wire_record(no_skill), expected_skill="work")
    assert honest.error_kind == "skill-not-invoked" and honest.ok is False and honest.skill_invoked is False
    assert honest.error_detail is None and honest.transcript_missing is False
