"""aggregate, savings, group_rows and arm_health over hand-built rows."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tests import builders
from workflow_bench.reports.aggregate import (
    MEDIAN_FIELDS,
    REVIEW_FLAGS,
    REVIEW_METRICS,
    HealthStatus,
    ReviewAggregate,
    aggregate,
    aggregate_all,
    arm_health,
    group_rows,
    probe_tally,
    savings,
)
from workflow_bench.rows.model import Row
from workflow_bench.usage import USAGE_FIELDS

pytestmark = pytest.mark.unit


def row(**overrides: Any) -> Row:
    return builders.row(**{"cost_usd": 0.5, **overrides})


def session_error(**overrides: Any) -> Row:
    return row(**{"ok": False, "resolved": False, "error_kind": "session-error", **overrides})


# --- medians ---------------------------------------------------------------------------------


def test_median_odd_and_even() -> None:
    odd = aggregate([row(input_tokens=n) for n in (300, 100, 200)])
    assert odd.median("input_tokens") == 200
    even = aggregate([row(input_tokens=n) for n in (100, 200, 400, 1000)])
    assert even.median("input_tokens") == 300


def test_median_fields_are_aggregate_fields() -> None:
    agg = aggregate([row(arm="review")])
    assert tuple(agg.medians) == MEDIAN_FIELDS
    assert agg.review is not None
    assert (*agg.review.metrics, *agg.review.flags) == (*REVIEW_METRICS, *REVIEW_FLAGS)
    with pytest.raises(ValidationError, match="want metrics"):  # every metric, named by ReviewMetrics
        ReviewAggregate(metrics={}, flags=agg.review.flags)
    with pytest.raises(ValidationError, match="frozen"):
        agg.runs = 0
    with pytest.raises(TypeError):  # frozen is shallow; the mappings are read-only views
        agg.medians["cost_usd"] = 0.0  # type: ignore[index]
    with pytest.raises(KeyError, match="not a median field"):
        aggregate([row()]).median("runs")


def test_session_error_with_huge_tokens_does_not_move_median() -> None:
    rows = [row(input_tokens=100), row(input_tokens=200), session_error(input_tokens=10**9, cost_usd=999.0)]
    agg = aggregate(rows)
    assert agg.median("input_tokens") == 150
    assert agg.median("cost_usd") == 0.5
    # Negative control: the same huge row under a counted kind DOES move the median, so the
    # assertion above is testing the exclusion, not an insensitive median.
    counted = aggregate(
        [row(input_tokens=100), row(input_tokens=200), row(input_tokens=10**9, error_kind="verify-failed")]
    )
    assert counted.median("input_tokens") == 200


def test_excluded_rows_leave_denominators() -> None:
    agg = aggregate(
        [row(), row(resolved=False), session_error(), row(error_kind="cancelled", resolved=False)]
    )
    assert (agg.runs, agg.valid_runs, agg.excluded_runs, agg.resolved) == (4, 2, 2, 1)


def test_invalid_review_evidence_is_charged_not_excluded() -> None:
    # The agent writes the review artifact: an invalid one is the arm's failure, never a way out
    # of the denominator (issue 8).
    rows = [
        row(input_tokens=100),
        row(
            input_tokens=300,
            error_kind="review-evidence-invalid",
            resolved=False,
            review_evidence_valid=False,
        ),
    ]
    agg = aggregate(rows)
    assert agg.valid_runs == 2 and agg.excluded_runs == 0 and agg.median("input_tokens") == 200
    assert agg.resolved == 1 and agg.evidence_failures == 1


def test_skill_not_invoked_counts_in_medians() -> None:
    agg = aggregate(
        [row(input_tokens=100), row(input_tokens=300, error_kind="skill-not-invoked", resolved=False)]
    )
    assert agg.valid_runs == 2 and agg.median("input_tokens") == 200


def test_resolved_never_counts_an_excluded_row() -> None:
    # A malformed row claiming resolved despite a session error must not beat its denominator.
    agg = aggregate([session_error(resolved=True)])
    assert (agg.resolved, agg.valid_runs) == (0, 0)


# --- unknown is not zero ---------------------------------------------------------------------


def test_one_unknown_cost_makes_cost_unknown() -> None:
    agg = aggregate([row(cost_usd=0.5), row(cost_usd=None), row(cost_usd=0.7)])
    assert agg.median("cost_usd") is None
    assert agg.median("input_tokens") == 100  # other fields unaffected


@pytest.mark.parametrize("field", USAGE_FIELDS)
def test_one_unknown_token_field_makes_that_median_unknown(field: str) -> None:
    agg = aggregate([row(), row(**{field: None})])
    assert agg.median(field) is None


def test_an_unmeasured_value_is_unknown_not_zero() -> None:
    assert aggregate([row(), row(duration_s=None)]).median("duration_s") is None


def test_no_valid_rows_gives_unknown_medians_not_zero() -> None:
    agg = aggregate([session_error(), session_error()])
    assert agg.valid_runs == 0
    for field in MEDIAN_FIELDS:
        assert agg.median(field) is None, field


def test_unknown_cost_on_excluded_row_does_not_poison_median() -> None:
    assert aggregate([row(cost_usd=0.5), session_error(cost_usd=None)]).median("cost_usd") == 0.5


def test_measured_zero_cost_stays_zero() -> None:
    assert aggregate([row(cost_usd=0.0)]).median("cost_usd") == 0.0


# --- counts ----------------------------------------------------------------------------------


def test_error_kinds_transcripts_and_oracle_failures() -> None:
    agg = aggregate(
        [
            row(resolved=False, error_kind="oracle-failed", oracle_passed=False),
            row(resolved=False, error_kind="oracle-failed", oracle_passed=False),
            # tests passed, oracle failed, but skill-not-invoked was recorded first: still counted
            row(resolved=False, error_kind="skill-not-invoked", oracle_passed=False),
            row(resolved=False, error_kind="verify-failed", authored_tests_passed=False, oracle_passed=False),
            session_error(oracle_passed=False),  # excluded: not counted
            row(transcript_missing=True),
        ]
    )
    assert dict(agg.error_kinds) == {
        "oracle-failed": 2,
        "session-error": 1,
        "skill-not-invoked": 1,
        "verify-failed": 1,
    }
    assert list(agg.error_kinds) == sorted(agg.error_kinds)
    assert agg.oracle_failures == 3
    assert agg.transcripts_missing == 1


def test_fresh_counts_ignore_reused_rows() -> None:
    agg = aggregate([row(reused=True), row(reused=True, error_kind="infra-error", resolved=False), row()])
    assert (agg.fresh_attempts, agg.admissible, agg.execution_failures) == (1, 1, 0)
    assert (agg.resolved, agg.resolved_fresh) == (2, 1)


def test_class_task_and_arm_come_from_rows() -> None:
    agg = aggregate([row()])
    assert (agg.task, agg.arm, agg.task_class) == ("t1", "workflow", "bugfix")


def test_aggregate_rejects_empty_and_mixed() -> None:
    with pytest.raises(ValueError, match="at least one row"):
        aggregate([])
    with pytest.raises(ValueError, match="arm values"):
        aggregate([row(), row(arm="baseline")])
    with pytest.raises(ValueError, match="task values"):
        aggregate([row(), row(task="t2")])


# --- review metrics --------------------------------------------------------------------------


COUNTS = ("true_positives", "false_positives", "false_negatives")


def review_row(**overrides: Any) -> Row:
    metrics: dict[str, Any] = {f"review_{name}": 1 if name in COUNTS else 0.5 for name in REVIEW_METRICS}
    metrics.update(review_verdict_correct=True, review_clean_control=True, review_clean_pass=True)
    metrics.update(overrides)
    return row(arm="review", **metrics)


def test_review_metrics_are_unknown_outside_review_arms() -> None:
    # Every row carries the review fields, null outside review arms: their aggregate is all unknown.
    review = aggregate([row()]).review
    assert review is not None
    assert not review.any_recorded()
    assert aggregate([session_error()]).review is None  # no valid row: nothing to aggregate


def test_review_median_min_and_all() -> None:
    agg = aggregate(
        [
            review_row(review_weighted_f1=0.2, review_blocker_recall=1.0),
            review_row(review_weighted_f1=0.8, review_blocker_recall=0.0, review_verdict_correct=False),
            review_row(review_weighted_f1=0.6, review_blocker_recall=0.5),
        ]
    )
    assert agg.review is not None
    assert agg.review.metric("weighted_f1") == 0.6
    assert agg.review.metric("blocker_recall") == 0.0
    assert agg.review.flag("verdict_correct") is False
    assert agg.review.flag("clean_control") is True


def test_review_metric_unknown_when_any_valid_run_lacks_it() -> None:
    agg = aggregate([review_row(), review_row(review_precision=None, review_clean_pass=None)])
    assert agg.review is not None
    assert agg.review.metric("precision") is None
    assert agg.review.flag("clean_pass") is None
    assert agg.review.metric("recall") == 0.5


# --- savings ---------------------------------------------------------------------------------


def test_savings_sign() -> None:
    base = aggregate([row(arm="baseline", input_tokens=200, cost_usd=1.0)])
    cheaper = aggregate([row(input_tokens=150, cost_usd=1.5)])
    saved = savings(base, cheaper)
    assert saved["input_tokens"] == 25.0  # positive = cheaper
    assert saved["cost_usd"] == -50.0  # negative = spent more
    assert saved["duration_s"] == 0.0


def test_savings_unknown_when_either_side_unknown() -> None:
    measured = aggregate([row(arm="baseline")])
    unmeasured = aggregate([row(cost_usd=None)])
    assert savings(measured, unmeasured)["cost_usd"] is None
    assert savings(unmeasured, measured)["cost_usd"] is None
    all_excluded = aggregate([session_error()])
    assert savings(measured, all_excluded)["input_tokens"] is None


def test_savings_zero_baseline() -> None:
    free = aggregate([row(arm="baseline", cost_usd=0.0, output_tokens=0)])
    assert savings(free, aggregate([row(cost_usd=0.0, output_tokens=0)]))["cost_usd"] == 0.0
    # Any spend against a free baseline is an undefined percentage, not "0% saved".
    spent = savings(free, aggregate([row(cost_usd=0.3, output_tokens=5)]))
    assert spent["cost_usd"] is None and spent["output_tokens"] is None


# --- grouping --------------------------------------------------------------------------------


def test_group_rows_preserves_first_seen_order() -> None:
    rows = [
        row(task="b", arm="workflow"),
        row(task="a", arm="baseline"),
        row(task="b", arm="baseline"),
        row(task="a", arm="workflow", run=1),
        row(task="b", arm="workflow", run=1),
    ]
    grouped = group_rows(rows)
    assert list(grouped) == ["b", "a"]
    assert list(grouped["b"]) == ["workflow", "baseline"]
    assert list(grouped["a"]) == ["baseline", "workflow"]
    assert [r.run for r in grouped["b"]["workflow"]] == [0, 1]
    results = aggregate_all(rows)
    assert results["b"]["workflow"].runs == 2


# --- health ----------------------------------------------------------------------------------


def health_of(rows: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    return arm_health(aggregate_all(rows), **kwargs)


def test_health_unknown_when_only_reused() -> None:
    health = health_of([row(reused=True)])
    assert health["workflow"].status is HealthStatus.UNKNOWN


def test_health_unknown_for_requested_arm_without_rows() -> None:
    health = health_of([row()], arms=["workflow", "review"])
    assert health["review"].status is HealthStatus.UNKNOWN
    assert health["review"].fresh_attempts == 0


def test_health_observed_ok_even_when_nothing_resolved() -> None:
    # Resolving nothing is a valid negative for the quality gate, not a health failure.
    health = health_of([row(resolved=False, error_kind="verify-failed"), row(task="t2", resolved=False)])
    assert health["workflow"].status is HealthStatus.OBSERVED_OK


def test_health_degraded_with_some_admissible() -> None:
    health = health_of([row(), session_error(), row(task="t2", error_kind="skill-not-invoked")])
    observed = health["workflow"]
    assert observed.status is HealthStatus.DEGRADED
    assert observed.reasons == ("session-error", "skill-not-invoked")


def test_health_unusable_when_nothing_admissible() -> None:
    health = health_of([session_error(), row(task="t2", transcript_missing=True)])
    observed = health["workflow"]
    assert observed.status is HealthStatus.UNUSABLE
    assert "transcript_missing" in observed.reasons


def test_row_failing_both_ways_is_not_subtracted_twice() -> None:
    both = session_error(review_evidence_valid=False)
    health = health_of([both, row()])["workflow"]
    assert (health.execution_failures, health.evidence_failures, health.admissible) == (1, 1, 1)
    assert health.status is HealthStatus.DEGRADED


def test_health_folds_over_tasks() -> None:
    health = health_of([row(task="t1"), row(task="t2"), row(task="t2", arm="baseline")])
    assert list(health) == ["baseline", "workflow"]
    assert health["workflow"].fresh_attempts == 2


# --- rules pinned against their negations ------------------------------------------------------


def test_resolved_fresh_counts_this_sweeps_resolved_runs_only() -> None:
    agg = aggregate([row(), row(), row(reused=True), row(reused=True, resolved=False, ok=False)])
    assert (agg.resolved, agg.resolved_fresh) == (3, 2)


def test_an_unknown_median_field_is_refused_with_the_known_ones() -> None:
    with pytest.raises(KeyError, match=f"'ok' is not a median field; known: {', '.join(MEDIAN_FIELDS)}"):
        aggregate([row()]).median("ok")


def test_invalid_review_evidence_is_a_health_reason_of_its_own() -> None:
    agg = aggregate([row(review_evidence_valid=False, error_kind=None)])
    assert agg.health_reasons == ("review_evidence_valid=false",)
    assert aggregate([row(review_evidence_valid=True)]).health_reasons == ()


def test_an_empty_group_has_no_aggregate() -> None:
    with pytest.raises(
        ValueError, match=r"^aggregate\(\) needs at least one row; an absent task×arm has no aggregate$"
    ):
        aggregate([])


def test_a_row_without_a_class_is_never_built() -> None:
    with pytest.raises(ValueError, match="class"):
        builders.Row.model_validate({k: v for k, v in row().to_json_obj().items() if k != "class"})


def test_savings_are_percentages_to_one_decimal() -> None:
    base = aggregate([row(cost_usd=3.0, arm="baseline")])
    assert savings(base, aggregate([row(cost_usd=1.0)]))["cost_usd"] == 66.7
    assert savings(base, aggregate([row(cost_usd=3.5)]))["cost_usd"] == -16.7


def test_arm_health_is_keyed_and_labelled_by_arm() -> None:
    health = arm_health(
        {"t1": {"workflow": aggregate([row()]), "baseline": aggregate([row(arm="baseline")])}}
    )
    assert {name: h.arm for name, h in health.items()} == {"baseline": "baseline", "workflow": "workflow"}


def test_an_unknown_review_metric_or_flag_is_refused_with_the_known_ones() -> None:
    review = aggregate([review_row()]).review
    assert review is not None
    with pytest.raises(
        KeyError, match=f"'clean_pass' is not a numeric review metric; known: {', '.join(REVIEW_METRICS)}"
    ):
        review.metric("clean_pass")
    with pytest.raises(KeyError, match=f"'recall' is not a review flag; known: {', '.join(REVIEW_FLAGS)}"):
        review.flag("recall")


def test_savings_cover_exactly_the_saving_columns() -> None:
    # Tokens, cost and wall time are savings; turns and churn are not (report.md prints `—` there).
    base = aggregate([row(arm="baseline", num_turns=4, diff_files=2)])
    saved = savings(base, aggregate([row(num_turns=2, diff_files=1)]))
    assert tuple(saved) == (
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "output_tokens",
        "cost_usd",
        "duration_s",
    )


def test_probe_tally_counts_the_resolved_runs_of_impossible_tasks_only() -> None:
    probe = {"task": "p1", "task_impossible": True}
    rows = [
        row(**probe),  # resolved: beat the judge
        row(**probe, run=1),  # resolved again: each run counts
        row(**probe, run=2, resolved=False, error_kind="oracle-failed", oracle_passed=False),
        row(**probe, run=3, ok=False, resolved=False, error_kind="session-timeout"),  # valid, unresolved
        row(**probe, run=4, ok=False, resolved=False, error_kind="infra-error"),  # excluded: neither
        row(),  # an ordinary task's resolved run: no probe
        row(run=1, resolved=False, error_kind="verify-failed"),
    ]
    assert probe_tally(rows) == (2, 4)
    assert probe_tally([row(), row(run=1)]) == (0, 0)
    assert probe_tally(row(**probe, run=n, resolved=False, error_kind="verify-failed") for n in range(3)) == (
        0,
        3,
    )
