"""The `[measurement-health]` line's exact shape, and arms found only in the rows.

The line is read by people and by scripts (reference-harness.md §6.4): every counter is
`key=value`, reasons are comma-joined with no spaces (one token), and "none" when there are none.
An arm that is in the rows but was not declared still gets its line, after the declared arms.
"""

from __future__ import annotations

import pytest

from tests.builders import sweep_runs
from workflow_bench.reports.aggregate import ArmHealth, aggregate_all
from workflow_bench.reports.health import health_line, sweep_health

pytestmark = pytest.mark.unit


def test_the_line_is_key_value_tokens_with_comma_joined_reasons() -> None:
    healthy = ArmHealth(
        arm="workflow", fresh_attempts=3, admissible=3, execution_failures=0, evidence_failures=0, reasons=()
    )
    assert health_line(healthy) == (
        "[measurement-health] workflow: OBSERVED_OK fresh_attempts=3 admissible=3 "
        "execution_failures=0 evidence_failures=0 reasons=none"
    )
    failing = ArmHealth(
        arm="baseline",
        fresh_attempts=4,
        admissible=2,
        execution_failures=1,
        evidence_failures=1,
        reasons=("session-error", "evidence-tampered"),
    )
    assert health_line(failing).endswith(
        "execution_failures=1 evidence_failures=1 reasons=session-error,evidence-tampered"
    )


def test_an_arm_found_only_in_the_rows_still_gets_a_line_after_the_declared_ones() -> None:
    rows = sweep_runs(1, "t1", "workflow") + sweep_runs(1, "t1", "baseline")
    health = sweep_health(aggregate_all(rows), arms=["workflow"])
    assert list(health) == ["workflow", "baseline"]
    assert health["baseline"].fresh_attempts == 1


def test_durations_of_unbounded_parallel_cells_are_flagged_not_comparable() -> None:
    from tests.builders import resource_limits, row
    from workflow_bench.reports.health import duration_health, duration_section

    unbounded = [row(duration_s=2.5, resource_limits=resource_limits(cpus=None)) for _ in range(3)]
    bounded = [row(duration_s=2.5, resource_limits=resource_limits(cpus=1.0)) for _ in range(3)]
    line = duration_health(unbounded, workers=2)
    assert line is not None and line.startswith(
        "[measurement-health] durations: NOT COMPARABLE: 3 of 3 cells"
    )
    assert "--workers 2" in line and duration_section(unbounded, workers=2)[0] == "## Duration comparability"
    assert duration_health(unbounded, workers=None) is not None  # parallel unknown: flagged
    # Negative controls: one worker, or every cell under its CPU quota, is comparable.
    assert duration_health(unbounded, workers=1) is None
    assert duration_health(bounded, workers=2) is None and duration_section(bounded, workers=2) == []
    mixed = duration_health([*bounded, unbounded[0]], workers=2)
    assert mixed is not None and "1 of 4 cells" in mixed
