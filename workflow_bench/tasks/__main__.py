"""``python -m workflow_bench.tasks``: ``check`` (self-check), ``agent-script`` (oracle/no-op), ``deps``.

Exit codes: 0 every task discriminates (or the script was written); 1 a task cannot
discriminate (named in the table); 2 bad arguments or input (nothing run).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from workflow_bench import argtypes
from workflow_bench.runtimes import RuntimeProvisionError, find_python
from workflow_bench.sandbox import SandboxError, SandboxKind, preflight
from workflow_bench.taskspec.index_guard import refuse_committed_index
from workflow_bench.taskspec.placeholder import placeholder_problems
from workflow_bench.taskspec.spec import TaskFileError, bind_tasks, load_task_file
from workflow_bench.toolkit.comparator import ComparatorError, plugin_name
from workflow_bench.toolkit.manifest import load_toolkit
from workflow_bench.toolkit.spec import ToolkitError
from workflow_bench.workspace.paths import CellPathError, check_paths_fit, make_work_root
from workflow_bench.workspace.remove import remove_tree

from . import importers, new_cli, recipes
from .agents import AGENTS, AgentScriptError, agent_script
from .check import DEFAULT_REPEATS, CheckSettings, check_tasks, render_table
from .deps import SANDBOX_PYTHON, DependencyBuildError, build_dependencies, build_node_modules, find_uv

DESCRIPTION = (
    "Write and check tasks: new (a task from a known fix), import (tasks from other benchmarks), "
    "build-corpus (the real-world corpus from a recipe), check (self-check every task and lock its "
    "expected tests), agent-script (a scripted oracle or no-op agent), deps (a dependency tree). "
    "Exit codes: 0 done, 1 a task cannot discriminate, 2 bad arguments or input (nothing run)."
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=argtypes.prog("tasks"), description=DESCRIPTION)
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
    script.add_argument(
        "--toolkit",
        default="demo",
        metavar="DIR|NAME",
        help="the toolkit whose skills the skill arms invoke (default: demo)",
    )
    script.add_argument(
        "--ce-plugin-dir",
        type=Path,
        help="the comparator plugin: with it, the ce_* arms are scripted too (its skills by its name)",
    )
    script.add_argument("--out", required=True, type=Path, help="script file to write (must not exist)")
    new_cli.add_arguments(
        sub.add_parser(
            "new",
            help="write a task from a known fix (base and fix commits, or a fix patch): the reference "
            "patch, the hidden oracle from the fix's tests, verify, the lock; refused unless it "
            "discriminates",
        )
    )
    importers.add_arguments(
        sub.add_parser(
            "import",
            help="import tasks from SWE-bench-style JSONL (over local clones) or Harbor task directories; "
            "each self-checked, a refusal named per instance",
        )
    )
    recipes.add_arguments(
        sub.add_parser(
            "build-corpus",
            help="build a corpus of real upstream fixes from a recipe (pinned registry releases): "
            "repositories, dependency trees, and every task via `new` (default: the shipped "
            "real-world corpus)",
        )
    )
    deps = sub.add_parser(
        "deps",
        help="build a pinned sandbox_dependencies tree: python (wheels for the sandbox's python) or node "
        "(the project's lockfile into its node_modules)",
        description="build a pinned sandbox_dependencies tree; name its kind: `deps python --help`, "
        "`deps node --help`",
    )
    kinds = deps.add_subparsers(dest="ecosystem", required=True, metavar="{python,node}")
    python = kinds.add_parser(
        "python", help="wheels for the sandbox's python", description="wheels for the sandbox's python, "
        "from a requirements file of name==version lines, into a new directory of the task repository"
    )  # fmt: skip
    python.add_argument(
        "--requirements", type=Path, required=True, help="requirements file, every line name==version"
    )
    python.add_argument(
        "--out", type=Path, required=True, help="new directory, inside the task repo's working tree"
    )
    python.add_argument("--uv", help="uv binary (default: $UV, else uv on PATH, else the cache's)")
    python.add_argument(
        "--python",
        metavar="VERSION",
        help="build for the task's python runtime (3.12: found as `runtimes: {python: ...}` finds it) "
        "instead of the sandbox's /usr/bin/python3",
    )
    node = kinds.add_parser(
        "node", help="the project's lockfile into its node_modules",
        description="install the project's lockfile (npm, pnpm or yarn) into its node_modules",
    )  # fmt: skip
    node.add_argument(
        "--project", type=Path, required=True, help="the directory holding package.json and its lockfile"
    )
    node.add_argument(
        "--allow-scripts",
        action="store_true",
        help="run the packages' install scripts (off: they would run on this host, not in the sandbox)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "new":
        return new_cli.main(args)
    if args.command == "import":
        return importers.main(args)
    if args.command == "build-corpus":
        return recipes.main(args)
    if args.command == "deps":
        return _deps(args)
    try:
        # A stale expected-tests lock stops a sweep (exit 2); here it is what the check refreshes.
        bindings = bind_tasks(load_task_file(args.tasks), stale_locks="ignore")
        if args.command == "agent-script":
            comparator = plugin_name(args.ce_plugin_dir) if args.ce_plugin_dir is not None else None
            script = agent_script(
                bindings, agent=args.agent, toolkit=load_toolkit(args.toolkit), comparator=comparator
            )
            with open(args.out, "x", encoding="utf-8") as handle:
                yaml.safe_dump(script, handle, sort_keys=False, width=1_000_000)
            tasks = len({cell["match"]["task"] for cell in script["cells"]})
            print(f"wrote the {args.agent} agent for {tasks} task(s) to {args.out}")
            return 0
        if problems := placeholder_problems(b.spec for b in bindings):
            print("error: " + "\n".join(problems), file=sys.stderr)
            return 2
        toolkit = load_toolkit(args.toolkit)
        refuse_committed_index(bindings, toolkit)
        check_paths_fit()
        bwrap = preflight(SandboxKind.BWRAP, bwrap_bin=args.bwrap_bin)
    except TaskFileError as exc:
        print(f"error: invalid task file:\n{exc}", file=sys.stderr)
        return 2
    except (
        AgentScriptError, CellPathError, SandboxError, FileExistsError, ToolkitError, ComparatorError
    ) as exc:  # fmt: skip
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


def _deps(args: argparse.Namespace) -> int:
    try:
        if args.ecosystem == "python":
            python = SANDBOX_PYTHON
            if args.python is not None:
                try:
                    python = str(find_python(args.python)[0])
                except RuntimeProvisionError as exc:
                    raise DependencyBuildError(f"--python {args.python}: {exc}") from None
            digest = build_dependencies(
                requirements=args.requirements, out=args.out, uv_bin=args.uv or find_uv(), python=python
            )
            where = f"{args.out}/site-packages"
        else:
            digest = build_node_modules(project=args.project, allow_scripts=args.allow_scripts)
            where = f"{args.project}/node_modules"
    except DependencyBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"built {where} (manifest sha256 {digest}); mount it with sandbox_dependencies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
