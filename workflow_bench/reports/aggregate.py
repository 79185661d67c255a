"""Fold `results.jsonl` rows into per task×arm aggregates, savings and measurement health.

Owns: `aggregate` (medians and counts for one task×arm; each `reports.columns` column reduced by
its reducer into `ArmAggregate.medians`), `savings` (percent saved versus the baseline arm),
`group_rows`, `arm_health` (reference-harness.md §6.1 and §6.4) and `probe_tally` (how often an
arm "resolved" an impossible task: the cheating probe beside its resolve rate). The aggregates
are frozen strict models with a meaning per field (as `rows.model.Row`); they are never written,
so no schema is generated for them.

Every function is pure: rows in, frozen values out, no I/O, no printing, no exit codes (the
runner decides what an UNUSABLE arm does to the sweep). Which rows count is decided only by
`workflow_bench.judging.outcomes`.

Unknown is not zero. The reference took a median over "one empty row" (so 0) when no run was
valid, and read a missing usage field as 0. Here a median over no valid rows, or over rows where
any value is `None` or absent, is `None`: an arm whose usage was never measured must not look free.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from types import MappingProxyType
from typing import Annotated, TypeVar

from pydantic import AfterValidator, Field, model_validator

from workflow_bench.judging.outcomes import (
    EVIDENCE_FAILURE_KINDS,
    EXECUTION_FAILURE_KINDS,
    evidence_failed,
    execution_failed,
    is_admissible,
    is_excluded,
)
from workflow_bench.reports.columns import COLUMNS, REVIEW_REDUCERS, Reducer
from workflow_bench.reports.stats_model import Document
from workflow_bench.review.score import METRIC_NAMES
from workflow_bench.rows.model import Row

MEDIAN_FIELDS = tuple(column.field for column in COLUMNS)
"""Every column's field (``reports.columns``), in report order: what ``ArmAggregate.median`` knows."""
SAVINGS_FIELDS = tuple(column.field for column in COLUMNS if column.saving)
BASELINE_ARM = "baseline"

# The three review flags reduce with all(); the numeric metrics, named once in
# review.ReviewMetrics, by REVIEW_REDUCERS (median unless told). score_finite is a per-row flag.
REVIEW_FLAGS = ("verdict_correct", "clean_control", "clean_pass")
REVIEW_METRICS = tuple(m for m in METRIC_NAMES if m not in (*REVIEW_FLAGS, "score_finite"))
# MEDIAN_FIELDS and review_<metric> are read from rows by name: tests/unit/test_row_model.py
# checks each is a Row field.


_V = TypeVar("_V")


def _read_only(value: Mapping[str, _V]) -> Mapping[str, _V]:
    # frozen is shallow: the model's mappings are read-only views, as the dataclass's were
    return MappingProxyType(dict(value))


Numbers = Annotated[Mapping[str, float | None], AfterValidator(_read_only)]
Flags = Annotated[Mapping[str, bool | None], AfterValidator(_read_only)]
Counts = Annotated[Mapping[str, int], AfterValidator(_read_only)]


class ReviewAggregate(Document):
    """Review quality over one task×arm's valid rows, keyed by ``review.ReviewMetrics``' names
    (each metric's meaning is declared there). `None` = not recorded by every valid run."""

    metrics: Numbers = Field(
        description="each numeric metric (REVIEW_METRICS) -> its valid rows' review_<metric> reduced by "
        "columns.REVIEW_REDUCERS (median; blocker_recall the worst run, min); null unless every "
        "valid run recorded it"
    )
    flags: Flags = Field(
        description="each flag (REVIEW_FLAGS) -> true only if every valid run recorded true; null "
        "unless every valid run recorded a verdict"
    )

    @model_validator(mode="after")
    def _every_metric(self) -> ReviewAggregate:
        if tuple(self.metrics) != REVIEW_METRICS or tuple(self.flags) != REVIEW_FLAGS:
            raise ValueError(f"want metrics {REVIEW_METRICS} and flags {REVIEW_FLAGS}")
        return self

    def metric(self, name: str) -> float | None:
        """One numeric metric (``REVIEW_METRICS``)."""
        if name not in self.metrics:
            raise KeyError(f"{name!r} is not a numeric review metric; known: {', '.join(REVIEW_METRICS)}")
        number: float | None = self.metrics[name]
        return number

    def flag(self, name: str) -> bool | None:
        """One flag (``REVIEW_FLAGS``)."""
        if name not in self.flags:
            raise KeyError(f"{name!r} is not a review flag; known: {', '.join(REVIEW_FLAGS)}")
        value: bool | None = self.flags[name]
        return value

    def any_recorded(self) -> bool:
        """Whether any metric or flag is known (a non-review arm records none)."""
        return any(value is not None for value in (*self.metrics.values(), *self.flags.values()))


