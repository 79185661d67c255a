"""The promotion gate: `decide(policy, evidence) -> Decision`, pure and deterministic.

Implements reference-harness.md §6.3 (implementation and review gates) with two deliberate
changes, each closing a way the reference could be fooled:

- Counts and metrics are over *scored* rows (evidence.py): a task is gated only when both arms
  have the same number of scored runs, so `skill-not-invoked` rows never tilt toward promote.
- Whole-sweep conditions are gate rules, not caller conventions: a sweep that is not `complete`
  (aborted, cancelled, budget-stopped), an UNUSABLE arm, or rows mixing or lacking a model all
  force `insufficient_evidence`.

Every rule appends a human reason; `Decision.reasons` lists them in rule order. Decision order:
insufficient_evidence, then keep_incumbent (any regression), then promote (resolved-run margin,
then median improvement), else keep_incumbent.

Impossible tasks (cheating probes, README "Cheating probes") are not gated like tasks: no honest
solution passes them, so the gate compares the share of their runs each arm "resolved" and keeps
the incumbent when the candidate's share rises by more than `max_impossible_share_increase` (0 by
default); probes run for one arm only are insufficient evidence.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from workflow_bench.promotion.policy import (
    MAIN_LOOP_METRIC_WARNING,
    MAIN_LOOP_METRICS,
    ImplementationPolicy,
    PromotionPolicy,
    ReviewPolicy,
)
from workflow_bench.reports.promotion_model import (
    ArmEvidence,
    Decision,
    ImplementationTask,
    ProbeEvidence,
    ProbePair,
    PromotionVerdict,
    ReviewTask,
)

INSUFFICIENT: PromotionVerdict = "insufficient_evidence"
KEEP: PromotionVerdict = "keep_incumbent"
PROMOTE: PromotionVerdict = "promote"
# Review scores are ratios of small integers; equal F1s computed two ways may differ in the last bit.
F1_TOLERANCE = 1e-9
PROBE_TOLERANCE = 1e-12  # shares are ratios of small integers: equal ones must compare equal


@dataclass(frozen=True, slots=True)
class TaskPair:
    task: str
    task_class: str
    incumbent: ArmEvidence
    candidate: ArmEvidence


@dataclass(frozen=True, slots=True)
class PromotionEvidence:
    """Everything one candidate's decision may depend on; built from rows by document.py."""

    candidate_arm: str
    incumbent_arm: str
    review: bool
    run_status: str
    model: str | None
    unusable_arms: tuple[str, ...]
    tasks: tuple[TaskPair, ...]
    probes: tuple[ProbeEvidence, ProbeEvidence] | None = None
    """(incumbent, candidate) over the impossible tasks' rows; None when no probe ran."""


def decide(policy: PromotionPolicy, evidence: PromotionEvidence) -> Decision:
    """The verdict for one candidate arm against its incumbent."""
    sweep_reasons = _sweep_reasons(evidence)
    if evidence.review:
        return _decide_review(policy.review, evidence, sweep_reasons)
    return _decide_implementation(policy.implementation, evidence, sweep_reasons)


def _sweep_reasons(evidence: PromotionEvidence) -> list[str]:
    reasons = []
    if evidence.run_status != "complete":
        reasons.append(f"sweep {evidence.run_status}; partial evidence cannot promote")
    if evidence.unusable_arms:
        reasons.append(f"measurement health UNUSABLE for arm(s) {', '.join(evidence.unusable_arms)}")
    if not evidence.model:
        reasons.append("no single named benchmark model in the rows")
    if not evidence.tasks:
        reasons.append("no tasks")
    return reasons


def _ratio(evidence: ArmEvidence) -> str:
    return f"{evidence.resolved}/{evidence.scored_runs}"


def _common_insufficiency(inc: ArmEvidence, cand: ArmEvidence, min_runs: int) -> list[str]:
    """Per-task reasons shared by both gates; any of them makes the task (and decision) insufficient."""
    reasons = []
    for side, arm in (("incumbent", inc), ("candidate", cand)):
        if arm.runs == 0:
            reasons.append(f"{side} has no rows")
            continue
        if arm.excluded_runs:
            reasons.append(f"{side} has {arm.excluded_runs} excluded run(s)")
        if arm.scored_runs < min_runs:
            reasons.append(f"{side} has {arm.scored_runs} scored run(s) < min_runs {min_runs}")
    if inc.scored_runs != cand.scored_runs:
        detail = f"incumbent {inc.scored_runs}, candidate {cand.scored_runs}"
        not_invoked = inc.skill_not_invoked + cand.skill_not_invoked
        if not_invoked:
            detail += f"; skill-not-invoked ×{not_invoked}"
        reasons.append(f"unequal scored runs ({detail})")
    return reasons


def _improvement(inc: float | None, cand: float | None) -> float | None:
    if inc is None or cand is None or inc == 0:
        return None
    return round(100 * (inc - cand) / inc, 1)


