"""``tasks import swebench|harbor``: tasks from existing benchmarks, each self-checked, refusals named.

Every instance (a SWE-bench JSONL line, a Harbor task directory) becomes a draft (``swebench``,
``harbor``) or a named refusal; the drafts are staged together and self-checked in the sandbox
(the same judges as a cell); an instance whose task does not discriminate, or whose recorded
tests are not the instance's own (``swebench.expectation_problems``), is refused by name, and so
is one over a bound (``swebench.size_problem``, then ``_within_bounds``: a file or entry the task
loader would not read), before staging, while the others go on. The
rest are written at once (``draft.commit``: all or nothing). Exit: 0 every instance imported;
1 some were refused (listed, nothing of them written); 2 bad input (nothing written).

Callers: ``python -m workflow_bench.tasks import``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from workflow_bench.sandbox import SandboxError, SandboxKind, preflight
from workflow_bench.taskspec.oracles import MAX_ORACLE_FILE_BYTES
from workflow_bench.taskspec.schema import MAX_REFERENCE_PATCH_BYTES, MAX_TASK_FILE_BYTES

from .check import TaskCheck, render_table
from .draft import DraftError, TaskDraft, commit, dump_tasks, existing_ids, stage
from .frameworks import test_command_problem
from .harbor import HarborError, discard_repository, draft_harbor
from .new import NewTaskError, worktree_top
from .new_cli import dependency_pairs, task_directory
from .selfcheck import CheckOptions, SelfCheckError, bind_one_by_one, run_self_check
from .swebench import (
    ImportOptions,
    Instance,
    InstanceError,
    draft_instance,
    expectation_problems,
    read_instances,
)

PostCheck = Callable[[str, TaskCheck], list[str]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    kinds = parser.add_subparsers(dest="source", required=True)
    swe = kinds.add_parser("swebench", help="SWE-bench-style JSONL instances over local clones")
    swe.add_argument("--instances", required=True, type=Path, help="JSONL, one instance a line")
    swe.add_argument(
        "--clones",
        required=True,
        type=Path,
        help="directory of clones: <owner>__<name>, <owner>/<name> or <name>",
    )
    swe.add_argument("--instance", action="append", metavar="ID", help="import only these instance ids")
    swe.add_argument("--test-command", help="the runner for another framework, {files} where test files go")
    harbor = kinds.add_parser("harbor", help="Harbor / Terminal-Bench task directories (where they map)")
    harbor.add_argument("task_dirs", nargs="+", type=Path, metavar="TASK_DIR")
    harbor.add_argument(
        "--repo", type=Path, help="the repository the task starts in (default: its environment/)"
    )
    dependency_help = {
        swe: "a dependency tree in each clone's working tree (default: .wfbench-deps if present)",
        harbor: "a prepared tree on disk, linked into each new repository at TARGET (default: its "
        "name), git-ignored; with --repo, a tree in that repository's working tree",
    }
    for sub, helped in dependency_help.items():
        sub.add_argument(
            "--tasks", required=True, type=Path, help="the task file to add them to (created if missing)"
        )
        sub.add_argument("--dependency", action="append", metavar="SOURCE[:TARGET]", help=helped)
        sub.add_argument("--toolkit", default="demo", metavar="DIR|NAME")
        sub.add_argument("--repeats", type=int, default=3, choices=range(1, 11), metavar="1..10")
        sub.add_argument("--verify-timeout", type=int, default=600, choices=range(1, 86_401), metavar="S")
        sub.add_argument("--bwrap-bin", default="bwrap", help=argparse.SUPPRESS)


def main(args: argparse.Namespace) -> int:
    tasks_file = Path(args.tasks).expanduser().absolute()
    made: list[Path] = []  # repositories this import created (Harbor environments)
    try:
        # Created with its directory if missing, as `tasks new` does (and removed if nothing is written).
        with task_directory(tasks_file, args.tasks) as written:
            try:
                drafts, refused, accepted = _drafts_imported(args, tasks_file, made)
            except BaseException:
                _remove(made)
                raise
            _remove([d.repo for d in drafts if d not in accepted and d.repo in made])
            written.append(bool(accepted))
    except (DraftError, SelfCheckError, InstanceError, NewTaskError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for draft in accepted:
        print(f"[import] {draft.task_id}: imported")
    for task_id, reason in refused.items():
        print(f"[import] {task_id}: REFUSED: {reason}")
    print(f"[import] {len(accepted)} imported into {tasks_file}, {len(refused)} refused")
    return 1 if refused else 0


def _drafts_imported(
    args: argparse.Namespace, tasks_file: Path, made: list[Path]
) -> tuple[list[TaskDraft], dict[str, str], list[TaskDraft]]:
    """(every draft, the refusals by id, the drafts written)."""
    options = CheckOptions(
        toolkit=args.toolkit, bwrap_bin=args.bwrap_bin, repeats=args.repeats, timeout_s=args.verify_timeout
    )
    dependencies = dependency_pairs(args.dependency) if args.dependency else None
    taken = set(existing_ids(tasks_file))
    if args.source == "swebench":
        if args.test_command is not None and (problem := test_command_problem(args.test_command)):
            raise InstanceError(problem)
        drafts, refused, post = _swebench(args, dependencies, taken)
    else:
        try:
            bwrap = preflight(SandboxKind.BWRAP, bwrap_bin=args.bwrap_bin)  # solve.sh runs in it
        except SandboxError as exc:
            raise SelfCheckError(str(exc)) from None
        if args.repo is None:  # prepared trees on disk, placed into each new repository
            dependencies = tuple(_raw_pair(v) for v in args.dependency or ())
        else:  # one repository for every task: bad input for all of them, before any work
            _check_repo(args.repo, dependencies or ())
        drafts, refused, post = _harbor(args, dependencies or (), taken, tasks_file, bwrap, made)
    accepted = _import(drafts, refused, tasks_file, options, post)
    return drafts, refused, accepted


def _check_repo(repo: Path, dependencies: tuple[tuple[str, str], ...]) -> None:
    """``--repo`` is a git working tree and each ``--dependency`` a directory in it; ``NewTaskError``."""
    top = worktree_top(repo)
    for source, _ in dependencies:
        if not (top / source).is_dir():
            raise NewTaskError(f"--dependency {source}: no such directory in --repo {repo}'s working tree")


def _raw_pair(value: str) -> tuple[str, str]:
    source, _, target = value.partition(":")
    return source, target.strip("/")


def _swebench(
    args: argparse.Namespace, dependencies: tuple[tuple[str, str], ...] | None, taken: set[str]
) -> tuple[list[TaskDraft], dict[str, str], PostCheck]:
    wanted = set(args.instance or ())
    options = ImportOptions(clones=args.clones, dependencies=dependencies, test_command=args.test_command)
    drafts, refused, instances, seen = [], {}, {}, set()
    for number, found in read_instances(args.instances):
        if isinstance(found, str):
            refused[f"line {number}"] = f"not an instance: {found}"
            continue
        seen.add(found.instance_id)
        if wanted and found.instance_id not in wanted:
            continue
        if found.instance_id in taken or found.instance_id in instances:
            refused[found.instance_id] = f"a task {found.instance_id!r} exists already in {args.tasks}"
            continue
        instances[found.instance_id] = found
    if missing := sorted(wanted - seen):
        # A typo in the flag, not an instance to refuse: nothing is drafted, cloned or checked.
        raise InstanceError(f"--instance {', '.join(missing)}: no such instance_id in {args.instances}")
    for found in instances.values():
        try:
            drafts.append(draft_instance(found, options))
        except InstanceError as err:
            refused[found.instance_id] = str(err)

    def post(task_id: str, check: TaskCheck) -> list[str]:
        instance: Instance = instances[task_id]
        return expectation_problems(instance, check)

    return drafts, refused, post


def _harbor(
    args: argparse.Namespace,
    dependencies: tuple[tuple[str, str], ...],
    taken: set[str],
    tasks_file: Path,
    bwrap: str,
    made: list[Path],
) -> tuple[list[TaskDraft], dict[str, str], PostCheck]:
    drafts, refused = [], {}
    for task_dir in args.task_dirs:
        name = task_dir.name
        if name in taken:
            refused[name] = f"a task {name!r} exists already in {args.tasks}"
            continue
        try:
            draft = draft_harbor(
                task_dir,
                tasks_dir=tasks_file.parent,
                repo=args.repo,
                bwrap_bin=bwrap,
                dependencies=dependencies,
            )
        except (HarborError, NewTaskError) as err:
            refused[name] = str(err)  # one task's problem is that task's refusal, never the import's
            continue
        drafts.append(draft)
        if args.repo is None:
            made.append(draft.repo)
    return drafts, refused, lambda _task_id, _check: []


def _import(
    drafts: list[TaskDraft], refused: dict[str, str], tasks_file: Path, options: CheckOptions, post: PostCheck
) -> list[TaskDraft]:
    """Self-check ``drafts`` together and write those that hold (all at once); the rest join
    ``refused`` with their reasons. The drafts written."""
    accepted: list[TaskDraft] = []
    locks = {}
    drafts = _within_bounds(drafts, refused, tasks_file)
    if drafts:
        with stage(drafts, tasks_file.parent, progress=lambda m: print(f"[import] {m}")) as staged:
            bindings, unbound = bind_one_by_one(staged)
            refused.update({k: f"cannot be bound: {v}" for k, v in unbound.items()})
            results, recorded = run_self_check(bindings, options)
            print(render_table(results))
            for check in results:
                # The instance's own reasons first: they name its tests.
                problems = post(check.task_id, check)
                if check.problems:
                    problems.append("does not discriminate: " + "; ".join(check.problems))
                if problems:
                    refused[check.task_id] = "; ".join(problems)
                    continue
                accepted += [d for d in drafts if d.task_id == check.task_id]
                locks[check.task_id] = recorded[check.task_id]
            if accepted:
                commit(accepted, tasks_file, locks)
    for draft in drafts:
        if draft.task_id not in refused and draft not in accepted:
            refused[draft.task_id] = "was not judged"
    return accepted


def _within_bounds(drafts: list[TaskDraft], refused: dict[str, str], tasks_file: Path) -> list[TaskDraft]:
    """The drafts whose files and entries fit what the task loader reads; the rest join ``refused``.

    Checked before staging: a file over its bound would otherwise fail the staged task file as a
    whole (exit 2, naming the staging directory) and take every other instance down with it."""
    try:
        room = MAX_TASK_FILE_BYTES - (tasks_file.stat().st_size if tasks_file.exists() else 0)
    except OSError:
        room = MAX_TASK_FILE_BYTES
    kept = []
    for draft in drafts:
        problem = None
        for relative, data in draft.files:
            limit = MAX_REFERENCE_PATCH_BYTES if relative.startswith("reference/") else MAX_ORACLE_FILE_BYTES
            if len(data) > limit:
                problem = f"{relative} would be {len(data)} bytes, over {limit}"
                break
        size = len(dump_tasks([draft.entry_for(tasks_file.parent)]).encode())
        if problem is None and size > room:
            problem = f"its task entry ({size} bytes) does not fit the task file's {MAX_TASK_FILE_BYTES}"
        if problem is not None:
            refused[draft.task_id] = problem
            continue
        room -= size
        kept.append(draft)
    return kept


def _remove(repos: list[Path]) -> None:
    """Remove repositories this import made (never a user's clone: only those it created)."""
    for repo in repos:
        discard_repository(repo)
