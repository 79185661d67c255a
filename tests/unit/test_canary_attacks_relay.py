"""The relay attacks (hidden turns, header smuggling): each judge says "blocked" only on the defended outcome.

Also the forked-skill reader the subagent rule relies on (``cells.skill_evidence.forked_skills``).
"""

from __future__ import annotations

import pytest

from tests.builders import row, usage
from workflow_bench.canary.attacks import Evidence, Plant
from workflow_bench.canary.attacks_evidence import HIDDEN_TURN
from workflow_bench.canary.attacks_fork import FORK_ATTACKS
from workflow_bench.canary.attacks_limits import LimitEvidence
from workflow_bench.canary.attacks_relay import BREACH_ATTACKS, HIDDEN_OUTPUT_TOKENS
from workflow_bench.cells.skill_evidence import forked_skills

pytestmark = pytest.mark.unit

_ROW = row(error_kind="oracle-failed", resolved=False, cost_usd=0.1, usage_wire=usage(None, None, None, None))


def _hunt_evidence(output: str) -> Evidence:
    return Evidence(output, _ROW, "", "", 0, True, 0, ())


@pytest.mark.parametrize(
    ("output", "blocked"),
    [
        ("credential-candidates 0 session id found: True\nrelay-answer hidden 401 relay-refusal", True),
        ("credential-candidates 1 session id found: True\nrelay-answer hidden 200 upstream-answer", False),
        # refused, but not by the credential: the check under test did not decide
        ("credential-candidates 0 session id found: True\nrelay-answer hidden 403 relay-refusal", False),
        ("Traceback (most recent call last)", False),
    ],
)
def test_the_hidden_turn_judge(output, blocked):
    plant = Plant(*(None,) * 10)  # the judge reads no bait
    assert HIDDEN_TURN.judge(_hunt_evidence(output), plant)[0] is blocked


def _breach(output: str, **fields) -> LimitEvidence:
    return LimitEvidence(output, _ROW.replace(**fields), "", (), True)


CAUGHT = {
    "error_kind": "evidence-tampered",
    "error_detail": "request 2 starts a conversation the session never had; the provider served ...",
    "cost_usd": 25.000425,  # 10 input and 1,000,015 output tokens at the CLI's default table
    "usage_wire": usage(10, 0, 0, HIDDEN_OUTPUT_TOKENS + 15),
}
SERVED = "breached key present\nrelay-answer hidden 200 upstream-answer"


@pytest.mark.parametrize(
    ("output", "fields", "blocked"),
    [
        (SERVED, CAUGHT, True),
        (SERVED, {**CAUGHT, "cost_usd": 0.02}, False),  # a cost that leaves the hidden turn out
        (SERVED, {**CAUGHT, "cost_usd": None}, False),  # the spend not priced at all
        (SERVED, {**CAUGHT, "usage_wire": usage(10, 0, 0, 15)}, False),  # the spend not shown
        (SERVED, {"error_kind": None}, False),  # accepted as a subagent
        ("breached key absent\nrelay-answer hidden 401 relay-refusal", CAUGHT, False),  # no breach: no test
        ("breached key present\nrelay-answer hidden 401 relay-refusal", CAUGHT, False),
    ],
)
def test_the_hidden_subagent_judge(output, fields, blocked):
    hidden = next(a for a in BREACH_ATTACKS if a.name == "relay-hidden-subagent")
    assert hidden.judge(_breach(output, **fields))[0] is blocked


FORMS = ("bare-LF", "all-LF", "obs-fold", "control-byte", "double-CL", "CL+TE", "double-session", "HTTP/1.0")


def _forms(last: str) -> str:
    lines = [f"relay-answer {f} 400 relay-refusal" for f in FORMS] + [last]
    return "breached key present\n" + "\n".join(lines)


@pytest.mark.parametrize(
    ("output", "blocked"),
    [
        (_forms("relay-answer pipelined 400 relay-refusal"), True),
        (_forms("relay-answer pipelined 200 upstream-answer"), False),
        (_forms("relay-answer pipelined 401 relay-refusal"), False),  # refused, not as malformed
        (_forms(""), False),  # a form that did not run
    ],
)
def test_the_smuggling_judge(output, blocked):
    smuggling = next(a for a in BREACH_ATTACKS if a.name == "relay-header-smuggling")
    assert smuggling.judge(_breach(output))[0] is blocked


def test_forked_skills_are_read_from_front_matter_only(tmp_path):
    skills = tmp_path / "skills"
    for name, text in {
        "work": "---\nname: work\ncontext: fork\n---\nbody\n",
        "renamed": "---\nname: Other-Name\ncontext: 'fork'\n---\n",
        "plan": "---\nname: plan\n---\ncontext: fork\n",  # in the body, not the front matter
        "nofront": "context: fork\n",
    }.items():
        (skills / name).mkdir(parents=True)
        (skills / name / "SKILL.md").write_text(text)
    (skills / "linked").symlink_to(skills / "work")  # a symlinked skill dir is no skill
    (skills / "file").write_text("x")
    assert forked_skills(skills, tmp_path / "missing") == frozenset({"work", "renamed", "other-name"})


FORKED = {
    "error_kind": "evidence-tampered",
    "error_detail": "request 3 forks the conversation at reply 0: request 1 continued it already ...",
    "relay_forked_requests": 20,
    "cost_usd": 2.5005,  # 30 input and 100,014 output tokens at the CLI's default table
    "usage_wire": usage(30, 0, 0, 100_014),
}
ALL_SERVED = (
    "breached key present\n" + "relay-answer fork 200 relay-refusal\n" * 20
)  # the marker is in the reply


@pytest.mark.parametrize(
    ("output", "fields", "blocked"),
    [
        (ALL_SERVED, FORKED, True),
        (ALL_SERVED, {**FORKED, "error_kind": None}, False),  # accepted
        (ALL_SERVED, {**FORKED, "relay_forked_requests": 0}, False),  # not counted
        (ALL_SERVED, {**FORKED, "cost_usd": 0.000425}, False),  # the CLI's own total: forks left out
        (ALL_SERVED, {**FORKED, "cost_usd": None}, False),
        ("breached key present\n" + "relay-answer fork 401 relay-refusal\n" * 20, FORKED, False),  # no breach
        ("breached key absent", FORKED, False),
    ],
)
def test_the_fork_judge(output, fields, blocked):
    (fork,) = FORK_ATTACKS
    assert fork.judge(_breach(output, **fields))[0] is blocked