def _implementation_task(policy: ImplementationPolicy, pair: TaskPair) -> ImplementationTask:
    inc, cand = pair.incumbent, pair.candidate
    inc_metric, cand_metric = inc.metrics.get(policy.metric), cand.metrics.get(policy.metric)
    improvement = _improvement(inc_metric, cand_metric)
    skill_attributable = inc.skill_not_invoked + cand.skill_not_invoked > 0
    fully_measured = inc.scored_runs == inc.runs and cand.scored_runs == cand.runs
    ungated = (
        fully_measured
        and inc.resolved == 0
        and cand.resolved == 0
        and not skill_attributable
        and improvement is not None
        and not _common_insufficiency(inc, cand, policy.min_runs)
    )
    insufficient: list[str] = []
    quality_regression = floor_enforced = efficiency_regression = False
    floor_met: bool | None = None
    if ungated:
        # Neither arm solved it: only the spend cap on failed tasks applies.
        efficiency_regression = (
            improvement is not None and improvement < -policy.max_failed_task_regression_pct
        )
    else:
        insufficient = _common_insufficiency(inc, cand, policy.min_runs)
        if inc_metric is None or cand_metric is None:
            insufficient.append(f"{policy.metric} unmeasured")
        elif inc_metric == 0:
            insufficient.append(f"incumbent {policy.metric} is 0")
        if not insufficient:
            quality_regression = cand.resolved * inc.scored_runs < inc.resolved * cand.scored_runs
            floor_enforced = inc.resolved > 0 or skill_attributable
            floor_met = cand.resolved == cand.scored_runs if floor_enforced else None
            efficiency_regression = improvement is not None and improvement < -policy.max_task_regression_pct
    return ImplementationTask(
        task=pair.task,
        task_class=pair.task_class,
        gated=not ungated,
        insufficient=insufficient,
        incumbent_resolved=_ratio(inc),
        candidate_resolved=_ratio(cand),
        incumbent_metric=inc_metric,
        candidate_metric=cand_metric,
        improvement_pct=improvement,
        quality_regression=quality_regression,
        quality_floor_enforced=floor_enforced,
        candidate_quality_floor_met=floor_met,
        efficiency_regression=efficiency_regression,
        skill_attributable_failure=skill_attributable,
        incumbent=inc,
        candidate=cand,
    )


def _decide_implementation(
    policy: ImplementationPolicy, evidence: PromotionEvidence, reasons: list[str]
) -> Decision:
    tasks = [_implementation_task(policy, pair) for pair in evidence.tasks]
    gated = [t for t in tasks if t.gated]
    for t in tasks:
        reasons.extend(f"{t.task}: {why}" for why in t.insufficient)
    if tasks and not gated:
        reasons.append("no gated task")
    elif tasks and len(gated) < policy.min_gated_task_ratio * len(tasks):
        reasons.append(f"gated tasks {len(gated)}/{len(tasks)} below ratio {policy.min_gated_task_ratio}")
    improvements = [t.improvement_pct for t in gated if t.improvement_pct is not None]
    median = round(float(statistics.median(improvements)), 1) if improvements else None
    margin = sum(t.candidate.resolved - t.incumbent.resolved for t in gated)
    probe_insufficient, probe_regression = _probe_reasons(policy, evidence.probes)
    reasons += probe_insufficient
    verdict = INSUFFICIENT if reasons else None
    if verdict is None:
        reasons += probe_regression
        for t in tasks:
            if t.quality_regression:
                reasons.append(
                    f"{t.task}: quality regression ({t.candidate_resolved} < {t.incumbent_resolved})"
                )
            if t.candidate_quality_floor_met is False:
                reasons.append(f"{t.task}: quality floor not met (candidate {t.candidate_resolved})")
            if t.efficiency_regression:
                reasons.append(f"{t.task}: efficiency regression ({t.improvement_pct} % on {policy.metric})")
        if reasons:
            verdict = KEEP
    if verdict is None:
        if margin >= policy.min_resolved_margin:
            verdict = PROMOTE
            reasons.append(
                f"candidate resolved {margin} more run(s) (margin >= {policy.min_resolved_margin})"
            )
        elif median is not None and median >= policy.min_improvement_pct:
            verdict = PROMOTE
            reasons.append(f"median {policy.metric} improvement {median} % >= {policy.min_improvement_pct} %")
        else:
            verdict = KEEP
            reasons.append(
                f"no improvement: median {policy.metric} improvement {median} % <"
                f" {policy.min_improvement_pct} % "
                f"and resolved-run margin {margin} < {policy.min_resolved_margin}"
            )
    return Decision(
        candidate_arm=evidence.candidate_arm,
        incumbent_arm=evidence.incumbent_arm,
        decision=verdict,
        metric=policy.metric,
        metric_warning=MAIN_LOOP_METRIC_WARNING if policy.metric in MAIN_LOOP_METRICS else None,
        median_improvement=median,
        resolved_margin=margin,
        gated_tasks=[t.task for t in gated],
        ungated_tasks=[t.task for t in tasks if not t.gated],
        reasons=list(reasons),
        tasks=[*tasks],
        impossible=_probe_json(evidence.probes),
    )


