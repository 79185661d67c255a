"""Scheduler: persistence on completion, in-order breaker fold, cancellation."""

from __future__ import annotations

import threading
import time

import pytest

from workflow_bench.schedule.pool import next_streak, run_cells

pytestmark = pytest.mark.unit


def _run(kinds, *, workers=1, streak=5, delays=None, cancel=None):
    persisted: list[int] = []
    cancel = cancel or threading.Event()

    def execute(index):
        if delays:
            time.sleep(delays[index])
        return {"error_kind": kinds[index], "index": index}

    outcome = run_cells(
        list(range(len(kinds))),
        execute=execute,
        persist=lambda cell, result: persisted.append(cell),
        row_of=lambda r: r,
        workers=workers,
        cancel=cancel,
        outage_streak=streak,
    )
    return outcome, persisted


def test_complete_sweep_returns_rows_in_plan_order_even_when_finishing_out_of_order():
    outcome, persisted = _run([None] * 4, workers=2, delays=[0.3, 0.0, 0.2, 0.0])
    assert outcome.status == "complete"
    assert [r["index"] for r in outcome.results] == [0, 1, 2, 3]
    assert sorted(persisted) == [0, 1, 2, 3]
    assert persisted != [0, 1, 2, 3]  # persisted as they finished, not held back for order


def test_breaker_trips_on_the_streak_and_stops_submitting():
    kinds = ["session-error"] * 3 + [None] * 5
    outcome, persisted = _run(kinds, streak=3)
    assert outcome.status == "aborted"
    assert persisted == [0, 1, 2]


def test_breaker_resets_on_a_non_systemic_row():
    kinds = ["infra-error", "infra-error", "verify-failed", "infra-error", "infra-error", None]
    outcome, _ = _run(kinds, streak=3)
    assert outcome.status == "complete"


def test_breaker_disabled_with_zero():
    outcome, _ = _run(["session-error"] * 6, streak=0)
    assert outcome.status == "complete"


def test_skill_not_invoked_is_not_systemic():
    assert next_streak({"error_kind": "skill-not-invoked"}, 4) == 0
    assert next_streak({"error_kind": "session-error"}, 4) == 5
    # Agent-causable kinds never feed the breaker, whatever the agent's artifact says.
    assert next_streak({"error_kind": None, "review_evidence_valid": False}, 2) == 0
    for kind in (
        "session-failed",
        "session-timeout",
        "workspace-invalid",
        "verify-timeout",
        "cleanup-failure",
    ):
        assert next_streak({"error_kind": kind}, 4) == 0


def test_cancellation_stops_submission_and_keeps_finished_rows():
    cancel = threading.Event()
    persisted: list[int] = []

    def execute(index):
        if index == 1:
            cancel.set()
        return {"error_kind": None}

    outcome = run_cells(
        list(range(5)),
        execute=execute,
        persist=lambda cell, result: persisted.append(cell),
        row_of=lambda r: r,
        workers=1,
        cancel=cancel,
    )
    assert outcome.status == "cancelled"
    assert persisted == [0, 1]


def test_harness_bug_propagates_after_siblings_are_persisted():
    persisted: list[int] = []

    def execute(index):
        if index == 0:
            time.sleep(0.2)
            raise RuntimeError("harness bug")
        return {"error_kind": None}

    with pytest.raises(RuntimeError, match="harness bug"):
        run_cells(
            [0, 1],
            execute=execute,
            persist=lambda cell, result: persisted.append(cell),
            row_of=lambda r: r,
            workers=2,
            cancel=threading.Event(),
        )
    assert persisted == [1]
