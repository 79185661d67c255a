"""workflow-bench runner: measure skill workflows against a plain agent on repository tasks.

Every (task, arm, run) cell runs real headless Claude Code sessions in a fresh,
sanitized clone inside bubblewrap; each is judged by the task's authored
verify command and a hidden oracle staged only after the model exits.
Writes results.jsonl (one fsynced row per cell), per-cell patches and
redacted transcripts, and report.md into --out.

Exit codes: 0 done; 1 outage breaker tripped, a budget ended the sweep, or an arm produced no usable
measurement; 2 bad arguments or input (nothing was run); 130 cancelled.
"""

from __future__ import annotations

if __name__ == "__main__":
    # A program: a non-root runner enters its own namespaces (its cells' overlay clones) before an
    # import below starts a thread (scipy's BLAS pool does); an in-process main() never does.
    from workflow_bench.sandbox._mountns import enter_private_mounts

    enter_private_mounts()

import argparse
import hashlib
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from workflow_bench.cells.context import CellPolicy, Evaluated, Harness
from workflow_bench.promotion.flags import promotion_policy_from_args
from workflow_bench.promotion.policy import PromotionPolicy
from workflow_bench.providers.gateway import GatewayError, locate_litellm
from workflow_bench.providers.options import ProviderOptions, ProviderOptionsError
from workflow_bench.providers.scripted import Script, ScriptError, load_script
from workflow_bench.rows.model import Row
from workflow_bench.taskspec.index_guard import bind_for_toolkit
from workflow_bench.taskspec.placeholder import placeholder_problems
from workflow_bench.taskspec.spec import TaskBinding, TaskFileError, load_task_files, select_tasks
from workflow_bench.toolkit.comparator import ComparatorError, comparator_for_arms
from workflow_bench.toolkit.manifest import load_toolkit
from workflow_bench.toolkit.overlay import OverlayError
from workflow_bench.toolkit.spec import ToolkitError
from workflow_bench.workspace.paths import CellPathError, check_paths_fit
from workflow_bench.workspace.remove import remove_tree

from . import runner_args
from .arms import ARMS, candidate_overlay, resolve_arm
from .canary import run_canary
from .claude_cli import ClaudeCliError, claude_version, locate_claude
from .output.directory import OutputDirError
from .output.lock import OutputClaim, claim_output_dir
from .runner_args import DEMO_SCRIPT, default_cell_cpus
from .sandbox import (
    CellLimits,
    SandboxError,
    SandboxKind,
    check_unsafe_host_request,
    preflight,
    unsafe_host_warning,
)
from .schedule import flags as schedule_flags
from .schedule.resume import ResumeError, check_lock, kept_rows
from .schedule.reuse import ReuseError, load_prior_rows
from .schedule.signals import cancel_on_signals, interrupt_on_sigterm
from .sweep.config import EXIT_CANCELLED, SweepConfig, config_lock, plan_keys
from .sweep.driver import run_sweep
from .sweep.plan import describe_plan

EXIT_USAGE = 2


class UsageError(ValueError):
    """Bad arguments or input: exit 2, nothing run."""


def build_parser() -> argparse.ArgumentParser:
    return runner_args.build_parser(description=__doc__)


def _default_out() -> Path:
    return Path("results") / f"wfbench-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"


def _validate_args(args: argparse.Namespace) -> PromotionPolicy | None:
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
    promotion_policy = _validate_args(args)
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


def _agent_script(args: argparse.Namespace) -> tuple[str, str] | None:
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
            cpus=_cell_cpus(args),
        ),
    )


def _cell_cpus(args: argparse.Namespace) -> float | None:
    """``--cell-cpus`` (0: no bound), else the fair share for ``--workers`` (``default_cell_cpus``)."""
    if args.cell_cpus is None:
        return default_cell_cpus(args.workers)
    return args.cell_cpus or None


