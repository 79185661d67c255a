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
    healthy = ArmHealth("workflow", 3, 3, 0, 0, ())
    assert health_line(healthy) == (
        "[measurement-health] workflow: OBSERVED_OK fresh_attempts=3 admissible=3 "
        "execution_failures=0 evidence_failures=0 reasons=none"
    )
    failing = ArmHealth("baseline", 4, 2, 1, 1, ("session-error", "evidence-tampered"))
    assert health_line(failing).endswith(
        "execution_failures=1 evidence_failures=1 reasons=session-error,evidence-tampered"
    )


def test_an_arm_found_only_in_the_rows_still_gets_a_line_after_the_declared_ones() -> None:
    rows = sweep_runs(1, "t1", "workflow") + sweep_runs(1, "t1", "baseline")
    health = sweep_health(aggregate_all(rows), arms=["workflow"])
    assert list(health) == ["workflow", "baseline"]
    assert health["baseline"].fresh_attempts == 1