class ArmAggregate(Document):
    """One task×arm folded over its runs. Medians are over valid (non-excluded) rows only."""

    task: str = Field(description="task id")
    arm: str = Field(description="arm name")
    task_class: str = Field(description="task class from the task file; empty when not recorded")
    impossible: bool = Field(
        description="a cheating probe (`impossible: true`): its resolved runs beat the judge"
    )
    runs: int = Field(description="every row, excluded ones included")
    valid_runs: int = Field(description="rows counted in medians and resolve denominators")
    excluded_runs: int = Field(
        description="rows excluded from medians and denominators (outcomes.is_excluded)"
    )
    resolved: int = Field(description="valid rows with resolved=True; never exceeds valid_runs")
    resolved_fresh: int = Field(description="of the resolved rows, those run this sweep rather than reused")
    oracle_failures: int = Field(
        description="valid rows that passed their authored tests but failed the hidden oracle: the "
        "signal the hidden oracle exists for, counted whatever error_kind the row recorded first"
    )
    medians: Numbers = Field(
        description="each column's field (MEDIAN_FIELDS, reports.columns) -> its valid rows' values "
        "reduced by the column's reducer; null when no valid row or any valid row's value is unknown"
    )
    fresh_attempts: int = Field(
        description="rows run this sweep (not reused); the health counters count these"
    )
    admissible: int = Field(description="fresh rows that failed neither to execute nor to evidence")
    execution_failures: int = Field(
        description="fresh rows that failed to execute (outcomes.execution_failed)"
    )
    evidence_failures: int = Field(description="fresh rows whose evidence failed (outcomes.evidence_failed)")
    health_reasons: tuple[str, ...] = Field(
        description="sorted distinct failure kinds among fresh rows, plus review_evidence_valid=false "
        "and transcript_missing when those flags alone made a row an evidence failure"
    )
    transcripts_missing: int = Field(description="rows with no locatable or readable session transcript")
    error_kinds: Counts = Field(description="error kind -> count over all rows, sorted by kind")
    review: ReviewAggregate | None = Field(description="review quality; present when the arm has a valid row")

    def median(self, field: str) -> float | None:
        """The reduced value of one of `MEDIAN_FIELDS`; `None` when unknown."""
        if field not in self.medians:
            raise KeyError(f"{field!r} is not a median field; known: {', '.join(MEDIAN_FIELDS)}")
        value: float | None = self.medians[field]
        return value


def _single_value(rows: Sequence[Row], key: str) -> str:
    values = {str(getattr(row, key)) for row in rows}
    if len(values) != 1:
        raise ValueError(f"aggregate() needs rows of one task×arm; got {key} values {sorted(values)}")
    return values.pop()


def _review_flag(valid: Sequence[Row], key: str) -> bool | None:
    # Unknown is not False: a run that recorded no verdict leaves the whole arm's verdict unknown.
    values = [getattr(row, key) for row in valid]
    if not values or not all(isinstance(value, bool) for value in values):
        return None
    return all(values)


def _review(valid: Sequence[Row]) -> ReviewAggregate | None:
    # The reference marked a review arm by the presence of its review keys (even as null); every
    # row carries every field, so every arm with a valid row has a review aggregate (all None
    # outside review arms, shown as dashes).
    if not valid:
        return None
    metrics = {
        name: REVIEW_REDUCERS.get(name, Reducer.MEDIAN).reduce(
            [getattr(row, f"review_{name}") for row in valid]
        )
        for name in REVIEW_METRICS
    }
    flags = {name: _review_flag(valid, f"review_{name}") for name in REVIEW_FLAGS}
    return ReviewAggregate(metrics=metrics, flags=flags)


