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

from workflow_bench.promotion.evidence import ArmEvidence
from workflow_bench.promotion.gate import (
    INSUFFICIENT,
    KEEP,
    PROMOTE,
    PromotionEvidence,
    TaskPair,
    decide,
    decisions_summary,
)
from workflow_bench.promotion.policy import (
    ImplementationPolicy,
    PolicyError,
    PromotionPolicy,
    ReviewPolicy,
)

pytestmark = pytest.mark.unit
POLICY = PromotionPolicy()
DEFAULT_JSON = POLICY.to_json()


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
    [found] = [t.model_dump(by_alias=True) for t in decision.tasks if t.task == task]
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
    assert d.gated_tasks == ["a", "b", "c", "clean"] and d.ungated_tasks == []
    assert entry(d, "a")["weighted_f1_delta"] == pytest.approx(0.3)
    assert decisions_summary([d]) == {"candidate_review": PROMOTE}


def test_each_review_task_entry_carries_its_class_gating_and_both_arms_evidence() -> None:
    inc, cand = review_arm(), review_arm(review_weighted_f1=0.9)
    t = entry(review(("a", inc, cand)), "a")
    assert t["class"] == "review" and t["gated"] is True and t["clean_control"] is False
    assert t["incumbent"] == inc.model_dump() and t["candidate"] == cand.model_dump()
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
        inc = inc.model_copy(update={field: None})
    else:
        cand = cand.model_copy(update={field: None})
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
    assert d.reasons == ["sweep aborted; partial evidence cannot promote"]


# --- implementation gate ------------------------------------------------------------------------


def impl_arm(resolved: int = 3, cost: float | None = 1.0, **overrides: Any) -> ArmEvidence:
    base: dict[str, Any] = {
        "runs": 3,
        "valid_runs": 3,
        "excluded_runs": 0,
        "scored_runs": 3,
        "resolved": resolved,
        "skill_not_invoked": 0,
        "error_kinds": {},
        "metrics": {"cost_usd": cost},
        "review_weighted_f1": None,
        "review_false_positives": None,
        "review_blocker_recall": None,
        "review_verdict_correct": None,
        "review_clean_pass": None,
        "review_clean_control": None,
    }
    return ArmEvidence(**{**base, **overrides})


def implementation(*pairs: tuple[str, ArmEvidence, ArmEvidence], unusable: tuple[str, ...] = ()):
    evidence = PromotionEvidence(
        candidate_arm="candidate_workflow",
        incumbent_arm="workflow",
        review=False,
        run_status="complete",
        model="m",
        unusable_arms=unusable,
        tasks=tuple(TaskPair(task, "bugfix", inc, cand) for task, inc, cand in pairs),
    )
    d = decide(POLICY, evidence)
    assert d.reasons and all(isinstance(r, str) and r for r in d.reasons), d.reasons  # always says why
    return d


def test_an_implementation_decision_records_its_arms_figures_and_tasks() -> None:
    d = implementation(("a", impl_arm(cost=2.0), impl_arm(cost=1.0)))
    assert d.decision == PROMOTE
    assert (d.candidate_arm, d.incumbent_arm, d.metric) == ("candidate_workflow", "workflow", "cost_usd")
    assert d.metric_warning is None  # cost_usd includes subagents: no main-loop warning
    assert d.median_improvement == 50.0 and d.resolved_margin == 0
    assert d.reasons == ["median cost_usd improvement 50.0 % >= 5.0 %"]
    doc = d.model_dump(mode="json", by_alias=True)
    assert doc["gated_tasks"] == ["a"] and doc["ungated_tasks"] == [] and doc["reasons"] == list(d.reasons)
    [t] = doc["tasks"]
    assert t["class"] == "bugfix" and t["improvement_pct"] == 50.0
    assert t["quality_regression"] is False and t["efficiency_regression"] is False
    assert t["quality_floor_enforced"] is True and t["candidate_quality_floor_met"] is True
    assert t["skill_attributable_failure"] is False


def test_improvement_is_the_percent_saving_to_one_decimal_and_its_median_too() -> None:
    d = implementation(
        ("a", impl_arm(cost=3.0), impl_arm(cost=2.0)),  # 33.3 %
        ("b", impl_arm(cost=10.0), impl_arm(cost=8.99)),  # 10.1 %
        ("c", impl_arm(cost=10.0), impl_arm(cost=8.98)),  # 10.2 %
        ("d", impl_arm(cost=3.0), impl_arm(cost=2.9)),  # 3.3 %
    )
    assert [t.improvement_pct for t in d.tasks] == [33.3, 10.1, 10.2, 3.3]
    assert d.median_improvement == 10.1  # the median (10.1 + 10.2) / 2, to one decimal


