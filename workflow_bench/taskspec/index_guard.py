"""Refuse a task whose commit already holds the toolkit's index output, before anything is cloned.

Public surface: ``committed_index_problems`` and ``refuse_committed_index``. A toolkit's index
step writes ``output`` (e.g. ``.gitnexus``) inside the clone; a task repository that already
contains that path at its resolved commit (or a non-directory on the way to it, e.g. a symlink
that would redirect the build), or a ``sandbox_copy`` / ``sandbox_dependencies`` target that
overlaps it, would hand the agent's MCP server a graph nobody built here: it could leak answers
or be tampered with. That is bad input, so it is found at bind time with ``git ls-tree`` on the
bound repository (read-only) and reported as a ``TaskFileError`` naming file, task and key:
exit 2, no clone, no session. ``cells/index.py`` keeps its own check as a second line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

from workflow_bench.toolkit.spec import Toolkit

from .repos import tree_entry_type
from .schema import TaskFileError, TaskSpecError
from .spec import TaskBinding, TaskSpec, bind_tasks


def _overlaps(a: str, b: str) -> bool:
    pa, pb = PurePosixPath(a).parts, PurePosixPath(b).parts
    return pa[: len(pb)] == pb or pb[: len(pa)] == pa


def _binding_problem(binding: TaskBinding, output: str, toolkit_name: str) -> TaskSpecError | None:
    spec = binding.spec

    def error(key: str, message: str) -> TaskSpecError:
        return TaskSpecError(spec.source_file, spec.task_id, key, message)

    parts = PurePosixPath(output).parts
    sha = binding.resolved_sha
    for depth in range(1, len(parts) + 1):
        prefix = "/".join(parts[:depth])
        kind = tree_entry_type(binding.repo_path, sha, prefix)
        if kind is None:
            return None
        if depth == len(parts) or kind != "tree":
            what = f"{prefix}/" if kind == "tree" else f"{prefix} (a {kind}, not a directory)"
            return error(
                "ref",
                f"commit {sha[:12]} already contains {what}, where toolkit {toolkit_name!r} writes its "
                f"index ({output}); a committed index could leak answers or be tampered with: "
                "remove it from the task's commit",
            )
    return None


def committed_index_problems(bindings: Sequence[TaskBinding], toolkit: Toolkit) -> list[TaskSpecError]:
    """One error per task whose commit or sandbox sources collide with the toolkit's index output."""
    if toolkit.index is None:
        return []
    output = toolkit.index.output
    problems: list[TaskSpecError] = []
    checked: dict[tuple[str, str], TaskSpecError | None] = {}
    for binding in bindings:
        spec = binding.spec
        for key, targets in (
            ("sandbox_copy", [target for _, target in binding.copy_paths]),
            ("sandbox_dependencies", [target for _, target in binding.dependency_mounts]),
        ):
            for target in targets:
                if _overlaps(target, output):
                    message = f"target {target!r} overlaps toolkit {toolkit.name!r}'s index output {output!r}"
                    problems.append(TaskSpecError(spec.source_file, spec.task_id, key, message))
        repo_key = (str(binding.repo_path), binding.resolved_sha)
        if repo_key not in checked:
            checked[repo_key] = _binding_problem(binding, output, toolkit.name)
        found = checked[repo_key]
        if found is not None:
            problems.append(TaskSpecError(spec.source_file, spec.task_id, found.key, found.message))
    return problems


def refuse_committed_index(bindings: Sequence[TaskBinding], toolkit: Toolkit) -> None:
    """Raise ``TaskFileError`` listing every task ``committed_index_problems`` finds."""
    problems = committed_index_problems(bindings, toolkit)
    if problems:
        raise TaskFileError(problems)


def bind_for_toolkit(specs: Sequence[TaskSpec], toolkit: Toolkit) -> tuple[TaskBinding, ...]:
    """``bind_tasks`` then ``refuse_committed_index``: the bindings a sweep with ``toolkit`` may use."""
    bindings = bind_tasks(specs)
    refuse_committed_index(bindings, toolkit)
    return bindings
