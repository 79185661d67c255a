"""``python -m workflow_bench.tasks``: ``check`` (self-check), ``agent-script`` (oracle/no-op), ``deps``.

Exit codes: 0 every task discriminates (or the script was written); 1 a task cannot
discriminate (named in the table); 2 bad arguments or input (nothing run).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from workflow_bench.sandbox import SandboxError, SandboxKind, preflight
from workflow_bench.taskspec.index_guard import refuse_committed_index
from workflow_bench.taskspec.spec import TaskFileError, bind_tasks, load_task_file
from workflow_bench.toolkit.manifest import load_toolkit
from workflow_bench.toolkit.spec import ToolkitError
from workflow_bench.workspace.paths import CellPathError, check_paths_fit, make_work_root
from workflow_bench.workspace.remove import remove_tree

from .agents import AGENTS, AgentScriptError, agent_script
from .check import DEFAULT_REPEATS, CheckSettings, check_tasks, render_table
from .deps import DependencyBuildError, build_dependencies


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m workflow_bench.tasks", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser(
        "check",
        help="prove each task discriminates (base fails, reference patch passes) and record its expected "
        "tests in the lock beside the task file",
    )
    check.add_argument("--tasks", required=True, type=Path, help="task file (YAML)")
    check.add_argument(
        "--toolkit", default="demo", metavar="DIR|NAME", help="toolkit dir or shipped name (default: demo)"
    )
    check.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, choices=range(1, 11), metavar="1..10")
    check.add_argument("--verify-timeout", type=int, default=600, choices=range(1, 86_401), metavar="S")
    check.add_argument(
        "--frozen",
        action="store_true",
        help="compare with the expected-tests lock beside the task file but never write it; a lock "
        "that would change fails the check (for CI)",
    )
    check.add_argument("--bwrap-bin", default="bwrap", help=argparse.SUPPRESS)
    script = sub.add_parser("agent-script", help="write a scripted-provider script playing an agent")
    script.add_argument("--tasks", required=True, type=Path)
    script.add_argument("--agent", required=True, choices=AGENTS)
    script.add_argument("--out", required=True, type=Path, help="script file to write (must not exist)")
    deps = sub.add_parser("deps", help="build a pinned sandbox_dependencies tree for verify and the oracle")
    deps.add_argument(
        "--requirements", required=True, type=Path, help="requirements file, every line name==version"
    )
    deps.add_argument(
        "--out", required=True, type=Path, help="new directory, inside the task repo's working tree"
    )
    deps.add_argument("--uv", default=os.environ.get("UV", "uv"), help="uv binary (default: $UV, else uv)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "deps":
        try:
            digest = build_dependencies(requirements=args.requirements, out=args.out, uv_bin=args.uv)
        except DependencyBuildError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(
            f"built {args.out}/site-packages (manifest sha256 {digest}); mount it with sandbox_dependencies"
        )
        return 0
    try:
        # A stale expected-tests lock stops a sweep (exit 2); here it is what the check refreshes.
        bindings = bind_tasks(load_task_file(args.tasks), stale_locks="ignore")
        if args.command == "agent-script":
            script = agent_script(bindings, agent=args.agent)
            with open(args.out, "x", encoding="utf-8") as handle:
                yaml.safe_dump(script, handle, sort_keys=False, width=1_000_000)
            print(f"wrote the {args.agent} agent for {len(script['cells'])} task(s) to {args.out}")
            return 0
        toolkit = load_toolkit(args.toolkit)
        refuse_committed_index(bindings, toolkit)
        check_paths_fit()
        bwrap = preflight(SandboxKind.BWRAP, bwrap_bin=args.bwrap_bin)
    except TaskFileError as exc:
        print(f"error: invalid task file:\n{exc}", file=sys.stderr)
        return 2
    except (AgentScriptError, CellPathError, SandboxError, FileExistsError, ToolkitError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    work_root = make_work_root()
    try:
        settings = CheckSettings(
            toolkit=toolkit,
            bwrap_bin=bwrap,
            work_root=work_root,
            timeout_s=args.verify_timeout,
            repeats=args.repeats,
            frozen=args.frozen,
        )
        results = check_tasks(bindings, settings)
    finally:
        remove_tree(work_root)
    print(render_table(results))
    failing = [r.task_id for r in results if not r.discriminates]
    if failing:
        print(f"cannot discriminate: {', '.join(failing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
