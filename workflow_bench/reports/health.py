"""Measurement health per arm (reference-harness.md §6.4) and the sweep's exit-code precedence.

Owns: the `[measurement-health]` lines printed for EVERY arm of a sweep (baselines, comparators
and candidates included; the reference checked only the incumbents of candidate arms and the
review arms), `sweep_exit_code`, the one place that ranks breaker, cancellation and health, and
`duration_health`: durations of cells that ran beside others with no CPU bound
(`resource_limits.cpus` null, `--workers` over 1) are flagged NOT COMPARABLE (issue 33: one cell's
`duration_s`, a promotion metric, was 4.6x its solo value beside a busy neighbour).

The counters and the status predicate live in `aggregate.ArmHealth` (computed from rows); this
module only renders and ranks them. Pure: lines out, no printing, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from workflow_bench.reports.aggregate import ArmAggregate, ArmHealth, HealthStatus, arm_health
from workflow_bench.rows.model import Row

HEALTH_PREFIX = "[measurement-health]"
EXIT_OK, EXIT_FAILED, EXIT_CANCELLED = 0, 1, 130


def sweep_health(
    results: Mapping[str, Mapping[str, ArmAggregate]], *, arms: Iterable[str]
) -> dict[str, ArmHealth]:
    """Health of every declared arm plus any arm found in the rows, in declared order."""
    declared = list(dict.fromkeys(arms))
    present = [arm for task_arms in results.values() for arm in task_arms if arm not in declared]
    order = declared + list(dict.fromkeys(present))
    health = arm_health(results, arms=order)
    return {arm: health[arm] for arm in order}


def health_line(health: ArmHealth) -> str:
    """One `[measurement-health] <arm>: <STATUS> …` line; UNUSABLE says the cause is undetermined.

    "cause=undetermined" is the reference's wording: zero admissible rows proves the arm measured
    nothing, not why (an outage, a broken sandbox and an agent that corrupts its own evidence
    look alike from the rows).
    """
    status = health.status
    reasons = ",".join(health.reasons) or "none"
    line = (
        f"{HEALTH_PREFIX} {health.arm}: {status.value} fresh_attempts={health.fresh_attempts} "
        f"admissible={health.admissible} execution_failures={health.execution_failures} "
        f"evidence_failures={health.evidence_failures} reasons={reasons}"
    )
    if status is HealthStatus.UNUSABLE:
        line += " cause=undetermined"
    return line


def unusable_arms(health: Mapping[str, ArmHealth]) -> list[str]:
    return [arm for arm, h in health.items() if h.status is HealthStatus.UNUSABLE]


def sweep_exit_code(status: str, health: Mapping[str, ArmHealth]) -> int:
    """Exit precedence: outage breaker 1, then cancellation 130, then an UNUSABLE arm 1, else 0.

    The breaker outranks cancellation because an aborted sweep already says "the upstream is
    down"; cancellation outranks health because a half-run arm is expected to look unusable.
    """
    if status == "aborted":
        return EXIT_FAILED
    if status == "cancelled":
        return EXIT_CANCELLED
    return EXIT_FAILED if unusable_arms(health) else EXIT_OK


def duration_health(rows: Sequence[Row], *, workers: int | None) -> str | None:
    """A `[measurement-health] durations: NOT COMPARABLE …` line when cells with a duration ran in
    parallel (``workers`` over 1) without a CPU bound; None when every duration is comparable
    (one worker, or every cell under its quota). ``workers`` None (not recorded): parallel unknown,
    so any unbounded cell is flagged."""
    measured = [r for r in rows if r.duration_s is not None and not r.reused]
    unbounded = [r for r in measured if r.resource_limits is None or r.resource_limits.cpus is None]
    if not unbounded or (workers is not None and workers <= 1):
        return None
    ran = "unknown workers" if workers is None else f"--workers {workers}"
    return (
        f"{HEALTH_PREFIX} durations: NOT COMPARABLE: {len(unbounded)} of {len(measured)} cells ran "
        f"beside others ({ran}) with no CPU bound (resource_limits.cpus null): their duration_s "
        "depends on the neighbour; rerun with --workers 1 or where cells get a CPU quota"
    )


def duration_section(rows: Sequence[Row], *, workers: int | None) -> list[str]:
    """The report's lines for ``duration_health`` (none when durations are comparable)."""
    line = duration_health(rows, workers=workers)
    if line is None:
        return []
    return ["## Duration comparability", "", line.removeprefix(HEALTH_PREFIX).strip(), ""]
