"""Skill evidence, subagent threads and the stream cross-check on the edge cases the agent controls.

Rules pinned here (cells.evidence): a skill counts as invoked when the model called Skill with
that name in any of the forms the CLI uses (``skill``, ``command``, ``name``; a leading "/", a
plugin prefix "ns:", extra arguments, any case) and got a non-error result; a subagent thread is
anchored by one unanswered Agent/Task call the session may make (its prompt opening the subagent)
or Skill call for a skill declared forked (the CLI's "Base directory for this skill" line opening
it), each call anchoring at most one subagent, and what other threads were served is kept; the
cross-check never crashes on stream shapes a forger can print, bounds the ids it quotes, and
reads a usage count the wire never reported as the CLI's zero.
"""

from __future__ import annotations

import json

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
from workflow_bench.cells.evidence import (
    FORK_OPENING,
    SubagentPolicy,
    WireEvidence,
    analyse,
    apply_wire,
    cross_check,
)
from workflow_bench.relay.wire import ToolResult, ToolUse

pytestmark = pytest.mark.unit


def _wire(*uses: ToolUse, results: dict[str, bool] | None = None) -> WireEvidence:
    return WireEvidence(
        exchanges=1,
        refused=0,
        usage={},
        usage_main={},
        tool_use_counts={},
        tool_uses={u.id: u for u in uses},
        tool_results={k: ToolResult(k, error, "d") for k, error in (results or {}).items()},
        main_tool_use_ids=(),
        turns=1,
    )


@pytest.mark.parametrize(
    "inputs",
    [
        {"skill": "work"},
        {"skill": "/Work"},
        {"skill": "plugin:work"},
        {"skill": "a:b:work"},
        {"skill": "//work"},
        {"command": "/work now please"},
        {"name": "WORK"},
        {"skill": "  ", "command": "work"},
        {"skill": 5, "name": "work"},
    ],
)
def test_every_form_of_a_skill_call_is_recognised(inputs) -> None:
    wire = _wire(ToolUse("t1", "Skill", inputs), results={"t1": False})
    assert wire.skill_invoked("work") is True
    assert wire.skill_invoked("plan") is False


def test_only_leading_slashes_are_stripped_from_a_skill_name() -> None:
    wire = _wire(ToolUse("t1", "Skill", {"skill": "/Xlsx"}), results={"t1": False})
    assert wire.skill_invoked("xlsx") is True and wire.skill_invoked("lsx") is False


def test_the_skill_call_is_found_among_other_calls_and_needs_a_good_result() -> None:
    bash, skill = ToolUse("t0", "Bash", {"command": "work"}), ToolUse("t1", "skill", {"skill": "work"})
    assert _wire(bash, skill, results={"t0": False, "t1": False}).skill_invoked("work") is True
    assert _wire(bash, results={"t0": False}).skill_invoked("work") is False  # a Bash "work" is no skill
    assert _wire(skill, results={"t1": True}).skill_invoked("work") is False
    assert _wire(skill).skill_invoked("work") is False  # never answered


# --- subagent threads ------------------------------------------------------------------------


def _parent(calls: list[dict]):
    return wire_exchange(0, [USER], wire_reply("m1", calls, 10))


def _child(index: int, agent: str, text: str = "read it"):
    return wire_exchange(
        index, [{"role": "user", "content": text}], wire_reply(f"s{index}", [], 1), agent_id=agent
    )


AGENT = {"type": "tool_use", "id": "a1", "name": "Agent", "input": {"prompt": "read it"}}


def test_an_agent_call_after_other_calls_still_anchors_its_subagent() -> None:
    bash = {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "ls"}}
    other = {"type": "tool_use", "id": "a0", "name": "Agent", "input": {"prompt": "something else"}}
    assert analyse(wire_record([_parent([bash, other, AGENT]), _child(1, "ag1")])).tampering == ()


SKILL = {"type": "tool_use", "id": "k1", "name": "Skill", "input": {"skill": "work"}}
FORKS = SubagentPolicy(forked_skills=frozenset({"work"}))
NEVER_HAD = ("request 1 starts a conversation the session never had",)


def _fork_opening(skill_dir: str = "/workspace/.claude/skills/work") -> str:
    return f"{FORK_OPENING}{skill_dir}\n\nDo the work.\n"


def test_a_forked_skill_call_anchors_the_subagent_that_opens_with_its_directory() -> None:
    """Measured on CLI 2.1.332: a forked skill's subagent starts with the skill's base directory."""
    child = _child(1, "ag1", _fork_opening())
    assert analyse(wire_record([_parent([SKILL]), child]), FORKS).tampering == ()
    plugin = _child(1, "ag1", _fork_opening("/opt/comparator-plugin/skills/work/"))
    assert analyse(wire_record([_parent([SKILL]), plugin]), FORKS).tampering == ()


