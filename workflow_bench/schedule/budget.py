"""Spend and runtime budgets: whether the next cell may start.

``--max-cost-usd X``: before a cell starts, stop if what is committed plus the
next cell's expected cost would pass X. Committed = the known cost of every
finished cell + an estimate for each finished cell whose cost is unknown + an
estimate for each cell still running. The estimate for an arm is the running
median of that arm's known cell costs, else the median over every arm's known
costs. Unknown is not zero: an unknown cost is estimated, never counted as 0,
and once cells have finished without a single known cost the budget cannot be
enforced, so the sweep stops rather than spend blind. Until the first cost is
known nothing can be predicted, so the first cells (at most the scheduler's
window) start; the budget can therefore be overshot by the cells in flight.

``--max-runtime S``: no cell starts more than S seconds after the sweep began;
cells already running finish.

Both end the sweep as ``aborted`` with the partial evidence kept (exit 1).
"""

from __future__ import annotations

import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from workflow_bench.rows.model import Row

WHY_COST = "budget-cost"
WHY_RUNTIME = "budget-runtime"


@dataclass(frozen=True, slots=True)
class Budget:
    max_cost_usd: float | None = None
    max_runtime_s: float | None = None

    def __post_init__(self) -> None:
        if self.max_cost_usd is not None and not self.max_cost_usd > 0:
            raise ValueError(f"max_cost_usd must be positive, got {self.max_cost_usd}")
        if self.max_runtime_s is not None and not self.max_runtime_s > 0:
            raise ValueError(f"max_runtime_s must be positive, got {self.max_runtime_s}")


class BudgetGuard:
    """Tracks spend per arm; ``check(arm)`` before a cell starts, ``finished(arm, row)`` after."""

    def __init__(
        self, budget: Budget, *, started: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._budget = budget
        self._started = started
        self._clock = clock
        self._known: dict[str, list[float]] = defaultdict(list)
        self._unknown: Counter[str] = Counter()
        self._running: Counter[str] = Counter()

    def _estimate(self, arm: str) -> float | None:
        if self._known[arm]:
            return statistics.median(self._known[arm])
        every = [cost for costs in self._known.values() for cost in costs]
        return statistics.median(every) if every else None

    def committed(self) -> float | None:
        """Known spend plus estimates for unknown and running cells; None when nothing can be estimated."""
        total = sum(cost for costs in self._known.values() for cost in costs)
        for arm, count in (self._unknown + self._running).items():
            estimate = self._estimate(arm)
            if estimate is None:
                return None
            total += estimate * count
        return total

    def check(self, arm: str) -> tuple[str, str] | None:
        """``(why, detail)`` when the next ``arm`` cell must not start; else reserve it as running."""
        limit = self._budget.max_runtime_s
        if limit is not None and (elapsed := self._clock() - self._started) >= limit:
            return (
                WHY_RUNTIME,
                f"--max-runtime {limit:g} s reached after {elapsed:.0f} s; no new cell started",
            )
        reason = self._cost_reason(arm)
        if reason is None:
            self._running[arm] += 1
        return reason

    def _cost_reason(self, arm: str) -> tuple[str, str] | None:
        limit = self._budget.max_cost_usd
        if limit is None:
            return None
        finished = sum(len(c) for c in self._known.values()) + sum(self._unknown.values())
        committed = self.committed()
        if committed is None or (next_cost := self._estimate(arm)) is None:
            if finished and not any(self._known.values()):
                return WHY_COST, (
                    f"--max-cost-usd {limit:g}: {finished} cell(s) finished and none reported its cost; "
                    "the budget cannot be enforced, so no new cell started"
                )
            return None  # nothing known yet: the first cells teach the estimate
        if committed + next_cost > limit:
            return WHY_COST, (
                f"--max-cost-usd {limit:g}: committed ${committed:.4f} + expected ${next_cost:.4f} for the "
                f"next {arm} cell would pass it; no new cell started"
            )
        return None

    def finished(self, arm: str, row: Row) -> None:
        if self._running[arm] > 0:
            self._running[arm] -= 1
        cost = row.cost_usd
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            self._known[arm].append(float(cost))
        else:
            self._unknown[arm] += 1