def test_no_task_is_insufficient_and_says_so() -> None:
    d = implementation()
    assert d.decision == INSUFFICIENT and "no tasks" in d.reasons


def test_every_unusable_arm_is_named() -> None:
    d = implementation(("a", impl_arm(), impl_arm(cost=0.5)), unusable=("workflow", "baseline"))
    assert d.decision == INSUFFICIENT
    assert "measurement health UNUSABLE for arm(s) workflow, baseline" in d.reasons


def test_both_sides_insufficiencies_are_listed_even_when_one_has_no_rows() -> None:
    empty = impl_arm(resolved=0, cost=None, runs=0, valid_runs=0, scored_runs=0)
    short = impl_arm(resolved=2, runs=3, valid_runs=2, excluded_runs=1, scored_runs=2)
    d = implementation(("a", empty, short))
    assert "a: incumbent has no rows" in d.reasons
    assert "a: candidate has 1 excluded run(s)" in d.reasons
    assert "a: candidate has 2 scored run(s) < min_runs 3" in d.reasons


def test_unequal_scored_runs_count_every_skill_not_invoked_row() -> None:
    inc = impl_arm(runs=4, scored_runs=3, valid_runs=4, skill_not_invoked=1)
    cand = impl_arm(runs=4, scored_runs=2, resolved=2, valid_runs=4, skill_not_invoked=2)
    d = implementation(("a", inc, cand))
    assert "a: unequal scored runs (incumbent 3, candidate 2; skill-not-invoked ×3)" in d.reasons


def test_a_skipped_skill_on_the_candidate_alone_enforces_the_quality_floor() -> None:
    """Neither arm must look good by skipping its skill: the floor applies when any run did."""
    inc = impl_arm(resolved=0, cost=2.0)
    cand = impl_arm(resolved=2, cost=1.0, runs=4, valid_runs=4, skill_not_invoked=1)
    d = implementation(("a", inc, cand))
    [t] = [x.model_dump(by_alias=True) for x in d.tasks]
    assert t["skill_attributable_failure"] is True and t["quality_floor_enforced"] is True
    assert d.decision == KEEP and "a: quality floor not met (candidate 2/3)" in d.reasons


def test_no_floor_when_the_incumbent_never_resolved_and_every_skill_ran() -> None:
    d = implementation(("a", impl_arm(resolved=0, cost=2.0), impl_arm(resolved=1, cost=1.0)))
    [t] = [x.model_dump(by_alias=True) for x in d.tasks]
    assert t["quality_floor_enforced"] is False and t["candidate_quality_floor_met"] is None
    assert d.decision == PROMOTE, d.reasons


def test_a_task_neither_arm_solved_is_ungated_only_when_every_run_was_scored() -> None:
    both_failed = implementation(("a", impl_arm(resolved=0, cost=2.0), impl_arm(resolved=0, cost=1.0)))
    assert both_failed.ungated_tasks == ["a"]
    # one unscored extra run on the candidate side: not fully measured, so the task stays gated
    cand = impl_arm(resolved=0, cost=1.0, runs=4, valid_runs=4)
    assert implementation(("a", impl_arm(resolved=0, cost=2.0), cand)).gated_tasks == ["a"]


def test_the_keep_and_promote_reasons_state_the_figures() -> None:
    margin = implementation(("a", impl_arm(resolved=1), impl_arm(resolved=3)))
    assert margin.decision == PROMOTE
    assert margin.reasons == ["candidate resolved 2 more run(s) (margin >= 2)"]
    flat = implementation(("a", impl_arm(), impl_arm(cost=0.99)))
    assert flat.decision == KEEP
    assert flat.reasons == [
        "no improvement: median cost_usd improvement 1.0 % < 5.0 % and resolved-run margin 0 < 2",
    ]
    dearer = implementation(("a", impl_arm(), impl_arm(cost=1.5)))
    assert dearer.decision == KEEP and "a: efficiency regression (-50.0 % on cost_usd)" in dearer.reasons


def test_unmeasured_or_zero_incumbent_metric_is_named() -> None:
    assert "a: cost_usd unmeasured" in implementation(("a", impl_arm(), impl_arm(cost=None))).reasons
    assert "a: incumbent cost_usd is 0" in implementation(("a", impl_arm(cost=0.0), impl_arm())).reasons


