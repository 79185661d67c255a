"""The `--promotion-*` flags, declared once: their argparse group and the policy they build.

Kept beside the policy so the CLI and `PromotionPolicy.from_flags` cannot drift; the runner and the
evolve driver both call `add_promotion_arguments` (evolve forwards the values to the runner), and
the runner calls `promotion_policy_from_args`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from workflow_bench.argtypes import Flag, bounded_int
from workflow_bench.promotion.policy import PROMOTION_METRICS, PolicyError, PromotionPolicy

# Keep in sync with runner_args.MAX_RUNS (tests/unit/test_runner_flags.py checks): a gate cannot
# ask for more scored runs than a sweep may have.
MAX_MIN_RUNS = 100
PROMOTION_FLAGS = (
    Flag("--promotion-metric", dict(choices=PROMOTION_METRICS, help="gate metric (default cost_usd)")),
    Flag(
        "--promotion-min-runs",
        dict(type=bounded_int(1, MAX_MIN_RUNS), help=f"scored runs per arm and task, 1..{MAX_MIN_RUNS} (3)"),
    ),
    Flag("--promotion-min-improvement", dict(type=float, help="median improvement %% to promote (5.0)")),
    Flag("--promotion-max-task-regression", dict(type=float, help="per-task regression cap %% (20.0)")),
)


def add_promotion_arguments(parser: argparse.ArgumentParser) -> None:
    gate = parser.add_argument_group("promotion gate (candidate arms; see promotion.json)")
    for flag in PROMOTION_FLAGS:
        flag.add(gate)


def promotion_policy_from_args(args: argparse.Namespace, *, has_candidates: bool) -> PromotionPolicy | None:
    """The gate policy, `None` without candidate arms.

    Raises:
        ValueError: a flag without candidate arms, or a value the policy rejects (the runner exits 2).
    """
    flags = {
        "metric": args.promotion_metric,
        "min_runs": args.promotion_min_runs,
        "min_improvement_pct": args.promotion_min_improvement,
        "max_task_regression_pct": args.promotion_max_task_regression,
    }
    given: Sequence[str] = [name for name, value in flags.items() if value is not None]
    if not has_candidates:
        if given:
            raise ValueError("--promotion-* flags configure the gate for candidate arms; none was requested")
        return None
    try:
        return PromotionPolicy.from_flags(**flags)
    except PolicyError as exc:
        raise ValueError(str(exc)) from exc
