"""From argv to a sweep's validated input: every check that can reject it, before anything runs.

``prepare(args)`` validates the flags, loads the toolkit and the task files, checks the sandbox,
the CLI and the provider, and binds the tasks: everything that can reject the input, in order, so
bad input exits 2 with nothing created but the repo cache. ``sweep_config`` then turns argv and the
prepared input into the one ``SweepConfig``; ``cell_policy`` is the one copy of the per-cell flags
out of the namespace. Called by the runner (``python -m workflow_bench.runner``).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.arms import ARMS, candidate_overlay, resolve_arm
from workflow_bench.cells.context import CellPolicy, Evaluated, Harness
from workflow_bench.claude_cli import claude_version, locate_claude
from workflow_bench.promotion.flags import promotion_policy_from_args
from workflow_bench.promotion.policy import PromotionPolicy
from workflow_bench.providers.gateway import locate_litellm
from workflow_bench.providers.options import ProviderOptions
from workflow_bench.providers.scripted import Script, load_script
from workflow_bench.rows.model import Row
from workflow_bench.runner_args import DEMO_SCRIPT, default_cell_cpus
from workflow_bench.sandbox import (
    CellLimits,
    SandboxKind,
    check_unsafe_host_request,
    preflight,
    unsafe_host_warning,
)
from workflow_bench.schedule import flags as schedule_flags
from workflow_bench.taskspec.index_guard import bind_for_toolkit
from workflow_bench.taskspec.placeholder import placeholder_problems
from workflow_bench.taskspec.spec import TaskBinding, load_task_files, select_tasks
from workflow_bench.toolkit.comparator import comparator_for_arms
from workflow_bench.toolkit.manifest import load_toolkit
from workflow_bench.workspace.paths import check_paths_fit

from .config import SweepConfig


class UsageError(ValueError):
    """Bad arguments or input: exit 2, nothing run."""


def validate_args(args: argparse.Namespace) -> PromotionPolicy | None:
    """Flag-level checks (exit 2); returns the promotion gate's policy (None without candidate arms)."""
    try:
        schedule_flags.validate_schedule_args(args)
        policy = promotion_policy_from_args(args, has_candidates=any(ARMS[a].candidate_of for a in args.arms))
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if args.dry_run and args.canary:
        raise UsageError("--dry-run prints the plan without running anything; drop --canary")
    if args.unsafe_no_bwrap:
        check_unsafe_host_request(args.arms, canary=args.canary)
    if len(set(args.arms)) != len(args.arms):
        raise UsageError(f"--arms lists an arm twice: {' '.join(args.arms)}")
    ProviderOptions.from_args(args).validate()
    return policy


@dataclass(frozen=True, slots=True)
class PreparedInput:
    """Everything validated from argv and the task file, before any clone or model call.

    ``harness`` and ``evaluated`` are the objects every cell later receives: built here, passed on.
    """

    harness: Harness
    evaluated: Evaluated
    bindings: tuple[TaskBinding, ...]
    skipped_expensive: tuple[str, ...]
    script: Script | None
    promotion_policy: PromotionPolicy | None = None


def prepare(args: argparse.Namespace) -> PreparedInput:
    """Everything that can reject the input, in order; creates nothing but the repo cache."""
    promotion_policy = validate_args(args)
    toolkit = load_toolkit(args.toolkit)
    specs = load_task_files(args.tasks, args.probes)
    selected, skipped = select_tasks(specs, include_expensive=args.include_expensive)
    if problems := placeholder_problems(selected):
        raise UsageError("\n".join(problems))
    if not selected:
        raise UsageError(f"{args.tasks}: no task selected (all are expensive; pass --include-expensive)")
    check_paths_fit()  # before any clone: every cell's model socket must fit AF_UNIX's limit
    kind = SandboxKind.HOST_UNSAFE if args.unsafe_no_bwrap else SandboxKind.BWRAP
    bwrap = preflight(kind, bwrap_bin=args.bwrap_bin)
    if kind is SandboxKind.HOST_UNSAFE:
        print(unsafe_host_warning(), file=sys.stderr, flush=True)
    claude_bin = locate_claude(args.claude_bin)
    version = claude_version(claude_bin)
    script = load_script(args.script or DEMO_SCRIPT) if args.provider == "scripted" else None
    if ProviderOptions.from_args(args).needs_gateway:
        locate_litellm()
    overlay = candidate_overlay(
        args.candidate_overlay, arms=args.arms, toolkit=toolkit, origin=args.candidate_origin
    )
    bindings = bind_for_toolkit(selected, toolkit)
    comparator = comparator_for_arms(
        {role for a in args.arms if ARMS[a].family == "comparator" for role in ARMS[a].skill_roles},
        plugin_dir=args.ce_plugin_dir,
        version=args.ce_plugin_version,
    )
    return PreparedInput(
        harness=Harness(claude_bin=claude_bin, claude_version=version, bwrap_bin=bwrap, sandbox_kind=kind),
        evaluated=Evaluated(toolkit=toolkit, overlay=overlay, comparator=comparator),
        bindings=bindings,
        skipped_expensive=tuple(skipped),
        script=script,
        promotion_policy=promotion_policy,
    )


def agent_script(args: argparse.Namespace) -> tuple[str, str] | None:
    """(the script as the report names it, its sha256) for ``--provider scripted``, else None."""
    if args.provider != "scripted":
        return None
    path = args.script or DEMO_SCRIPT
    shown = str(path) if args.script else f"{DEMO_SCRIPT.name} (the shipped demo script)"
    return shown, hashlib.sha256(path.read_bytes()).hexdigest()


def cell_policy(args: argparse.Namespace, *, model: str) -> CellPolicy:
    """How every cell runs: the one copy of these flags out of the namespace."""
    return CellPolicy(
        model=model,
        effort=args.effort,
        session_timeout_s=args.timeout,
        verify_timeout_s=args.verify_timeout,
        max_retries=args.max_retries,
        limits=CellLimits(
            memory_mib=args.cell_memory_mib,
            pids=args.cell_pids,
            disk_mib=args.cell_disk_mib,
            cpus=cell_cpus(args),
        ),
    )


def cell_cpus(args: argparse.Namespace) -> float | None:
    """``--cell-cpus`` (0: no bound), else the fair share for ``--workers`` (``default_cell_cpus``)."""
    if args.cell_cpus is None:
        return default_cell_cpus(args.workers)
    return args.cell_cpus or None


def sweep_config(
    args: argparse.Namespace,
    ready: PreparedInput,
    *,
    out_dir: Path,
    model: str,
    done_rows: tuple[Row, ...] = (),
    prior_rows: tuple[Row, ...] = (),
) -> SweepConfig:
    return SweepConfig(
        done_rows=done_rows,
        prior_rows=prior_rows,
        reuse_from=args.reuse_results,
        provider=args.provider,
        agent_script=agent_script(args),
        policy=schedule_flags.schedule_policy_from_args(args),
        executor=schedule_flags.executor_from_args(args),
        resuming=args.resume is not None,
        budget=schedule_flags.budget_from_args(args),
        order=args.order,
        tasks=ready.bindings,
        skipped_expensive=ready.skipped_expensive,
        arms=tuple(resolve_arm(a) for a in args.arms),
        runs=args.runs,
        out_dir=out_dir,
        cell=cell_policy(args, model=model),
        harness=ready.harness,
        evaluated=ready.evaluated,
        promotion_policy=ready.promotion_policy,
    )
