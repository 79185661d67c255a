"""The scheduling flags (--scheduler, --workers, --window, --order, --outage-streak, budgets,
--resume/--out, --executor/--ray-address) turned into a ``SchedulePolicy``, a ``Budget`` and an
``ExecutorSpec``; ``ValueError`` on a bad mix.

The flags themselves are declared in ``runner_args._scheduling``; the runner calls these.
"""

from __future__ import annotations

import argparse

from workflow_bench.schedule.budget import Budget
from workflow_bench.schedule.pool import SchedulePolicy
from workflow_bench.schedule.ray_cells import ExecutorError, ExecutorSpec, require_ray
from workflow_bench.schedule.ray_local import check_local_paths_fit


def schedule_policy_from_args(args: argparse.Namespace) -> SchedulePolicy:
    return SchedulePolicy(
        scheduler=args.scheduler, workers=args.workers, window=args.window, outage_streak=args.outage_streak
    )


def budget_from_args(args: argparse.Namespace) -> Budget:
    return Budget(max_cost_usd=args.max_cost_usd, max_runtime_s=args.max_runtime)


def executor_from_args(args: argparse.Namespace) -> ExecutorSpec:
    return ExecutorSpec(kind=args.executor, ray_address=args.ray_address)


def validate_schedule_args(args: argparse.Namespace) -> None:
    executor_from_args(args)
    if args.executor == "ray":
        try:
            require_ray()
        except ExecutorError as exc:
            raise ValueError(str(exc)) from exc
        if args.ray_address is None:
            check_local_paths_fit()  # RayPathError, a ValueError
    if args.order != "plan" and args.scheduler != "packed":
        raise ValueError(
            f"--order {args.order} needs --scheduler packed: a wave starts all its cells at once"
        )
    if args.window is not None and args.scheduler != "packed":
        raise ValueError(f"--window applies to --scheduler packed, not {args.scheduler}")
    if args.window is not None and args.window < args.workers:
        raise ValueError(f"--window {args.window} is below --workers {args.workers}: workers would idle")
    if args.resume is not None and args.out is not None and args.out.resolve() != args.resume.resolve():
        raise ValueError(f"--resume {args.resume} continues in place; drop --out {args.out}")