def test_a_sweep_with_every_task_ungated_has_no_gated_task() -> None:
    d = implementation(("a", impl_arm(resolved=0, cost=2.0), impl_arm(resolved=0, cost=1.0)))
    assert d.decision == INSUFFICIENT and "no gated task" in d.reasons


# --- evidence folded from rows, and the policy from flags --------------------------------------


def test_arm_evidence_counts_error_kinds_and_keeps_every_figure_in_its_json() -> None:
    from tests.builders import sweep_row
    from workflow_bench.promotion.evidence import arm_evidence

    rows = [
        sweep_row("t", "w", 0, cost_usd=0.1234567, review_blocker_recall=0.5),
        sweep_row("t", "w", 1, cost_usd=0.2, review_blocker_recall=0.75),
        sweep_row("t", "w", 2, ok=False, resolved=False, error_kind="skill-not-invoked", skill_invoked=False),
        sweep_row("t", "w", 3, ok=False, resolved=False, error_kind="skill-not-invoked", skill_invoked=False),
        sweep_row("t", "w", 4, ok=False, resolved=False, error_kind="infra-error"),
    ]
    ev = arm_evidence(rows, metrics=["cost_usd"])
    assert (ev.runs, ev.valid_runs, ev.excluded_runs, ev.scored_runs) == (5, 4, 1, 2)
    assert ev.skill_not_invoked == 2
    assert ev.error_kinds == {"infra-error": 1, "skill-not-invoked": 2}
    assert ev.metrics == {"cost_usd": 0.161728}  # the median, to 6 digits
    assert ev.review_blocker_recall == 0.5  # the worst scored run
    doc = ev.model_dump()
    assert set(doc) == set(ArmEvidence.model_fields)  # promotion.json's keys, no more
    assert list(doc["error_kinds"]) == ["infra-error", "skill-not-invoked"]  # sorted: canonical
    assert doc["error_kinds"] == {"infra-error": 1, "skill-not-invoked": 2}
    assert doc["metrics"] == {"cost_usd": 0.161728} and doc["valid_runs"] == 4


def test_an_arm_with_no_scored_row_has_unknown_review_evidence_not_false() -> None:
    from tests.builders import sweep_row
    from workflow_bench.promotion.evidence import arm_evidence

    rows = [
        sweep_row(
            "t", "w", 0, skill_invoked=False, error_kind="skill-not-invoked", review_verdict_correct=True
        )
    ]
    ev = arm_evidence(rows, metrics=["cost_usd"])
    assert ev.scored_runs == 0
    assert ev.review_verdict_correct is None and ev.review_clean_pass is None
    assert ev.review_clean_control is None and ev.review_blocker_recall is None


def test_the_min_runs_flag_applies_to_the_review_gate_too() -> None:
    policy = PromotionPolicy.from_flags(min_runs=5)
    assert policy.implementation.min_runs == 5 and policy.review.min_runs == 5


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ImplementationPolicy(min_runs=0), "min_runs: want an integer >= 1, got 0"),
        (
            lambda: ImplementationPolicy(min_resolved_margin=0),
            "min_resolved_margin: want an integer >= 1, got 0",
        ),
        (
            lambda: ImplementationPolicy(min_improvement_pct=-0.5),
            "min_improvement_pct: want a finite number >= 0.0,",
        ),
        (
            lambda: ImplementationPolicy(min_gated_task_ratio=1.01),
            "min_gated_task_ratio: want a finite number >= 0.0 and <= 1.0, got 1.01",
        ),
        (lambda: ReviewPolicy(min_runs=0), "min_runs: want an integer >= 1, got 0"),
        (
            lambda: ReviewPolicy(min_improvement=1.5),
            "min_improvement: want a finite number >= 0.0 and <= 1.0",
        ),
        (lambda: ReviewPolicy(metric="recall"), "review metric must be review_weighted_f1, got 'recall'"),
        (
            lambda: PromotionPolicy(evidence_max_age_days=91),
            "evidence_max_age_days: want an integer >= 1 and <= 90, got 91",
        ),
        (lambda: PromotionPolicy.from_json([]), "policy: want an object, got list"),
        (
            lambda: PromotionPolicy.from_json({**DEFAULT_JSON, "implementation": 1}),
            "policy.implementation: want",
        ),
        (
            lambda: PromotionPolicy.from_json({**DEFAULT_JSON, "review": {}}),
            "policy.review: unknown keys [], missing",
        ),
    ],
)
def test_a_bad_policy_value_names_its_key_and_the_bound(build, message: str) -> None:
    with pytest.raises(PolicyError) as raised:
        build()
    assert message in str(raised.value)


