"""The runner's `--promotion-*` flags: their argparse group and the policy they build.

Kept beside the policy so the CLI and `PromotionPolicy.from_flags` cannot drift; the runner only
calls `add_promotion_arguments` and `promotion_policy_from_args`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from workflow_bench.promotion.policy import PROMOTION_METRICS, PolicyError, PromotionPolicy


def add_promotion_arguments(parser: argparse.ArgumentParser, *, positive_int: Callable[[str], int]) -> None:
    gate = parser.add_argument_group("promotion gate (candidate arms; see promotion.json)")
    gate.add_argument("--promotion-metric", choices=PROMOTION_METRICS, help="gate metric (default cost_usd)")
    gate.add_argument("--promotion-min-runs", type=positive_int, help="scored runs per arm and task (3)")
    gate.add_argument(
        "--promotion-min-improvement", type=float, help="median improvement %% to promote (5.0)"
    )
    gate.add_argument("--promotion-max-task-regression", type=float, help="per-task regression cap %% (20.0)")


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
