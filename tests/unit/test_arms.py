"""The arm registry: every reference arm, candidate pairing, and the overlay arm rule."""

from __future__ import annotations

import pytest

from workflow_bench.arms import (
    ARMS,
    COMPARATOR_ARMS,
    REVIEW_ARMS,
    SessionSpec,
    UnknownArmError,
    required_candidate_arms,
    resolve_arm,
)

pytestmark = pytest.mark.unit

REFERENCE_ARMS = {
    "workflow", "candidate_workflow", "workflow_direct", "candidate_workflow_direct", "candidate_review",
    "ce_workflow", "ce_workflow_direct", "review", "ce_review", "baseline", "baseline_nomcp",
}  # fmt: skip


def test_every_reference_arm_exists_and_round_trips_by_name():
    assert set(ARMS) == REFERENCE_ARMS
    for name in ARMS:
        assert resolve_arm(name).name == name


def test_unknown_arm_lists_the_known_ones():
    with pytest.raises(UnknownArmError, match="known arms: workflow"):
        resolve_arm("workflo")


def test_candidates_execute_exactly_as_their_incumbent():
    for name, arm in ARMS.items():
        if arm.candidate_of:
            incumbent = ARMS[arm.candidate_of]
            assert arm.sessions == incumbent.sessions and arm.family == incumbent.family, name


def test_families_and_review_arms():
    assert {"ce_workflow", "ce_workflow_direct", "ce_review"} == COMPARATOR_ARMS
    assert {"review", "ce_review", "candidate_review"} == REVIEW_ARMS
    for name in REVIEW_ARMS:
        assert "Edit" not in ARMS[name].sessions[0].tools and "Write" in ARMS[name].sessions[0].tools
    assert ARMS["baseline_nomcp"].hide_skills and not ARMS["baseline"].hide_skills
    for name in ("baseline", "baseline_nomcp"):
        assert (
            "Skill" not in ARMS[name].sessions[0].tools and "Skill" in ARMS[name].sessions[0].disallowed_tools
        )


@pytest.mark.parametrize(
    ("roles", "arms"),
    [
        ({"plan"}, ("workflow", "candidate_workflow")),
        ({"work"}, ("workflow", "candidate_workflow", "workflow_direct", "candidate_workflow_direct")),
        ({"review"}, ("ce_review", "review", "candidate_review")),
        ({"plan", "review"}, ("workflow", "candidate_workflow", "ce_review", "review", "candidate_review")),
    ],
)
def test_required_candidate_arms(roles, arms):
    assert required_candidate_arms(roles) == arms


def test_session_specs_validate_themselves():
    with pytest.raises(ValueError, match="must not be able to invoke skills"):
        SessionSpec(phase="work", prompt="{task}", skill_role=None)
    with pytest.raises(ValueError, match="Edit"):
        SessionSpec(phase="review", prompt="{task}", skill_role="review")
