"""Schedulers: persistence on completion, plan-order breaker fold, overrun bounds, not-run cells."""

from __future__ import annotations

import random
import threading
import time

import pytest

from tests.builders import row
from workflow_bench.schedule.pool import (
    WHY_BREAKER,
    WHY_CANCELLED,
    SchedulePolicy,
    next_streak,
    run_cells,
    waves_of,
)

pytestmark = pytest.mark.unit


def _run(kinds, *, scheduler="packed", workers=1, window=None, streak=5, delays=None, cancel=None,
         groups=None, priority=None, may_start=None):  # fmt: skip
    persisted: list[int] = []
    started: list[int] = []
    cancel = cancel or threading.Event()

    def execute(index):
        if delays:
            time.sleep(delays[index])
        return row(error_kind=kinds[index], run=index)

    outcome = run_cells(
        list(range(len(kinds))),
        execute=execute,
        persist=lambda cell, result: persisted.append(cell),
        row_of=lambda r: r,
        policy=SchedulePolicy(scheduler=scheduler, workers=workers, window=window, outage_streak=streak),
        cancel=cancel,
        group_of=(lambda i: groups[i]) if groups else None,
        priority=priority,
        may_start=may_start,
        on_start=lambda cell, index: started.append(index),
    )
    return outcome, persisted, started


@pytest.mark.parametrize("scheduler", ["packed", "waves"])
def test_complete_sweep_returns_rows_in_plan_order_even_when_finishing_out_of_order(scheduler):
    outcome, persisted, _ = _run([None] * 4, scheduler=scheduler, workers=2, delays=[0.3, 0.0, 0.2, 0.0])
    assert outcome.status == "complete" and outcome.not_run == ()
    assert [r.run for r in outcome.results] == [0, 1, 2, 3]
    assert sorted(persisted) == [0, 1, 2, 3]
    assert persisted != [0, 1, 2, 3]  # persisted as they finished, not held back for order


@pytest.mark.parametrize("scheduler", ["packed", "waves"])
def test_breaker_trips_on_the_streak_and_lists_cells_never_started(scheduler):
    kinds = ["session-error"] * 3 + [None] * 5
    outcome, persisted, _ = _run(kinds, scheduler=scheduler, streak=3)
    assert outcome.status == "aborted"
    assert persisted == [0, 1, 2]
    assert outcome.not_run == tuple((i, WHY_BREAKER) for i in range(3, 8))


def test_breaker_resets_on_a_non_systemic_row():
    kinds = ["infra-error", "infra-error", "verify-failed", "infra-error", "infra-error", None]
    outcome, _, _ = _run(kinds, streak=3)
    assert outcome.status == "complete"


def test_breaker_disabled_with_zero():
    outcome, _, _ = _run(["session-error"] * 6, streak=0)
    assert outcome.status == "complete"


def test_skill_not_invoked_is_not_systemic():
    assert next_streak(row(error_kind="skill-not-invoked"), 4) == 0
    assert next_streak(row(error_kind="session-error"), 4) == 5
    # Agent-causable kinds never feed the breaker, whatever the agent's artifact says.
    assert next_streak(row(error_kind=None, review_evidence_valid=False), 2) == 0
    for kind in (
        "session-failed",
        "session-timeout",
        "workspace-invalid",
        "verify-timeout",
        "cleanup-failure",
    ):
        assert next_streak(row(error_kind=kind), 4) == 0


# Overrun = cells started after the logical cell at which the breaker trips. A slow first cell
# that trips the breaker is the worst case: every later cell finishes first and frees its slot.
SLOW_FIRST = [0.6] + [0.01] * 19
TRIP_FIRST = ["infra-error"] + [None] * 19


@pytest.mark.parametrize("workers", [2, 3])
def test_waves_overrun_is_at_most_workers_minus_one(workers):
    outcome, _, started = _run(TRIP_FIRST, scheduler="waves", workers=workers, streak=1, delays=SLOW_FIRST)
    assert outcome.status == "aborted"
    overrun = [i for i in started if i > 0]
    assert len(overrun) == workers - 1  # the rest of the first wave, nothing more
    assert len(outcome.not_run) == 20 - workers


@pytest.mark.parametrize(("workers", "window"), [(2, 2), (2, 4), (3, 6)])
def test_packed_overrun_is_bounded_by_the_window(workers, window):
    outcome, _, started = _run(
        TRIP_FIRST, scheduler="packed", workers=workers, window=window, streak=1, delays=SLOW_FIRST
    )
    assert outcome.status == "aborted"
    overrun = [i for i in started if i > 0]
    assert len(overrun) <= window - 1
    assert len(overrun) == window - 1  # the fast cells do fill the window while cell 0 runs
    assert [i for i, _ in outcome.not_run] == list(range(window, 20))


