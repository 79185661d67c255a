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
import sys
import threading
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from workflow_bench.providers.gateway import GatewayError
from workflow_bench.providers.options import ProviderOptions, ProviderOptionsError
from workflow_bench.providers.scripted import ScriptError
from workflow_bench.rows.model import Row
from workflow_bench.taskspec.spec import TaskFileError
from workflow_bench.toolkit.comparator import ComparatorError
from workflow_bench.toolkit.overlay import OverlayError
from workflow_bench.toolkit.spec import ToolkitError
from workflow_bench.workspace.paths import CellPathError
from workflow_bench.workspace.remove import remove_tree

from . import runner_args
from .canary import run_canary
from .claude_cli import ClaudeCliError
from .output.directory import OutputDirError
from .output.lock import OutputClaim, claim_output_dir
from .sandbox import SandboxError
from .schedule.resume import ResumeError, check_lock, kept_rows
from .schedule.reuse import ReuseError, load_prior_rows
from .schedule.signals import cancel_on_signals, interrupt_on_sigterm
from .sweep.config import EXIT_CANCELLED, config_lock, plan_keys
from .sweep.driver import run_sweep
from .sweep.plan import describe_plan
from .sweep.prepare import PreparedInput, UsageError, prepare, sweep_config

EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    return runner_args.build_parser(description=__doc__)


def _default_out() -> Path:
    return Path("results") / f"wfbench-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"


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
    config = sweep_config(args, ready, out_dir=out_dir, model=_known_model(args, ready))
    check_lock(out_dir, config_lock(config))
    claims.append(claim_output_dir(out_dir, resume=True))
    return kept_rows(out_dir, plan_keys(config))


def _dry_run(args: argparse.Namespace, ready: PreparedInput, out_dir: Path, prior: tuple[Row, ...]) -> int:
    """Print the plan the sweep would run (``--resume`` read, never rewritten) and exit 0."""
    config = sweep_config(args, ready, out_dir=out_dir, model=_known_model(args, ready), prior_rows=prior)
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
            config = sweep_config(
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
