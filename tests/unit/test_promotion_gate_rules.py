"""The promotion gate's rules, one at a time, on `gate.decide` directly (no rows, no documents).

test_promotion_gate.py drives the gate end to end from rows; these pin each rule's boundary
and what the decision records about it (reasons, per-task entries, the summary figures), so a
gate that decided for the wrong reason, or reported a figure it did not use, fails here.
Every rule has its negative control beside it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from workflow_bench.reports.promotion.evidence import ArmEvidence
from workflow_bench.reports.promotion.gate import (
    INSUFFICIENT,
    KEEP,
    PROMOTE,
    PromotionEvidence,
    TaskPair,
    decide,
    decisions_summary,
)
from workflow_bench.reports.promotion.policy import PromotionPolicy

pytestmark = pytest.mark.unit
POLICY = PromotionPolicy()


def review_arm(**overrides: Any) -> ArmEvidence:
    base: dict[str, Any] = {
        "runs": 3,
        "valid_runs": 3,
        "excluded_runs": 0,
        "scored_runs": 3,
        "resolved": 0,
        "skill_not_invoked": 0,
        "error_kinds": {},
        "metrics": {},
        "review_weighted_f1": 0.6,
        "review_false_positives": 1.0,
        "review_blocker_recall": 1.0,
        "review_verdict_correct": True,
        "review_clean_pass": None,
        "review_clean_control": False,
    }
    return ArmEvidence(**{**base, **overrides})


CLEAN = {"review_clean_control": True, "review_clean_pass": True, "review_false_positives": 0.0}


def review(*pairs: tuple[str, ArmEvidence, ArmEvidence], status: str = "complete"):
    evidence = PromotionEvidence(
        candidate_arm="candidate_review",
        incumbent_arm="review",
        review=True,
        run_status=status,
        model="m",
        unusable_arms=(),
        tasks=tuple(TaskPair(task, "review", inc, cand) for task, inc, cand in pairs),
    )
    return decide(POLICY, evidence)


def entry(decision, task: str) -> dict[str, Any]:
    [found] = [t for t in decision.tasks if t["task"] == task]
    return found


# --- review gate: what a decision records -------------------------------------------------------


def test_a_review_decision_names_its_arms_metric_and_the_median_f1_gain_of_defect_cases() -> None:
    d = review(
        ("a", review_arm(), review_arm(review_weighted_f1=0.9)),
        ("b", review_arm(), review_arm(review_weighted_f1=0.7)),
        ("c", review_arm(), review_arm(review_weighted_f1=0.8)),
        # a clean control's F1 never enters the median, whatever it is
        ("clean", review_arm(**CLEAN, review_weighted_f1=0.0), review_arm(**CLEAN, review_weighted_f1=1.0)),
    )
    assert d.decision == PROMOTE
    assert (d.candidate_arm, d.incumbent_arm, d.metric) == (
        "candidate_review",
        "review",
        "review_weighted_f1",
    )
    assert d.median_improvement == pytest.approx(0.2)
    assert d.resolved_margin is None and d.metric_warning is None
    assert d.gated_tasks == ("a", "b", "c", "clean") and d.ungated_tasks == ()
    assert entry(d, "a")["weighted_f1_delta"] == pytest.approx(0.3)
    assert decisions_summary([d]) == {"candidate_review": PROMOTE}


def test_each_review_task_entry_carries_its_class_gating_and_both_arms_evidence() -> None:
    inc, cand = review_arm(), review_arm(review_weighted_f1=0.9)
    t = entry(review(("a", inc, cand)), "a")
    assert t["class"] == "review" and t["gated"] is True and t["clean_control"] is False
    assert t["incumbent"] == inc.to_json() and t["candidate"] == cand.to_json()
    assert t["improved"] is True and t["regressions"] == [] and t["insufficient"] == []


def test_an_unmeasured_f1_gives_no_delta_and_no_median() -> None:
    d = review(("a", review_arm(review_weighted_f1=None), review_arm()))
    assert entry(d, "a")["weighted_f1_delta"] is None and d.median_improvement is None
    d = review(("a", review_arm(), review_arm(review_weighted_f1=None)))
    assert entry(d, "a")["weighted_f1_delta"] is None and d.median_improvement is None


def test_every_review_reason_is_text_and_the_promotion_names_the_improved_cases() -> None:
    d = review(
        ("a", review_arm(), review_arm(review_weighted_f1=0.9)),
        ("b", review_arm(), review_arm(review_weighted_f1=0.6)),
    )
    assert d.decision == PROMOTE
    assert len(d.reasons) == 1 and "on a;" in d.reasons[0]
    keep = review(("a", review_arm(), review_arm()))
    assert keep.decision == KEEP and all(isinstance(r, str) and r for r in keep.reasons)


# --- review gate: the rules ---------------------------------------------------------------------


def test_equal_f1_is_not_a_regression() -> None:
    d = review(
        ("same", review_arm(), review_arm()),
        ("gain", review_arm(), review_arm(review_weighted_f1=0.9)),
    )
    assert d.decision == PROMOTE, d.reasons
    # negative control: a drop of one F1 point on the unchanged case keeps the incumbent
    d = review(
        ("same", review_arm(), review_arm(review_weighted_f1=0.59)),
        ("gain", review_arm(), review_arm(review_weighted_f1=0.9)),
    )
    assert d.decision == KEEP


def test_a_clean_control_alone_never_promotes() -> None:
    d = review(("clean", review_arm(**CLEAN), review_arm(**CLEAN)))
    assert d.decision == KEEP
    assert entry(d, "clean")["improved"] is False and entry(d, "clean")["clean_control"] is True


def test_a_case_is_a_clean_control_when_either_arm_says_so() -> None:
    """Clean-control rules (false positives, clean pass) apply even if only one side recorded it."""
    for inc, cand in (
        (review_arm(**CLEAN), review_arm(**{**CLEAN, "review_clean_control": False}, review_weighted_f1=0.9)),
        (review_arm(**{**CLEAN, "review_clean_control": False}), review_arm(**CLEAN, review_weighted_f1=0.9)),
    ):
        d = review(("clean", inc, cand))
        assert entry(d, "clean")["clean_control"] is True
        assert d.decision == KEEP  # an F1 "gain" on a clean control is no improvement


def test_a_clean_control_needs_its_clean_pass_and_false_positives_but_not_an_f1() -> None:
    no_f1 = {**CLEAN, "review_weighted_f1": None}
    d = review(
        ("clean", review_arm(**no_f1), review_arm(**no_f1)),
        ("gain", review_arm(), review_arm(review_weighted_f1=0.9)),
    )
    assert d.decision == PROMOTE, d.reasons
    d = review(
        ("clean", review_arm(**no_f1), review_arm(**{**no_f1, "review_clean_pass": None})),
        ("gain", review_arm(), review_arm(review_weighted_f1=0.9)),
    )
    assert d.decision == INSUFFICIENT
    assert "clean: candidate review_clean_pass missing" in d.reasons


@pytest.mark.parametrize(
    ("side", "field", "reason"),
    [
        ("incumbent", "review_weighted_f1", "a: incumbent review_weighted_f1 missing"),
        ("candidate", "review_weighted_f1", "a: candidate review_weighted_f1 missing"),
        ("incumbent", "review_false_positives", "a: incumbent review_false_positives missing"),
        ("candidate", "review_verdict_correct", "a: candidate verdict evidence missing"),
        ("candidate", "review_blocker_recall", "a: blocker recall recorded by one arm only"),
        ("incumbent", "review_blocker_recall", "a: blocker recall recorded by one arm only"),
    ],
)
def test_missing_review_evidence_is_insufficient_and_named(side: str, field: str, reason: str) -> None:
    inc, cand = review_arm(), review_arm(review_weighted_f1=0.9)
    if side == "incumbent":
        inc = replace(inc, **{field: None})
    else:
        cand = replace(cand, **{field: None})
    d = review(("a", inc, cand))
    assert d.decision == INSUFFICIENT
    assert reason in d.reasons
    assert entry(d, "a")["improved"] is False


def test_blocker_recall_unrecorded_by_both_arms_is_no_obstacle() -> None:
    d = review(
        (
            "a",
            review_arm(review_blocker_recall=None),
            review_arm(review_blocker_recall=None, review_weighted_f1=0.9),
        )
    )
    assert d.decision == PROMOTE, d.reasons


def test_a_clean_control_regression_is_named() -> None:
    d = review(("clean", review_arm(**CLEAN), review_arm(**{**CLEAN, "review_false_positives": 2.0})))
    assert d.decision == KEEP and "clean: clean control: false positives 2.0 > 0.0" in d.reasons
    d = review(("clean", review_arm(**CLEAN), review_arm(**{**CLEAN, "review_clean_pass": False})))
    assert d.decision == KEEP and "clean: clean control: candidate lost the clean pass" in d.reasons


def test_an_incomplete_review_sweep_is_insufficient_even_with_a_gain() -> None:
    d = review(("a", review_arm(), review_arm(review_weighted_f1=0.9)), status="aborted")
    assert d.decision == INSUFFICIENT
    assert d.reasons == ("sweep aborted; partial evidence cannot promote",)
