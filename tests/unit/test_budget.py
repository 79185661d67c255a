"""Budgets: the cost rule (spent + the arm's running median), unknown costs, the runtime cap."""

from __future__ import annotations

import pytest

from tests.builders import row
from workflow_bench.schedule.budget import WHY_COST, WHY_RUNTIME, Budget, BudgetGuard

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _guard(**limits) -> tuple[BudgetGuard, Clock]:
    clock = Clock()
    return BudgetGuard(Budget(**limits), started=clock.now, clock=clock), clock


def test_no_limits_never_stop():
    guard, clock = _guard()
    for _ in range(50):
        assert guard.check("baseline") is None
        guard.finished("baseline", row(cost_usd=10.0))
    clock.now += 1e6
    assert guard.check("baseline") is None


def test_cost_stops_when_spent_plus_the_arms_median_would_pass_the_limit():
    guard, _ = _guard(max_cost_usd=10.0)
    for cost in (2.0, 3.0, 2.5):
        assert guard.check("workflow") is None
        guard.finished("workflow", row(cost_usd=cost))
    # spent 7.5; workflow median 2.5 → 10.0 does not pass 10
    assert guard.check("workflow") is None
    guard.finished("workflow", row(cost_usd=2.5))
    why, detail = guard.check("workflow")
    assert why == WHY_COST and "$10.0000" in detail


def test_cost_uses_that_arms_median_not_the_global_one():
    guard, _ = _guard(max_cost_usd=5.0)
    for arm, cost in (("baseline", 0.5), ("workflow", 3.0)):
        guard.check(arm)
        guard.finished(arm, row(cost_usd=cost))
    assert guard.check("baseline") is None  # 3.5 + 0.5
    guard.finished("baseline", row(cost_usd=0.5))
    assert guard.check("workflow")[0] == WHY_COST  # 4.0 + 3.0 > 5


def test_running_cells_count_at_their_estimate():
    guard, _ = _guard(max_cost_usd=5.0)
    guard.check("a")
    guard.finished("a", row(cost_usd=2.0))
    assert guard.check("a") is None  # 2 + 2; now one a cell is running
    assert guard.check("a")[0] == WHY_COST  # 2 + 2 (running) + 2 > 5


def test_unknown_cost_is_estimated_never_zero():
    guard, _ = _guard(max_cost_usd=5.0)
    guard.check("a")
    guard.finished("a", row(cost_usd=2.0))
    guard.check("a")
    guard.finished("a", row(cost_usd=None))  # an unknown cost counts at the median (2), not 0
    assert guard.committed() == 4.0
    assert guard.check("a")[0] == WHY_COST


def test_costs_never_reported_stop_the_sweep_instead_of_spending_blind():
    guard, _ = _guard(max_cost_usd=5.0)
    assert guard.check("a") is None  # nothing known yet: the first cell teaches the estimate
    guard.finished("a", row(cost_usd=None))
    why, detail = guard.check("a")
    assert why == WHY_COST and "none reported its cost" in detail


def test_runtime_cap_stops_new_cells_after_the_limit():
    guard, clock = _guard(max_runtime_s=60)
    clock.now += 59
    assert guard.check("a") is None
    clock.now += 1
    why, detail = guard.check("a")
    assert why == WHY_RUNTIME and "--max-runtime 60" in detail


@pytest.mark.parametrize("limits", [{"max_cost_usd": 0}, {"max_runtime_s": -1}])
def test_non_positive_limits_are_refused(limits):
    with pytest.raises(ValueError):
        Budget(**limits)