def test_packed_default_window_is_twice_the_workers_and_never_below_them():
    assert SchedulePolicy(workers=3).effective_window == 6
    with pytest.raises(ValueError, match="below workers"):
        SchedulePolicy(workers=3, window=2)


@pytest.mark.parametrize("seed", range(5))
def test_breaker_trips_on_the_same_logical_cell_under_both_schedulers(seed):
    rng = random.Random(seed)
    kinds = [None, "infra-error", None, "session-error", "infra-error", "session-error", None, None, None]
    delays = [rng.uniform(0, 0.05) for _ in kinds]
    groups = ["a"] * 3 + ["b"] * 3 + ["c"] * 3
    tripped = {}
    for scheduler in ("packed", "waves"):
        outcome, _, _ = _run(kinds, scheduler=scheduler, workers=3, streak=3, delays=delays, groups=groups)
        assert outcome.status == "aborted"
        tripped[scheduler] = max(r.run for r in outcome.results if r.run <= 5)
        assert outcome.detail.startswith("3 consecutive")
    assert tripped == {"packed": 5, "waves": 5}


def test_waves_never_mix_tasks():
    assert waves_of(["a", "a", "a", "b", "b", "c"], 2) == [[0, 1], [2], [3, 4], [5]]


def test_waves_start_a_wave_only_after_the_previous_one_finished():
    live, seen = [0], []
    lock = threading.Lock()

    def execute(index):
        with lock:
            live[0] += 1
            seen.append((index, live[0]))
        time.sleep(0.05 if index % 2 else 0.2)
        with lock:
            live[0] -= 1
        return row()

    run_cells(
        list(range(6)), execute=execute, persist=lambda c, r: None, row_of=lambda r: r,
        policy=SchedulePolicy(scheduler="waves", workers=2), cancel=threading.Event(),
    )  # fmt: skip
    # packed would start cell 2 as soon as cell 1 finished, while cell 0 still runs
    assert [count for index, count in seen if index % 2 == 0] == [1, 1, 1]


def test_longest_first_picks_inside_the_window_and_folds_in_plan_order():
    priority = [1, 1, 1, 9, 1, 1, 8, 1]
    outcome, _, started = _run([None] * 8, workers=1, window=4, priority=priority)
    assert started[:2] == [3, 0]  # cell 6 lies beyond the window [0, 4) until cell 0 is folded
    assert [r.run for r in outcome.results] == list(range(8))


def test_may_start_ends_submission_with_its_reason_and_keeps_running_cells():
    outcome, persisted, _ = _run(
        [None] * 6, workers=2, may_start=lambda i: ("budget-cost", "spent $3") if i >= 3 else None
    )
    assert outcome.status == "aborted" and outcome.detail == "spent $3"
    assert sorted(persisted) == [0, 1, 2]
    assert outcome.not_run == ((3, "budget-cost"), (4, "budget-cost"), (5, "budget-cost"))


def test_cancellation_stops_submission_and_keeps_finished_rows():
    cancel = threading.Event()
    persisted: list[int] = []

    def execute(index):
        if index == 1:
            cancel.set()
        return row()

    outcome = run_cells(
        list(range(5)),
        execute=execute,
        persist=lambda cell, result: persisted.append(cell),
        row_of=lambda r: r,
        policy=SchedulePolicy(workers=1),
        cancel=cancel,
    )
    assert outcome.status == "cancelled"
    assert persisted == [0, 1]
    assert outcome.not_run == ((2, WHY_CANCELLED), (3, WHY_CANCELLED), (4, WHY_CANCELLED))


@pytest.mark.parametrize("scheduler", ["packed", "waves"])
def test_harness_bug_propagates_after_siblings_are_persisted(scheduler):
    persisted: list[int] = []

    def execute(index):
        if index == 0:
            time.sleep(0.2)
            raise RuntimeError("harness bug")
        return row()

    with pytest.raises(RuntimeError, match="harness bug"):
        run_cells(
            [0, 1, 2, 3],
            execute=execute,
            persist=lambda cell, result: persisted.append(cell),
            row_of=lambda r: r,
            policy=SchedulePolicy(scheduler=scheduler, workers=2),
            cancel=threading.Event(),
        )
    assert 1 in persisted and 0 not in persisted