def _sweep_config(
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
        agent_script=_agent_script(args),
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


def _require_canary(ready: PreparedInput) -> None:
    code, table = run_canary(
        claude_bin_arg=str(ready.harness.claude_bin),
        bwrap_bin=ready.harness.bwrap_bin,
        progress=lambda _: None,
    )
    print(table)
    if code != 0:
        raise SandboxError("the containment canary did not block every attack; refusing to run the sweep")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.check_tasks:
        from .tasks.__main__ import main as tasks_main  # the self-check is its own command

        codes = []
        for task_file in (args.tasks, args.probes) if args.probes is not None else (args.tasks,):
            check_argv = ["check", "--tasks", str(task_file), "--toolkit", str(args.toolkit)]
            check_argv += ["--verify-timeout", str(args.verify_timeout), "--bwrap-bin", args.bwrap_bin]
            codes.append(tasks_main(check_argv))
        return max(codes)
    prepared: list[PreparedInput] = []
    try:
        with interrupt_on_sigterm():
            return _run(args, prepared)
    except KeyboardInterrupt:
        # Before the sweep began (or a second Ctrl-C): whatever was claimed is released below.
        print("[cancel] interrupted", file=sys.stderr)
        return EXIT_CANCELLED
    finally:
        for ready in prepared:
            if ready.evaluated.comparator is not None:
                remove_tree(ready.evaluated.comparator.snapshot.parent)


def _known_model(args: argparse.Namespace, ready: PreparedInput) -> str:
    """The model before any provider starts: ``--model``, or the script's (validate() requires one)."""
    model = args.model or (ready.script.model if ready.script else None)
    if not model:
        raise UsageError("--model is required with --provider anthropic")
    return str(model)


def _resume_rows(
    args: argparse.Namespace, ready: PreparedInput, out_dir: Path, claims: list[OutputClaim]
) -> tuple[Row, ...]:
    """Refuse a configuration that differs from the directory's lock; return the rows it keeps.

    The configuration is checked before the directory is claimed (claiming rewrites the holder
    record), so a refused resume changes nothing; the rows are read under the claim.
    """
    config = _sweep_config(args, ready, out_dir=out_dir, model=_known_model(args, ready))
    check_lock(out_dir, config_lock(config))
    claims.append(claim_output_dir(out_dir, resume=True))
    return kept_rows(out_dir, plan_keys(config))


def _dry_run(args: argparse.Namespace, ready: PreparedInput, out_dir: Path, prior: tuple[Row, ...]) -> int:
    """Print the plan the sweep would run (``--resume`` read, never rewritten) and exit 0."""
    config = _sweep_config(args, ready, out_dir=out_dir, model=_known_model(args, ready), prior_rows=prior)
    if args.resume is not None:
        check_lock(out_dir, config_lock(config))
        config = replace(config, done_rows=kept_rows(out_dir, plan_keys(config), dry_run=True))
    print(describe_plan(config), end="")
    return 0


def _run(args: argparse.Namespace, prepared: list[PreparedInput]) -> int:
    claims: list[OutputClaim] = []
    try:
        return _run_claimed(args, prepared, claims)
    finally:
        # Held for the sweep's whole life, released on every path; a directory holding only the
        # lock (nothing ran) goes, and a refused --resume leaves its directory as it was.
        for claim in claims:
            claim.release(remove_if_unused=True)


def _run_claimed(args: argparse.Namespace, prepared: list[PreparedInput], claims: list[OutputClaim]) -> int:
    out_dir = args.resume or args.out or _default_out()
    done_rows: tuple[Row, ...] = ()
    prior_rows: tuple[Row, ...] = ()
    try:
        ready = prepare(args)
        prepared.append(ready)  # main() removes the comparator snapshot whatever happens next
        if args.canary:
            _require_canary(ready)
        if args.reuse_results is not None:
            prior_rows = load_prior_rows(args.reuse_results, out_dir=out_dir)
        if args.dry_run:
            return _dry_run(args, ready, out_dir, prior_rows)
        # --resume is locked too: a resumed sweep and a second runner never share a directory.
        if args.resume is not None:
            done_rows = _resume_rows(args, ready, out_dir, claims)
        else:
            claims.append(claim_output_dir(out_dir))
    except TaskFileError as exc:
        print(f"error: invalid task file:\n{exc}", file=sys.stderr)
        return EXIT_USAGE
    except (
        UsageError, SandboxError, ClaudeCliError, OutputDirError, ScriptError, GatewayError, OverlayError,
        ComparatorError, ProviderOptionsError, ToolkitError, CellPathError, ResumeError, ReuseError,
    ) as exc:  # fmt: skip
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    cancel = threading.Event()
    try:
        with (
            ProviderOptions.from_args(args).model_access(ready.script) as (access, model),
            cancel_on_signals(cancel),
        ):
            config = _sweep_config(
                args, ready, out_dir=out_dir, model=model, done_rows=done_rows, prior_rows=prior_rows
            )
            cli = ready.harness.claude_version
            print(f"workflow-bench: {access.provider} provider, model {model}, CLI {cli}")
            print(f"workflow-bench: writing to {out_dir}")
            _, exit_code = run_sweep(config, access=access, cancel=cancel)
            return exit_code
    except GatewayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
