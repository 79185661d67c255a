"""The evidence attacks' judges: each says "blocked" only on a refusal, "NOT BLOCKED" on a reach."""

from __future__ import annotations

import pytest

from tests.builders import CLEAN_EVIDENCE, PLANT, row
from workflow_bench.canary._suite import ATTACKS
from workflow_bench.canary.attacks import Evidence
from workflow_bench.canary.attacks_evidence import EVIDENCE_ATTACKS

pytestmark = pytest.mark.unit
HONEST_ROW = {"error_kind": "oracle-failed", "ok": True, "skill_invoked": None, "input_tokens": 60}
# name: (what the sandbox printed when the defence held, what it printed or did when it did not)
CASES = {
    "cli-ptrace": (
        {"output": "ptrace-refused Operation not permitted\nvm-read-refused Operation not permitted"},
        {"output": "ptrace-attached Success\nvm-read-refused Operation not permitted"},
    ),
    "cli-environ-mem": (
        {"output": "environ-refused: denied\nmem-refused: denied"},
        {"output": "environ-opened-2\nmem-refused: denied"},
    ),
    "relay-other-paths": (
        {"output": "\n".join(f"{x} HTTP/1.1 404 Not Found relay-refusal" for x in "abcd")},
        {
            "output": "a HTTP/1.1 404 N relay-refusal\nb HTTP/1.0 200 OK upstream-answer\n"
            "c x relay-refusal\nd x relay-refusal"
        },
    ),
    "relay-other-model": (
        {"output": "opus HTTP/1.1 401 U relay-refusal\nno-session HTTP/1.1 401 U relay-refusal"},
        {"output": "opus HTTP/1.0 200 OK upstream-answer\nno-session HTTP/1.1 403 F relay-refusal"},
    ),
    "relay-huge-body": (
        {"output": "huge HTTP/1.1 413 P relay-refusal\nbad-length HTTP/1.1 400 B relay-refusal"},
        {"output": "huge HTTP/1.1 400 B relay-refusal\nbad-length HTTP/1.1 400 B relay-refusal"},
    ),
    "relay-flood": (
        {"output": "flood 200 connections, 168 refused by the relay, cap 32"},
        {"output": "flood 200 connections, 0 refused by the relay, cap 32"},
    ),
    "relay-hidden-turn": (
        {"output": "credential-candidates 0 session id found: True\nrelay-answer hidden 401 relay-refusal"},
        {"output": "credential-candidates 0 session id found: True\nrelay-answer hidden 200 upstream-answer"},
    ),
    "stream-forgery": (
        {"output": "fd1-refused: Permission denied", "row": row(**HONEST_ROW)},
        {"output": "fd1-written-2", "row": row(**{**HONEST_ROW, "error_kind": "session-error", "ok": False})},
    ),
}


def test_every_evidence_attack_is_registered_in_the_suite_and_covered_here():
    assert set(a.name for a in EVIDENCE_ATTACKS) == set(CASES)
    assert all(a in ATTACKS for a in EVIDENCE_ATTACKS)
    assert ATTACKS[-1].name == "stream-forgery"


@pytest.mark.parametrize("attack", EVIDENCE_ATTACKS, ids=lambda a: a.name)
def test_each_judge_separates_held_from_reached(attack):
    held, reached = CASES[attack.name]
    assert attack.judge(Evidence(**{**CLEAN_EVIDENCE, **held}), PLANT)[0] is True
    assert attack.judge(Evidence(**{**CLEAN_EVIDENCE, **reached}), PLANT)[0] is False
    # A run that printed nothing proves nothing.
    assert attack.judge(Evidence(**{**CLEAN_EVIDENCE, "output": ""}), PLANT)[0] is False


def test_a_landed_forgery_caught_by_the_wire_counts_as_blocked_but_a_forged_row_never():
    judge = next(a for a in EVIDENCE_ATTACKS if a.name == "stream-forgery").judge
    caught = row(**{**HONEST_ROW, "error_kind": "evidence-tampered", "ok": False})
    assert judge(Evidence(**{**CLEAN_EVIDENCE, "output": "fd1-written-2", "row": caught}), PLANT)[0] is True
    forged = row(**{**HONEST_ROW, "input_tokens": 1, "output_tokens": 1})
    assert judge(Evidence(**{**CLEAN_EVIDENCE, "output": "fd1-refused", "row": forged}), PLANT)[0] is False
