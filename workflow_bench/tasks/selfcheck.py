"""Run the self-check over a task file from code: load, bind, preflight the sandbox, judge, clean up.

``tasks check`` is this plus printing; ``tasks new`` and ``tasks import`` run it on the drafts
they staged and commit only what discriminates. Refusals before anything runs are
``SelfCheckError`` (bad task file, no sandbox, a TMPDIR too long for the cells' sockets).

Callers: ``tasks.__main__``, ``tasks.new``, ``tasks.importers``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.sandbox import SandboxError, SandboxKind, preflight
from workflow_bench.taskspec.expected_tests import ExpectedTests, load_lock, lock_path
from workflow_bench.taskspec.index_guard import refuse_committed_index
from workflow_bench.taskspec.spec import TaskBinding, TaskFileError, bind_tasks, load_task_file
from workflow_bench.toolkit.manifest import load_toolkit
from workflow_bench.toolkit.spec import ToolkitError
from workflow_bench.workspace.paths import CellPathError, check_paths_fit, make_work_root
from workflow_bench.workspace.remove import remove_tree

from .check import CheckSettings, TaskCheck, check_tasks


class SelfCheckError(ValueError):
    """The self-check could not start (nothing was judged); the message says why."""


@dataclass(frozen=True, slots=True)
class CheckOptions:
    toolkit: str = "demo"
    bwrap_bin: str = "bwrap"
    repeats: int = 3
    timeout_s: float = 600


def bind_one_by_one(path: Path) -> tuple[list[TaskBinding], dict[str, str]]:
    """Every task of ``path`` that binds, and why each other one does not (by task id)."""
    try:
        specs = load_task_file(path)
    except TaskFileError as exc:
        raise SelfCheckError(f"invalid task file:\n{exc}") from None
    bindings: list[TaskBinding] = []
    refused: dict[str, str] = {}
    for spec in specs:
        try:
            bindings += bind_tasks([spec], stale_locks="ignore")
        except TaskFileError as exc:
            refused[spec.task_id] = "; ".join(e.message for e in exc.errors)
    return bindings, refused


def run_self_check(
    bindings: Sequence[TaskBinding], options: CheckOptions, *, progress: Callable[[str], None] = print
) -> tuple[list[TaskCheck], dict[str, ExpectedTests]]:
    """Judge ``bindings`` in the sandbox (the lock beside their task file is written, as by
    ``tasks check``); return the results and the lock entries now recorded for them."""
    if not bindings:
        return [], {}
    try:
        toolkit = load_toolkit(options.toolkit)
        refuse_committed_index(bindings, toolkit)
        check_paths_fit()
        bwrap = preflight(SandboxKind.BWRAP, bwrap_bin=options.bwrap_bin)
    except (TaskFileError, ToolkitError, CellPathError, SandboxError) as exc:
        raise SelfCheckError(str(exc)) from None
    work_root = make_work_root()
    try:
        settings = CheckSettings(
            toolkit=toolkit,
            bwrap_bin=bwrap,
            work_root=work_root,
            timeout_s=options.timeout_s,
            repeats=options.repeats,
        )
        results = check_tasks(bindings, settings, progress=progress)
    finally:
        remove_tree(work_root)
    locks: dict[str, ExpectedTests] = {}
    for path in {lock_path(b.spec.source_file) for b in bindings}:
        locks.update(load_lock(path) or {})
    ids = {r.task_id for r in results if r.discriminates}
    return results, {k: v for k, v in locks.items() if k in ids}
