"""Scheduling cells on an Executor, persisting each as it finishes, folding in order.

Contract:
- cells are submitted in plan order (task-major, run, arm), at most
  ``workers`` in flight;
- each finished cell is handed to ``persist`` at once, in completion order,
  so a crash or Ctrl-C never loses a row that was paid for;
- the outage breaker folds rows in *submission* order, so it trips on the
  same logical cell whatever the thread timing, and overruns by at most
  ``workers - 1`` cells;
- cancellation (signal or breaker) stops submission; in-flight cells see the
  shared event, finish as ``cancelled`` rows, and are persisted too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ThreadPoolExecutor, wait
from contextvars import copy_context
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from workflow_bench.judging.outcomes import is_systemic_failure

T = TypeVar("T")
SweepStatus = Literal["complete", "aborted", "cancelled"]
DEFAULT_OUTAGE_STREAK = 5  # reference default: five systemic failures in a row is an outage, not bad luck
MAX_WORKERS = 8


@dataclass(frozen=True, slots=True)
class SweepOutcome(Generic[T]):
    status: SweepStatus
    results: tuple[T, ...]  # in plan order, only cells that ran
    detail: str | None = None


def next_streak(row: dict, streak: int) -> int:
    """Consecutive systemic failures, folded in submission order (pure; the one table decides)."""
    return streak + 1 if is_systemic_failure(row) else 0


def run_cells(
    cells: Sequence[T],
    *,
    execute: Callable[[T], object],
    persist: Callable[[T, object], None],
    row_of: Callable[[object], dict],
    workers: int,
    cancel: threading.Event,
    outage_streak: int = DEFAULT_OUTAGE_STREAK,
    on_start: Callable[[T, int], None] | None = None,
    executor: Executor | None = None,
) -> SweepOutcome:
    """Run ``execute`` over ``cells``; return how the sweep ended and the results in plan order."""
    own_pool = executor is None
    pool = executor or ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cell")
    results: dict[int, object] = {}
    inflight: dict[Future, int] = {}
    submitted = folded = streak = 0
    tripped: str | None = None
    failure: BaseException | None = None
    try:
        while True:
            while len(inflight) < workers and submitted < len(cells) and not cancel.is_set():
                if on_start is not None:
                    on_start(cells[submitted], submitted)
                # copy_context: cells inherit context variables the driver set.
                future = pool.submit(copy_context().run, execute, cells[submitted])
                inflight[future] = submitted
                submitted += 1
            if not inflight:
                break
            done, _ = wait(inflight, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in done:
                index = inflight.pop(future)
                try:
                    result = future.result()
                except BaseException as exc:  # a harness bug: keep siblings' rows, then re-raise
                    failure = failure or exc
                    continue
                persist(cells[index], result)
                results[index] = result
            while folded in results:
                row = row_of(results[folded])
                streak = next_streak(row, streak)
                folded += 1
                if outage_streak and streak >= outage_streak and tripped is None:
                    tripped = f"{streak} consecutive systemic failures (last: {row.get('error_kind')})"
                    cancel.set()
            if failure is not None:
                cancel.set()
    finally:
        if own_pool:
            pool.shutdown(wait=True, cancel_futures=True)
    if failure is not None:
        raise failure
    ordered = tuple(results[i] for i in sorted(results))
    if tripped:
        return SweepOutcome("aborted", ordered, tripped)
    if cancel.is_set() or submitted < len(cells):
        return SweepOutcome(
            "cancelled", ordered, f"{len(cells) - len(results)} of {len(cells)} cells not run"
        )
    return SweepOutcome("complete", ordered)
