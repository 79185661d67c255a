"""Which cell to start first: ``--order {plan,longest-first}``.

``plan`` starts cells in plan order. ``longest-first`` is plain list
scheduling (LPT): among the cells the packed window allows, the one predicted
to take longest starts first, so a long cell does not end up alone at the
tail of the sweep. Prediction, per (task, arm): the median ``cell_wall_s`` of
prior rows (from ``--resume`` / ``--reuse-results`` directories); else the
median over that arm's prior rows on other tasks; else a relative weight from
the task's ``expensive`` flag. Fold order, and so the breaker, stays the plan
order whatever this predicts.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Literal

from workflow_bench.rows.model import Row

Order = Literal["plan", "longest-first"]
ORDERS: tuple[Order, ...] = ("plan", "longest-first")
EXPENSIVE_WEIGHT = 4.0  # without history an expensive task is assumed 4× a normal one


def predicted_walls(cells: Sequence[tuple[str, str, bool]], prior_rows: Iterable[Row]) -> list[float]:
    """Predicted wall per cell given as ``(task, arm, expensive)``; larger starts first."""
    by_key: dict[tuple[str, str], list[float]] = defaultdict(list)
    by_arm: dict[str, list[float]] = defaultdict(list)
    for row in prior_rows:
        wall = row.cell_wall_s
        if wall is not None and wall > 0:
            by_key[(row.task, row.arm)].append(float(wall))
            by_arm[row.arm].append(float(wall))
    fallback = statistics.median([w for walls in by_arm.values() for w in walls]) if by_arm else 1.0
    predicted = []
    for task, arm, expensive in cells:
        weight = EXPENSIVE_WEIGHT if expensive else 1.0
        if by_key.get((task, arm)):
            predicted.append(statistics.median(by_key[(task, arm)]))
        elif by_arm.get(arm):
            predicted.append(statistics.median(by_arm[arm]) * weight)
        else:
            predicted.append(fallback * weight)
    return predicted
