"""Longest-first predictions: prior rows per (task, arm), then per arm, then the expensive flag."""

from __future__ import annotations

import pytest

from tests.builders import row
from workflow_bench.schedule.order import EXPENSIVE_WEIGHT, predicted_walls

pytestmark = pytest.mark.unit


def test_without_history_only_the_expensive_flag_differs():
    cells = [("a", "baseline", False), ("b", "baseline", True), ("a", "workflow", False)]
    assert predicted_walls(cells, []) == [1.0, EXPENSIVE_WEIGHT, 1.0]


def test_history_gives_the_median_wall_per_task_and_arm():
    rows = [row(task="a", arm="workflow", cell_wall_s=w) for w in (30.0, 10.0, 20.0)] + [
        row(task="a", arm="baseline", cell_wall_s=5.0),
        row(task="b", arm="baseline", cell_wall_s=7.0),
    ]
    cells = [
        ("a", "workflow", False),
        ("a", "baseline", True),
        ("c", "baseline", False),
        ("c", "review", True),
    ]
    predicted = predicted_walls(cells, rows)
    assert predicted[0] == 20.0  # the median, not the mean or the last value
    assert predicted[1] == 5.0  # measured history beats the expensive flag
    assert predicted[2] == 6.0  # no history for (c, baseline): that arm's median elsewhere
    assert predicted[3] == 10.0 * EXPENSIVE_WEIGHT  # unknown arm: every prior row's median × the flag


def test_rows_without_a_usable_wall_are_ignored():
    rows = [row(task="a", arm="x", cell_wall_s=None), row(task="a", arm="x", cell_wall_s=0)]
    assert predicted_walls([("a", "x", False)], rows) == [1.0]  # unknown and zero walls teach nothing
