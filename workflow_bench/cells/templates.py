"""Sanitized templates per (repository, SHA, assets), built once and ahead of need.

Tasks that share a repository, a base commit and the same task assets share
one template (the toolkit's skills are the same for the whole sweep). Every
build runs on one background thread: ``prefetch`` queues the next task's
template while the current task's cells run, and ``context`` waits for a
task's template (queuing it first if nobody asked yet). A build error is
remembered and raised to every cell of every task that shares the template.
``close`` cancels queued builds and joins the running one; call it before the
templates' directory is removed.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.tasks.spec import TaskBinding
from workflow_bench.toolkit.spec import Toolkit

from .context import TaskContext, prepare_task_context


def template_key(binding: TaskBinding) -> tuple[object, ...]:
    """What makes two tasks' templates identical: repository, commit, copied assets, mount points."""
    return (
        binding.repo_identity,
        binding.resolved_sha,
        tuple((str(source), target) for source, target in binding.copy_paths),
        tuple(target for _, target in binding.dependency_mounts),
    )


@dataclass(frozen=True, slots=True)
class _Built:
    template: Path
    sanitized_sha: str
    seeded_skill_digest: str | None


class TemplateCache:
    def __init__(self, *, toolkit: Toolkit, root: Path, progress=print) -> None:
        self._toolkit = toolkit
        self._root = root
        self._progress = progress
        self._lock = threading.Lock()
        self._builds: dict[tuple[object, ...], Future[_Built]] = {}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="template")

    def _future(self, binding: TaskBinding) -> Future[_Built]:
        key = template_key(binding)
        with self._lock:
            if key not in self._builds:
                dest = self._root / f"t{len(self._builds)}-{binding.spec.task_id}"
                self._builds[key] = self._pool.submit(self._build, binding, dest)
            return self._builds[key]

    def _build(self, binding: TaskBinding, dest: Path) -> _Built:
        context = prepare_task_context(binding, toolkit=self._toolkit, dest=dest)
        snapshot, base = context.sanitized_sha[:12], binding.resolved_sha[:12]
        self._progress(f"[{binding.spec.task_id}] sanitized snapshot {snapshot} of {base}")
        return _Built(context.template, context.sanitized_sha, context.seeded_skill_digest)

    def prefetch(self, binding: TaskBinding) -> None:
        """Queue ``binding``'s template on the background thread (no-op if already queued or built)."""
        self._future(binding)

    def context(self, binding: TaskBinding) -> TaskContext:
        """``binding``'s context, waiting for its template; raises the build's error if it failed."""
        built = self._future(binding).result()
        return TaskContext(
            binding=binding,
            template=built.template,
            sanitized_sha=built.sanitized_sha,
            seeded_skill_digest=built.seeded_skill_digest,
        )

    def built_count(self) -> int:
        with self._lock:
            return sum(1 for f in self._builds.values() if f.done() and f.exception() is None)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