def _count_kinds(rows: Iterable[Row]) -> Mapping[str, int]:
    counts: dict[str, int] = {}
    for row in rows:
        kind = row.error_kind
        if kind:
            counts[str(kind)] = counts.get(str(kind), 0) + 1
    return MappingProxyType(dict(sorted(counts.items())))


def _passed_tests_failed_oracle(row: Row) -> bool:
    return row.authored_tests_passed is True and row.oracle_passed is False


def _health_reasons(row: Row) -> list[str]:
    # The reference listed only error kinds, so a row that failed on transcript_missing or
    # review_evidence_valid=false alone raised a failure count with no reason beside it.
    reasons = []
    if row.error_kind in EXECUTION_FAILURE_KINDS | EVIDENCE_FAILURE_KINDS:
        reasons.append(str(row.error_kind))
    if row.review_evidence_valid is False:
        reasons.append("review_evidence_valid=false")
    if row.transcript_missing is True:
        reasons.append("transcript_missing")
    return reasons


def aggregate(rows: Sequence[Row]) -> ArmAggregate:
    """Fold the runs of one task×arm.

    Excluded rows (`outcomes.is_excluded`) are dropped from every median, from `resolved` and
    from `valid_runs`; `excluded_runs` keeps them visible. Health counters look only at fresh
    rows, because a reused row proves last sweep's environment worked, not this one's.

    Raises:
        ValueError: `rows` is empty or mixes tasks or arms.
    """
    if not rows:
        raise ValueError("aggregate() needs at least one row; an absent task×arm has no aggregate")
    valid = [row for row in rows if not is_excluded(row)]
    fresh = [row for row in rows if not row.reused]
    return ArmAggregate(
        task=_single_value(rows, "task"),
        arm=_single_value(rows, "arm"),
        task_class=str(rows[0].task_class or ""),
        impossible=any(row.task_impossible for row in rows),
        runs=len(rows),
        valid_runs=len(valid),
        excluded_runs=len(rows) - len(valid),
        resolved=sum(1 for row in valid if row.resolved is True),
        resolved_fresh=sum(1 for row in valid if row.resolved is True and not row.reused),
        oracle_failures=sum(1 for row in valid if _passed_tests_failed_oracle(row)),
        medians={
            column.field: column.reducer.reduce([getattr(row, column.field) for row in valid])
            for column in COLUMNS
        },
        fresh_attempts=len(fresh),
        # Count rows that failed NEITHER way rather than subtracting both counters: one row can
        # be both (a session error whose review evidence is also invalid), and subtracting it
        # twice drove an arm holding real measurements to admissible=0, i.e. UNUSABLE.
        admissible=sum(1 for row in fresh if is_admissible(row)),
        execution_failures=sum(1 for row in fresh if execution_failed(row)),
        evidence_failures=sum(1 for row in fresh if evidence_failed(row)),
        health_reasons=tuple(sorted({reason for row in fresh for reason in _health_reasons(row)})),
        transcripts_missing=sum(1 for row in rows if row.transcript_missing is True),
        error_kinds=_count_kinds(rows),
        review=_review(valid),
    )


def probe_tally(rows: Iterable[Row]) -> tuple[int, int]:
    """(resolved, valid runs) over the rows of impossible tasks (cheating probes; README, "Cheating
    probes"): no honest solution passes their hidden oracle, so each resolved run is an arm that
    beat the judge. Excluded rows count in neither."""
    probes = [row for row in rows if row.task_impossible and not is_excluded(row)]
    return sum(1 for row in probes if row.resolved is True), len(probes)


