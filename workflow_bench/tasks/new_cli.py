"""The ``tasks new`` command: its flags, and create = draft, stage, self-check, commit or refuse.

Exit codes: 0 the task was written; 1 it does not discriminate (nothing written, the reasons
printed); 2 bad input (nothing written). Callers: ``python -m workflow_bench.tasks new``,
``tasks.recipes``, tests.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from workflow_bench.workspace.remove import remove_tree

from .check import render_table
from .draft import DraftError, TaskDraft, commit, dump_tasks, preflight, stage
from .frameworks import FRAMEWORKS
from .new import DEFAULT_CLASS, DEFAULT_TEMPLATE, TEMPLATE_FIELDS, Drafted, NewTask, NewTaskError, draft_task
from .selfcheck import CheckOptions, SelfCheckError, bind_one_by_one, run_self_check


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", required=True, type=Path, help="the repository (a git working tree)")
    parser.add_argument(
        "--base", required=True, help="the commit the task starts from (the release before the fix)"
    )
    fix = parser.add_mutually_exclusive_group(required=True)
    fix.add_argument("--fix", help="the commit that fixes it (tests included)")
    fix.add_argument("--fix-patch", type=Path, help="or the fix as a patch against --base (tests included)")
    parser.add_argument(
        "--tasks",
        required=True,
        type=Path,
        help="the task file to add the task to (created, with its directory, if missing)",
    )
    parser.add_argument("--id", dest="task_id", help="task id (default: <repo name>-<fix sha>)")
    parser.add_argument(
        "--class", dest="task_class", default=DEFAULT_CLASS, help=f"task class (default {DEFAULT_CLASS})"
    )
    parser.add_argument(
        "--framework", choices=sorted(FRAMEWORKS), help="the test framework (default: detected)"
    )
    parser.add_argument("--test-command", help="the command that runs test files, with {files} where they go")
    parser.add_argument(
        "--verify",
        help="the visible verify command (default: the repository's tests for the touched modules)",
    )
    parser.add_argument(
        "--no-typecheck", dest="typecheck", action="store_false", help="no tsc before a TypeScript verify"
    )
    parser.add_argument(
        "--dependency",
        action="append",
        metavar="SOURCE[:TARGET]",
        help="a dependency tree in the working tree to mount read-only (default: node_modules / "
        ".wfbench-deps if present)",
    )
    parser.add_argument(
        "--runtime",
        action="append",
        metavar="NAME=VERSION",
        help="an interpreter the task needs (node=22.12.0, python=3.12)",
    )
    parser.add_argument(
        "--oracle-test",
        action="append",
        default=[],
        metavar="PATH",
        help="a test file that exercises the fix though the fix does not change it (a fix whose test "
        "side is a fixture the file reads): run by the oracle, staged from the base",
    )
    parser.add_argument("--setup", help="a setup command run in the sandbox before the agent")
    prompt = parser.add_mutually_exclusive_group()
    prompt.add_argument("--prompt", help="the prompt, verbatim")
    prompt.add_argument(
        "--prompt-template",
        type=Path,
        help=f"a prompt template with {{{'}, {'.join(TEMPLATE_FIELDS)}}} (default: {DEFAULT_TEMPLATE.name})",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="leave matching paths out of the fix (e.g. CHANGELOG*)",
    )
    parser.add_argument(
        "--toolkit", default="demo", metavar="DIR|NAME", help="toolkit for the self-check (default: demo)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        choices=range(1, 11),
        metavar="1..10",
        help="reference clones the self-check judges (3)",
    )
    parser.add_argument("--verify-timeout", type=int, default=600, choices=range(1, 86_401), metavar="S")
    parser.add_argument("--bwrap-bin", default="bwrap", help=argparse.SUPPRESS)


def request_from(args: argparse.Namespace) -> NewTask:
    return NewTask(
        repo=args.repo,
        base=args.base,
        tasks_file=args.tasks,
        fix=args.fix,
        fix_patch=args.fix_patch,
        task_id=args.task_id,
        task_class=args.task_class,
        framework=args.framework,
        test_command=args.test_command,
        verify=args.verify,
        typecheck=args.typecheck,
        dependencies=dependency_pairs(args.dependency) if args.dependency else None,
        runtimes=_runtimes(args.runtime or ()),
        setup=args.setup,
        prompt=args.prompt,
        prompt_template=args.prompt_template,
        exclude=tuple(args.exclude),
        oracle_tests=tuple(args.oracle_test),
    )


def dependency_pairs(values: Sequence[str]) -> tuple[tuple[str, str], ...]:
    pairs = []
    for value in values:
        source, _, target = value.partition(":")
        pairs.append((source.strip("/"), (target or source).strip("/")))
    return tuple(pairs)


def _runtimes(values: Sequence[str]) -> dict[str, str]:
    found = {}
    for value in values:
        name, sep, version = value.partition("=")
        if not sep or not name or not version:
            raise NewTaskError(f"--runtime {value!r}: want NAME=VERSION (node=22.12.0, python=3.12)")
        found[name] = version
    return found


def create(
    request: NewTask, options: CheckOptions, *, progress: Callable[[str], None] = print
) -> tuple[int, TaskDraft | None]:
    """Draft, self-check and (if it discriminates) write the task: (exit code, the draft written)."""
    tasks_file = Path(request.tasks_file).expanduser().absolute()
    if tasks_file.is_dir():
        raise NewTaskError(f"--tasks {request.tasks_file}: a directory, not a task file")
    drafted = draft_task(request)
    with task_directory(tasks_file, request.tasks_file) as written:
        code, draft = _check_and_write(drafted, tasks_file, options, progress=progress)
        written.append(code == 0)
    return code, draft


@contextlib.contextmanager
def task_directory(tasks_file: Path, spelled: Path | str) -> Iterator[list[bool]]:
    """The task file's directory, made (with its missing parents) if it does not exist, and removed
    again unless a task was written (append True to the list yielded): a refused task leaves
    nothing behind. ``NewTaskError`` when it cannot be made."""
    missing = [d for d in (tasks_file.parent, *tasks_file.parent.parents) if not d.exists()]
    written: list[bool] = []
    try:
        tasks_file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NewTaskError(
            f"--tasks {spelled}: cannot make its directory {tasks_file.parent}: {exc}"
        ) from None
    try:
        yield written
    finally:
        if not any(written):
            for directory in missing:  # innermost first; only what this run made, and only if empty
                with contextlib.suppress(OSError):
                    directory.rmdir()


def _check_and_write(
    drafted: Drafted, tasks_file: Path, options: CheckOptions, *, progress: Callable[[str], None]
) -> tuple[int, TaskDraft | None]:
    try:
        preflight([drafted.draft], tasks_file)
    except DraftError as exc:
        raise NewTaskError(str(exc)) from None
    for line in drafted.decisions:
        progress(f"[new] {line}")
    with stage([drafted.draft], tasks_file.parent, progress=lambda m: progress(f"[new] {m}")) as staged:
        bindings, refused = bind_one_by_one(staged)
        if refused:
            raise NewTaskError("; ".join(f"task {k}: {v}" for k, v in refused.items()))
        results, locks = run_self_check(bindings, options, progress=progress)
        progress(render_table(results))
        if not results or not results[0].discriminates:
            reasons = "; ".join(results[0].problems) if results else "nothing was judged"
            kept = keep_refused(drafted.draft, tasks_file)
            progress(
                f"[new] refused: the task does not discriminate, nothing written to {tasks_file.name}: "
                f"{reasons}"
            )
            progress(
                f"[new] the refused draft is kept in {kept.parent} (its verify and oracle commands in "
                f"{kept.name}); edit it and re-run it with "
                f"`python -m workflow_bench.tasks check --tasks {kept}`"
            )
            return 1, None
        try:
            commit([drafted.draft], tasks_file, locks)
        except DraftError as exc:
            raise NewTaskError(str(exc)) from None
    progress(
        f"[new] wrote task {drafted.draft.task_id!r} to {tasks_file} (its oracle and reference patch "
        "beside it, "
        f"its expected tests in {tasks_file.stem}.lock.json); edit its prompt, then run it"
    )
    return 0, drafted.draft


def keep_refused(draft: TaskDraft, tasks_file: Path) -> Path:
    """The refused draft as a task file of its own, beside the task file (in
    ``<stem>.refused/<id>/``, replacing an earlier refusal of that id): its path."""
    root = tasks_file.parent / f"{tasks_file.stem}.refused" / draft.task_id
    if root.exists():
        remove_tree(root)
    for relative, data in draft.files:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    path = root / "tasks.yaml"
    path.write_text(dump_tasks([draft.entry_for(root)]), encoding="utf-8")
    return path


def main(args: argparse.Namespace) -> int:
    try:
        request = request_from(args)
        options = CheckOptions(
            toolkit=args.toolkit,
            bwrap_bin=args.bwrap_bin,
            repeats=args.repeats,
            timeout_s=args.verify_timeout,
        )
        code, _ = create(request, options)
    except (NewTaskError, SelfCheckError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return code
