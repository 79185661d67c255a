"""Scheduling cells on an Executor: two schedulers, one contract.

Contract (both schedulers):
- the *plan order* (task-major, run, arm) is the fold order: the outage
  breaker folds rows in plan order, never completion order, so it trips on
  the same logical cell whatever the scheduler, the ordering or the timing;
- each finished cell is handed to ``persist`` at once, in completion order,
  so a crash or Ctrl-C never loses a row that was paid for;
- a stop (signal, breaker, budget) ends submission; cells already running
  finish (on a signal or the breaker they see the shared cancel event and
  end as ``cancelled`` rows) and are persisted; every cell never started is
  reported in ``SweepOutcome.not_run`` with why;
- a harness exception in one cell: its finished siblings' rows are
  persisted, the others are cancelled, then the exception propagates.

``waves`` (reference ``sweep_task_cells``): one task at a time, in waves of
``workers`` consecutive cells; a wave is folded only after all of it finished,
so after the cell that trips the breaker at most ``workers - 1`` cells of its
wave had started (the overrun).

``packed`` (reference ``sweep_packed_cells``): one pool across all tasks; a
cell at plan index ``i`` may start only while ``i < folded + window`` (the
fold pointer plus the window), and at most ``workers`` run at once. When the
breaker trips on cell ``k`` the fold pointer was ``k``, so only cells
``k+1 .. k+window-1`` can have started: overrun ≤ ``window - 1``.
``priority`` (longest first) picks which eligible cell starts next; it never
widens the window and never changes the fold order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ThreadPoolExecutor, wait
from contextvars import copy_context
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from workflow_bench.judging.outcomes import JudgedRow, is_systemic_failure

T = TypeVar("T")
R = TypeVar("R")  # what one cell returns (a CellResult in a sweep)
SweepStatus = Literal["complete", "aborted", "cancelled"]
Scheduler = Literal["packed", "waves"]
SCHEDULERS: tuple[Scheduler, ...] = ("packed", "waves")
DEFAULT_OUTAGE_STREAK = 5  # reference default: five systemic failures in a row is an outage, not bad luck
MAX_WORKERS = 8
# Reference measurement (review corpus, workers=3): window 3 → −8 % wall, overrun 2; 6 → −27 %,
# overrun 4; 12 → −42 %, 9. Each overrun cell is a wasted paid session, so the default stays at 2×.
PACKED_WINDOW_MULTIPLIER = 2

# Why a planned cell never started (not-run.jsonl ``why``).
WHY_BREAKER = "outage-breaker"
WHY_CANCELLED = "cancelled"
WHY_HARNESS_ERROR = "harness-error"


@dataclass(frozen=True, slots=True)
class SchedulePolicy:
    """How cells are scheduled; validated on construction."""

    scheduler: Scheduler = "packed"
    workers: int = 1
    window: int | None = None  # packed only; None → PACKED_WINDOW_MULTIPLIER × workers
    outage_streak: int = DEFAULT_OUTAGE_STREAK

    def __post_init__(self) -> None:
        if self.scheduler not in SCHEDULERS:
            raise ValueError(f"scheduler must be one of {', '.join(SCHEDULERS)}, got {self.scheduler!r}")
        if not 1 <= self.workers <= MAX_WORKERS:
            raise ValueError(f"workers must be between 1 and {MAX_WORKERS}, got {self.workers}")
        if self.window is not None and self.window < self.workers:
            raise ValueError(f"window {self.window} is below workers {self.workers}: it would idle workers")
        if self.outage_streak < 0:
            raise ValueError(f"outage_streak must be 0 or more, got {self.outage_streak}")

    @property
    def effective_window(self) -> int:
        return self.window if self.window is not None else PACKED_WINDOW_MULTIPLIER * self.workers


@dataclass(frozen=True, slots=True)
class SweepOutcome(Generic[T]):
    status: SweepStatus
    results: tuple[T, ...]  # in plan order, only cells that ran
    detail: str | None = None
    not_run: tuple[tuple[int, str], ...] = ()  # (plan index, why) of cells never started
    why: str | None = None  # what ended submission early (WHY_* or a budget's), None when complete


def next_streak(row: JudgedRow, streak: int) -> int:
    """Consecutive systemic failures, folded in plan order (pure; the one table decides)."""
    return streak + 1 if is_systemic_failure(row) else 0


def waves_of(groups: Sequence[object], workers: int) -> list[list[int]]:
    """Plan indices cut into waves: consecutive cells of one group (task), at most ``workers`` each."""
    waves: list[list[int]] = []
    for index, group in enumerate(groups):
        if waves and len(waves[-1]) < workers and groups[waves[-1][0]] == group:
            waves[-1].append(index)
        else:
            waves.append([index])
    return waves


class _Run:
    """The mutable state of one ``run_cells`` call (one thread drives it)."""

    def __init__(self, n: int, policy: SchedulePolicy, priority: Sequence[float] | None) -> None:
        self.n = n
        self.policy = policy
        self.priority = priority
        self.started = [False] * n
        self.running: dict[Future, int] = {}
        self.results: dict[int, Any] = {}
        self.folded = 0
        self.streak = 0
        self.stop: tuple[str, str] | None = None  # (why, detail): the first reason submission ended
        self.tripped = False
        self.failure: BaseException | None = None

    def next_packed(self) -> int | None:
        """The next cell the packed window allows, longest predicted first, else lowest index."""
        if len(self.running) >= self.policy.workers:
            return None
        end = min(self.n, self.folded + self.policy.effective_window)
        eligible = [i for i in range(self.folded, end) if not self.started[i]]
        if not eligible:
            return None
        priority = self.priority
        if priority is None:
            return eligible[0]
        return max(eligible, key=lambda i: (priority[i], -i))


def run_cells(
    cells: Sequence[T],
    *,
    execute: Callable[[T], R],
    persist: Callable[[T, R], None],
    row_of: Callable[[R], JudgedRow],
    policy: SchedulePolicy,
    cancel: threading.Event,
    group_of: Callable[[T], object] | None = None,
    priority: Sequence[float] | None = None,
    may_start: Callable[[T], tuple[str, str] | None] | None = None,
    on_start: Callable[[T, int], None] | None = None,
    executor: Executor | None = None,
) -> SweepOutcome[R]:
    """Run ``execute`` over ``cells`` (in plan order) under ``policy``.

    ``group_of`` names a cell's task (waves never mix tasks); ``priority`` is a
    predicted duration per cell (packed only: longest eligible first);
    ``may_start`` is asked before each cell starts and returns ``(why, detail)``
    to end submission (a budget), ``None`` to go on.
    """
    if priority is not None and (policy.scheduler != "packed" or len(priority) != len(cells)):
        raise ValueError("priority needs the packed scheduler and one value per cell")
    own_pool = executor is None
    pool = executor or ThreadPoolExecutor(max_workers=policy.workers, thread_name_prefix="cell")
    state = _Run(len(cells), policy, priority)
    groups = [group_of(c) if group_of else None for c in cells]
    pending_waves = waves_of(groups, policy.workers) if policy.scheduler == "waves" else []

    def submit(index: int) -> bool:
        if may_start is not None and (reason := may_start(cells[index])) is not None:
            state.stop = reason
            return False
        if on_start is not None:
            on_start(cells[index], index)
        # copy_context: cells inherit context variables the driver set.
        future = pool.submit(copy_context().run, execute, cells[index])
        state.running[future] = index
        state.started[index] = True
        return True

    def submit_more() -> None:
        if state.stop is None and cancel.is_set():
            state.stop = (WHY_CANCELLED, "cancelled by signal")
        if state.stop is not None:
            return
        if policy.scheduler == "waves":
            # A new wave starts only once the previous one is finished and folded.
            if not state.running and pending_waves and state.folded == pending_waves[0][0]:
                for index in pending_waves.pop(0):
                    if not submit(index):
                        return
            return
        while (packed := state.next_packed()) is not None:
            if not submit(packed):
                return

    def fold() -> None:
        # Waves fold a whole wave at once, after all of it finished (reference semantics).
        if policy.scheduler == "waves" and state.running:
            return
        while state.folded in state.results:
            row = row_of(state.results[state.folded])
            state.streak = next_streak(row, state.streak)
            state.folded += 1
            limit = policy.outage_streak
            if limit and state.streak >= limit and not state.tripped:
                state.tripped = True
                detail = f"{state.streak} consecutive systemic failures (last: {row.error_kind})"
                state.stop = (WHY_BREAKER, detail)
                cancel.set()

    try:
        while True:
            submit_more()
            if not state.running:
                break
            done, _ = wait(state.running, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in done:
                index = state.running.pop(future)
                try:
                    result = future.result()
                except BaseException as exc:  # a harness bug: keep siblings' rows, then re-raise
                    state.failure = state.failure or exc
                    if state.stop is None:
                        state.stop = (WHY_HARNESS_ERROR, f"harness error: {exc!r}")
                    cancel.set()
                    continue
                persist(cells[index], result)
                state.results[index] = result
            if state.failure is None:
                fold()
    finally:
        if own_pool:
            pool.shutdown(wait=True, cancel_futures=True)
    if state.failure is not None:
        raise state.failure
    return _outcome(state, cancel)


def _outcome(state: _Run, cancel: threading.Event) -> SweepOutcome[Any]:
    ordered = tuple(state.results[i] for i in sorted(state.results))
    never = [i for i in range(state.n) if not state.started[i]]
    why, detail = state.stop or (WHY_CANCELLED, "cancelled")
    not_run = tuple((i, why) for i in never)
    if state.tripped:
        return SweepOutcome("aborted", ordered, detail, not_run, WHY_BREAKER)
    if state.stop is not None and state.stop[0] != WHY_CANCELLED:
        return SweepOutcome("aborted", ordered, detail, not_run, why)  # a budget ended it
    if cancel.is_set() or never:
        missing = state.n - len(state.results)
        return SweepOutcome(
            "cancelled", ordered, f"{missing} of {state.n} cells not run", not_run, WHY_CANCELLED
        )
    return SweepOutcome("complete", ordered)