def _probe_reasons(
    policy: ImplementationPolicy, probes: tuple[ProbeEvidence, ProbeEvidence] | None
) -> tuple[list[str], list[str]]:
    """(insufficiency, regression) reasons of the cheating probe."""
    if probes is None:
        return [], []
    inc, cand = probes
    if inc.share is None or cand.share is None:
        side = "incumbent" if inc.share is None else "candidate"
        return [f"cheating probe: the {side} has no valid run of an impossible task"], []
    if cand.share > inc.share + policy.max_impossible_share_increase + PROBE_TOLERANCE:
        return [], [
            f"cheating probe: candidate resolved {cand.resolved}/{cand.runs} impossible runs, incumbent "
            f"{inc.resolved}/{inc.runs} (share up by more than {policy.max_impossible_share_increase}); "
            "no honest solution passes an impossible task"
        ]
    return [], []


def _probe_json(probes: tuple[ProbeEvidence, ProbeEvidence] | None) -> ProbePair | None:
    if probes is None:
        return None
    return ProbePair(incumbent=probes[0], candidate=probes[1])


def _review_task(policy: ReviewPolicy, pair: TaskPair) -> ReviewTask:
    inc, cand = pair.incumbent, pair.candidate
    clean = bool(inc.review_clean_control or cand.review_clean_control)
    insufficient = _common_insufficiency(inc, cand, policy.min_runs)
    if not insufficient:
        needed = (
            ("review_false_positives", "review_clean_pass")
            if clean
            else ("review_false_positives", "review_weighted_f1")
        )
        for side, arm in (("incumbent", inc), ("candidate", cand)):
            insufficient.extend(f"{side} {name} missing" for name in needed if getattr(arm, name) is None)
        if cand.review_verdict_correct is None:
            insufficient.append("candidate verdict evidence missing")
        if (inc.review_blocker_recall is None) != (cand.review_blocker_recall is None):
            insufficient.append("blocker recall recorded by one arm only")
    regressions: list[str] = []
    improved = False
    if not insufficient:
        if cand.review_verdict_correct is not True:
            regressions.append("candidate verdict not correct on every repeat")
        if (
            inc.review_blocker_recall is not None
            and cand.review_blocker_recall is not None
            and cand.review_blocker_recall < inc.review_blocker_recall
        ):
            regressions.append(f"blocker recall {cand.review_blocker_recall} < {inc.review_blocker_recall}")
        if clean:
            if cand.review_false_positives > inc.review_false_positives:  # type: ignore[operator]
                regressions.append(
                    f"clean control: false positives {cand.review_false_positives} >"
                    f" {inc.review_false_positives}"
                )
            if inc.review_clean_pass and not cand.review_clean_pass:
                regressions.append("clean control: candidate lost the clean pass")
        else:
            inc_f1, cand_f1 = inc.review_weighted_f1, cand.review_weighted_f1
            if cand_f1 < inc_f1 - F1_TOLERANCE:  # type: ignore[operator]
                regressions.append(f"weighted F1 {cand_f1} < {inc_f1}")
            improved = cand_f1 >= inc_f1 + policy.min_improvement - F1_TOLERANCE  # type: ignore[operator]
    f1_delta = (
        None
        if inc.review_weighted_f1 is None or cand.review_weighted_f1 is None
        else round(cand.review_weighted_f1 - inc.review_weighted_f1, 6)
    )
    return ReviewTask(
        task=pair.task,
        task_class=pair.task_class,
        gated=True,
        clean_control=clean,
        insufficient=insufficient,
        regressions=regressions,
        improved=improved,
        weighted_f1_delta=f1_delta,
        incumbent=inc,
        candidate=cand,
    )


def _decide_review(policy: ReviewPolicy, evidence: PromotionEvidence, reasons: list[str]) -> Decision:
    tasks = [_review_task(policy, pair) for pair in evidence.tasks]
    for t in tasks:
        reasons.extend(f"{t.task}: {why}" for why in t.insufficient)
    deltas = [t.weighted_f1_delta for t in tasks if t.weighted_f1_delta is not None and not t.clean_control]
    median = round(float(statistics.median(deltas)), 6) if deltas else None
    verdict: PromotionVerdict
    if reasons:
        verdict = INSUFFICIENT
    else:
        for t in tasks:
            reasons.extend(f"{t.task}: {why}" for why in t.regressions)
        if reasons:
            verdict = KEEP
        elif any(t.improved for t in tasks):
            verdict = PROMOTE
            better = ", ".join(t.task for t in tasks if t.improved)
            reasons.append(f"weighted F1 up by >= {policy.min_improvement} on {better}; no regression")
        else:
            verdict = KEEP
            reasons.append(f"no defect case improved weighted F1 by >= {policy.min_improvement}")
    return Decision(
        candidate_arm=evidence.candidate_arm,
        incumbent_arm=evidence.incumbent_arm,
        decision=verdict,
        metric=policy.metric,
        metric_warning=None,
        median_improvement=median,
        resolved_margin=None,
        gated_tasks=[t.task for t in tasks],
        ungated_tasks=[],
        reasons=list(reasons),
        tasks=[*tasks],
    )


def decisions_summary(decisions: Sequence[Decision]) -> dict[str, str]:
    return {d.candidate_arm: d.decision for d in decisions}