def test_every_bound_is_inclusive() -> None:
    """The edge values a user may legitimately ask for are accepted."""
    ImplementationPolicy(min_runs=1, min_resolved_margin=1, min_improvement_pct=0.0, min_gated_task_ratio=1.0)
    ImplementationPolicy(min_gated_task_ratio=0.0, max_task_regression_pct=0.0)
    ReviewPolicy(min_runs=1, min_improvement=1.0)
    ReviewPolicy(min_improvement=0.0)
    PromotionPolicy(evidence_max_age_days=1)
    PromotionPolicy(evidence_max_age_days=90)


def test_a_stored_policy_round_trips_every_value() -> None:
    policy = PromotionPolicy(
        implementation=ImplementationPolicy(metric="duration_s", min_runs=4),
        review=ReviewPolicy(min_improvement=0.05),
        evidence_max_age_days=30,
    )
    assert PromotionPolicy.from_json(policy.to_json()) == policy


@pytest.mark.parametrize(
    ("metric", "warned"),
    [("cost_usd", False), ("duration_s", False), ("output_tokens", True), ("num_turns", True)],
)
def test_only_main_loop_metrics_carry_the_subagent_warning(metric: str, warned: bool) -> None:
    """output_tokens and num_turns come from the CLI's main loop: subagent spend is invisible to them."""
    policy = PromotionPolicy(implementation=ImplementationPolicy(metric=metric))
    inc, cand = impl_arm(metrics={metric: 2.0}), impl_arm(metrics={metric: 1.0})
    evidence = PromotionEvidence(
        "candidate_workflow", "workflow", False, "complete", "m", (), (TaskPair("a", "x", inc, cand),)
    )
    d = decide(policy, evidence)
    assert d.decision == PROMOTE and d.metric == metric
    assert (d.metric_warning is not None) is warned
    if warned:
        assert "subagent" in d.metric_warning


def test_an_unknown_metric_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(PolicyError, match="known: cost_usd, output_tokens, duration_s, num_turns"):
        ImplementationPolicy(metric="tokens")


def test_the_impossible_share_rule_has_its_boundary_at_the_policy_allowance() -> None:
    from workflow_bench.promotion.evidence import ProbeEvidence

    ev = PromotionEvidence(
        candidate_arm="candidate_workflow",
        incumbent_arm="workflow",
        review=False,
        run_status="complete",
        model="m",
        unusable_arms=(),
        tasks=(TaskPair("a", "bugfix", impl_arm(), impl_arm(cost=0.5)),),
        probes=(ProbeEvidence(resolved=0, runs=3), ProbeEvidence(resolved=1, runs=3)),
    )
    kept = decide(POLICY, ev)
    assert (
        kept.decision == KEEP
        and kept.impossible is not None
        and kept.impossible.model_dump()
        == {
            "incumbent": {"resolved": 0, "runs": 3},
            "candidate": {"resolved": 1, "runs": 3},
        }
    )

    def allowing(share: float) -> PromotionPolicy:
        return replace(
            POLICY, implementation=replace(POLICY.implementation, max_impossible_share_increase=share)
        )

    assert decide(allowing(0.34), ev).decision == PROMOTE  # a rise of 1/3 is within 0.34
    assert decide(allowing(0.33), ev).decision == KEEP
    assert decide(POLICY, replace(ev, probes=None)).decision == PROMOTE  # negative control: no probe ran
    with pytest.raises(PolicyError):
        replace(POLICY.implementation, max_impossible_share_increase=1.5)


def test_a_policy_recorded_before_the_probe_key_existed_reads_with_the_value_its_absence_meant() -> None:
    """Sweeps recorded before cheating probes re-render and verify: the missing key meant 0."""
    recorded = PromotionPolicy().to_json()
    del recorded["implementation"]["max_impossible_share_increase"]
    assert PromotionPolicy.from_json(recorded) == PromotionPolicy()
    # Only keys added later are filled: an unknown key, or another missing one, is still refused.
    with pytest.raises(PolicyError, match=r"unknown keys \['surprise'\]"):
        surprise = {**recorded["implementation"], "surprise": 1}
        PromotionPolicy.from_json({**recorded, "implementation": surprise})
    del recorded["implementation"]["min_runs"]
    with pytest.raises(PolicyError, match=r"missing keys \['min_runs'\]"):
        PromotionPolicy.from_json(recorded)