@pytest.mark.parametrize(
    ("policy", "text"),
    [
        # The observed attack: a tool posts under a new agent id while a Skill call is pending.
        (FORKS, "anything"),
        (FORKS, _fork_opening("/workspace/.claude/skills/plan")),  # another skill's directory
        (FORKS, "Do the work.\n" + _fork_opening()),  # the line must open the message
        (SubagentPolicy(), _fork_opening()),  # the skill is not forked: it spawns nothing
        (SubagentPolicy(forked_skills=frozenset({"plan"})), _fork_opening()),
    ],
    ids=["any text", "other skill dir", "not first", "not forked", "other skill forked"],
)
def test_a_skill_call_anchors_no_subagent_without_the_wire_proof(policy, text) -> None:
    assert analyse(wire_record([_parent([SKILL]), _child(1, "ag1", text)]), policy).tampering == NEVER_HAD


def test_an_agent_call_anchors_nothing_when_the_session_has_no_agent_tool() -> None:
    assert analyse(wire_record([_parent([AGENT]), _child(1, "ag1")]), SubagentPolicy()).tampering == ()
    refused = analyse(wire_record([_parent([AGENT]), _child(1, "ag1")]), SubagentPolicy(agent_tool=False))
    assert refused.tampering == NEVER_HAD


def test_a_thread_the_session_never_had_is_spend_and_leaves_the_cost_unknown() -> None:
    """Observed: a hidden thread's 1,000,000 output tokens were in no cost figure of the row."""
    hidden = wire_exchange(
        1, [{"role": "user", "content": "hidden"}], wire_reply("h1", [], 7), agent_id="evil"
    )
    wire = analyse(wire_record([_parent([SKILL]), hidden]), FORKS)
    assert wire.tampering == NEVER_HAD
    assert wire.usage_foreign == wire_usage(7)
    assert wire.usage["input_tokens"] == 17  # usage_wire: every message served, each once
    honest = analyse(wire_record([_parent([SKILL]), _child(1, "ag1", _fork_opening())]), FORKS)
    assert honest.usage_foreign == {}  # negative control: a real subagent is no foreign spend


def test_foreign_spend_makes_the_session_tampered_with_an_unknown_cost() -> None:
    hidden = wire_exchange(
        1, [{"role": "user", "content": "hidden"}], wire_reply("h1", [], 7), agent_id="evil"
    )
    outcome = apply_wire(
        session_outcome(stream_events()),
        wire_record([_parent([SKILL]), hidden]),
        expected_skill=None,
        policy=FORKS,
    )
    assert outcome.error_kind == "evidence-tampered"
    assert outcome.cost_usd is None and outcome.usage_wire["input_tokens"] == 17
    assert "served threads the CLI never opened" in outcome.error_detail


def test_a_task_call_anchors_its_subagent_like_an_agent_call() -> None:
    task = {**AGENT, "name": "Task"}  # the Agent tool's earlier name
    assert analyse(wire_record([_parent([task]), _child(1, "ag1")])).tampering == ()
    bash = {**AGENT, "name": "Bash"}  # negative control: any other tool anchors nothing
    assert analyse(wire_record([_parent([bash]), _child(1, "ag1")])).tampering == (
        "request 1 starts a conversation the session never had",
    )


def test_one_call_anchors_one_subagent_and_an_agent_id_cannot_start_twice() -> None:
    # ag2's first message carries the same prompt (so only the anchor's reuse is wrong)
    second = [{"type": "text", "text": "read it"}, {"type": "text", "text": "too"}]
    assert analyse(wire_record([_parent([AGENT]), _child(1, "ag1"), _child(2, "ag2", second)])).tampering == (
        "request 2 starts a conversation the session never had",
    )
    calls = [AGENT, {**AGENT, "id": "a2"}]
    assert analyse(wire_record([_parent(calls), _child(1, "ag1"), _child(2, "ag2", second)])).tampering == ()
    again = analyse(wire_record([_parent(calls), _child(1, "ag1"), _child(2, "ag1", second)]))
    assert again.tampering == ("request 2 starts a conversation the session never had",)