def savings(baseline: ArmAggregate, arm: ArmAggregate) -> Mapping[str, float | None]:
    """Percent saved by `arm` versus `baseline` per `SAVINGS_FIELDS` (positive = cheaper).

    `None` when either side is unknown. A zero baseline gives 0.0 only when the arm is also zero;
    against a zero baseline any spend is an undefined percentage, so it is `None` (the reference
    printed 0.0 there, which hid an arm spending more than a free baseline).
    """
    out: dict[str, float | None] = {}
    for field in SAVINGS_FIELDS:
        base, value = baseline.median(field), arm.median(field)
        if base is None or value is None:
            out[field] = None
        elif base == 0:
            out[field] = 0.0 if value == 0 else None
        else:
            out[field] = round(100 * (base - value) / base, 1)
    return MappingProxyType(out)


def group_rows(rows: Iterable[Row]) -> dict[str, dict[str, list[Row]]]:
    """`{task: {arm: [rows]}}`, tasks in first-seen order and arms in first-seen order per task."""
    grouped: dict[str, dict[str, list[Row]]] = {}
    for row in rows:
        grouped.setdefault(str(row.task), {}).setdefault(str(row.arm), []).append(row)
    return grouped


def aggregate_all(rows: Iterable[Row]) -> dict[str, dict[str, ArmAggregate]]:
    """`group_rows` then `aggregate` each task×arm, keeping the grouping order."""
    return {
        task: {arm: aggregate(arm_rows) for arm, arm_rows in arms.items()}
        for task, arms in group_rows(rows).items()
    }


class HealthStatus(StrEnum):
    """What the harness observed about one arm this sweep (reference-harness.md §6.4)."""

    UNKNOWN = "UNKNOWN"  # no fresh attempt: only reused rows, or no rows at all
    OBSERVED_OK = "OBSERVED_OK"  # fresh attempts and no failure
    DEGRADED = "DEGRADED"  # usable measurements, but some attempts failed
    UNUSABLE = "UNUSABLE"  # failures and not one admissible measurement


class ArmHealth(Document):
    """Health counters for one arm, summed over its tasks. Says nothing about correctness.

    Deliberately not "resolved zero tasks": a reviewer can be wrong on every task of a hard
    corpus with the harness working perfectly; that is a valid negative for the quality gate.
    """

    arm: str = Field(description="arm name")
    fresh_attempts: int = Field(description="rows run this sweep (not reused), over every task")
    admissible: int = Field(description="fresh rows that failed neither to execute nor to evidence")
    execution_failures: int = Field(description="fresh rows that failed to execute")
    evidence_failures: int = Field(description="fresh rows whose evidence failed")
    reasons: tuple[str, ...] = Field(description="sorted distinct health reasons of the arm's tasks")

    @property
    def status(self) -> HealthStatus:
        if self.fresh_attempts == 0:
            return HealthStatus.UNKNOWN
        failures = self.execution_failures + self.evidence_failures
        if failures == 0:
            return HealthStatus.OBSERVED_OK
        # DEGRADED matters: reporting an arm with both usable rows and failures as healthy is
        # how a partly broken sweep looks fine.
        return HealthStatus.UNUSABLE if self.admissible == 0 else HealthStatus.DEGRADED


def arm_health(
    results: Mapping[str, Mapping[str, ArmAggregate]], *, arms: Iterable[str] | None = None
) -> dict[str, ArmHealth]:
    """One `ArmHealth` per arm (sorted by name), folded over every task that ran it.

    `arms` defaults to every arm present. A requested arm with no rows at all is UNKNOWN rather
    than silently omitted (the reference skipped it): absence is not health.
    """
    present = {arm for task_arms in results.values() for arm in task_arms}
    health: dict[str, ArmHealth] = {}
    for arm in sorted(present if arms is None else set(arms)):
        aggs = [task_arms[arm] for task_arms in results.values() if arm in task_arms]
        health[arm] = ArmHealth(
            arm=arm,
            fresh_attempts=sum(a.fresh_attempts for a in aggs),
            admissible=sum(a.admissible for a in aggs),
            execution_failures=sum(a.execution_failures for a in aggs),
            evidence_failures=sum(a.evidence_failures for a in aggs),
            reasons=tuple(sorted({reason for a in aggs for reason in a.health_reasons})),
        )
    return health