def test_an_answered_call_anchors_nothing() -> None:
    parent = _parent([AGENT])
    answered = wire_exchange(
        1,
        [
            USER,
            {"role": "assistant", "content": [AGENT]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a1", "content": "done"}]},
        ],
        wire_reply("m2", [], 1),
    )
    wire = analyse(wire_record([parent, answered, _child(2, "ag1")]))
    assert wire.tampering == ("request 2 starts a conversation the session never had",)


# --- the cross-check on odd streams -----------------------------------------------------------


def test_odd_stream_events_are_checked_not_fatal() -> None:
    wire = analyse(wire_record(honest_exchanges()))
    odd = [
        {"type": "user", "message": {"content": None}},
        {"type": "user", "message": "text"},
        {"type": "user", "message": {"content": ["plain", {"type": "text", "text": "x"}]}},
        {"type": "assistant", "message": {"id": "m1", "content": "just text"}},
        {"type": "assistant", "message": {"id": "m1", "content": None}},
        {"type": "assistant", "message": {"id": "m1"}},
        {"type": "result", "is_error": False, "usage": "not a dict"},
    ]
    problems = cross_check(wire, [*stream_events()[:-1], *odd])
    assert any("result usage" in p for p in problems)  # a result without usage is not the wire's


def test_a_forged_result_after_a_text_block_is_still_seen() -> None:
    wire = analyse(wire_record(honest_exchanges()))
    forged = {
        "type": "user",
        "message": {
            "content": [
                {"type": "text", "text": "x"},
                {"type": "tool_result", "tool_use_id": "zz", "content": "x"},
                {"type": "tool_result", "tool_use_id": "t1", "is_error": True},
            ]
        },
    }
    problems = cross_check(wire, stream_events(extra=[forged]))
    assert "the stream answers tool call zz the model never made" in problems
    assert "the stream's result for t1 disagrees with the one sent" in problems


def test_a_stream_tool_call_whose_id_is_not_a_string_is_one_the_model_never_made() -> None:
    wire = analyse(wire_record(honest_exchanges()))
    for bad_id in (["t1"], {"id": "t1"}, 1):
        shown = {
            "type": "assistant",
            "message": {"content": [{"type": "tool_use", "id": bad_id, "name": "Skill"}]},
        }
        problems = cross_check(wire, stream_events(extra=[shown]))
        assert problems == [f"the stream shows tool call {bad_id} the model never made"]


def test_ids_quoted_in_problems_are_bounded() -> None:
    wire = analyse(wire_record(honest_exchanges()))
    long_id = "z" * 500
    forged = {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": long_id}]}}
    [problem] = cross_check(wire, stream_events(extra=[forged]))
    assert problem == f"the stream answers tool call {'z' * 63}… the model never made"
    shown = {"type": "assistant", "message": {"id": "mq", "content": [{"type": "tool_use", "id": long_id}]}}
    [problem] = cross_check(wire, stream_events(extra=[shown]))
    assert problem == f"the stream shows tool call {'z' * 63}… the model never made"


def test_a_count_the_wire_never_reported_is_read_as_the_clis_zero() -> None:
    usage = {"input_tokens": 10, "output_tokens": 1}  # no cache fields on the wire
    body = json.dumps({"id": "m1", "type": "message", "content": [], "usage": usage}).encode()
    raw = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + body
    wire = analyse(wire_record([wire_exchange(0, [USER], raw)]))
    assert wire.usage_main["cache_read_input_tokens"] is None
    zeros = {**usage, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    assert cross_check(wire, [{"type": "result", "is_error": False, "usage": zeros}]) == []
    five = {**zeros, "cache_read_input_tokens": 5}
    assert cross_check(wire, [{"type": "result", "is_error": False, "usage": five}])  # invented


def test_skills_invoked_lists_every_skill_with_a_good_result_and_nothing_else() -> None:
    uses = [
        ToolUse("t1", "Skill", {"skill": "plugin:Plan"}),
        ToolUse("t2", "Skill", {"skill": "work"}),  # answered with an error: not invoked
        ToolUse("t3", "Skill", {"command": "/review now"}),
        ToolUse("t4", "Skill", {"skill": "never-answered"}),
        ToolUse("t5", "Bash", {"command": "skill"}),
        ToolUse("t6", "Skill", {"skill": "plan"}),  # the same skill twice: listed once
    ]
    wire = _wire(*uses, results={"t1": False, "t2": True, "t3": False, "t5": False, "t6": False})
    assert wire.skills_invoked() == ("plan", "review")
    assert _wire().skills_invoked() == ()


def test_skill_names_from_the_model_are_bounded_and_escaped() -> None:
    uses = [ToolUse(f"t{i}", "Skill", {"skill": f"s{i:03d}\x1b[2J" + "x" * 300}) for i in range(100)]
    names = _wire(*uses, results={u.id: False for u in uses}).skills_invoked()
    assert len(names) == 64 and all(len(n) <= 128 and "\x1b" not in n for n in names)
