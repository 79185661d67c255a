"""Sanitized templates per (repository, SHA, assets), built once and ahead of need.

Tasks that share a repository, a base commit and the same task assets share
one template (the toolkit's skills are the same for the whole sweep). The
toolkit's code-graph index, when it has one, is built once per (repository,
SHA) on the first such template and copied into the others. Every build runs
on one background thread: ``prefetch`` queues the next task's
template while the current task's cells run, and ``context`` waits for a
task's template (queuing it first if nobody asked yet). A build error is
remembered and raised to every cell of every task that shares the template.
``close`` cancels queued builds and joins the running one; call it before the
templates' directory is removed.
"""

from __future__ import annotations

import shutil
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from workflow_bench.taskspec.spec import TaskBinding
from workflow_bench.toolkit.spec import Toolkit

from .context import TaskContext, prepare_task_context, seal_template
from .index import build_index


def template_key(binding: TaskBinding) -> tuple[object, ...]:
    """What makes two tasks' templates identical: repository, commit, copied assets, mount points."""
    return (
        binding.repo_identity,
        binding.resolved_sha,
        tuple((str(source), target) for source, target in binding.copy_paths),
        tuple(target for _, target in binding.dependency_mounts),
    )


class TemplateCache:
    def __init__(self, *, toolkit: Toolkit, root: Path, bwrap_bin: str, progress=print) -> None:
        self._toolkit = toolkit
        self._bwrap_bin = bwrap_bin
        self._root = root
        self._progress = progress
        self._lock = threading.Lock()
        self._builds: dict[tuple[object, ...], Future[TaskContext]] = {}
        # (repository, SHA) → the context whose template got the index (or its memoized failure);
        # only the build thread touches it, so builds never race on it.
        self._indexed: dict[tuple[object, str], TaskContext] = {}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="template")

    def _future(self, binding: TaskBinding) -> Future[TaskContext]:
        key = template_key(binding)
        with self._lock:
            if key not in self._builds:
                dest = self._root / f"t{len(self._builds)}-{binding.spec.task_id}"
                self._builds[key] = self._pool.submit(self._build, binding, dest)
            return self._builds[key]

    def _build(self, binding: TaskBinding, dest: Path) -> TaskContext:
        started = time.monotonic()
        context = prepare_task_context(binding, toolkit=self._toolkit, dest=dest, seal=False)
        if self._toolkit.index is not None:
            context = self._with_index(context)
        context = seal_template(context)  # last: nothing writes the template after this
        build_s = round(time.monotonic() - started, 3)
        state = context.sealed().state
        snapshot, base = context.sanitized_sha[:12], binding.resolved_sha[:12]
        self._progress(
            f"[{binding.spec.task_id}] sanitized snapshot {snapshot} of {base}: {len(state.entries):,} "
            f"entries, {state.total_bytes / 1e6:,.1f} MB, built in {build_s:.1f} s"
        )
        return replace(context, build_s=build_s)

    def _with_index(self, context: TaskContext) -> TaskContext:
        """The toolkit's index on the template: built once per (repository, SHA), copied for the rest."""
        binding = context.binding
        key = (binding.repo_identity, binding.resolved_sha)
        first = self._indexed.get(key)
        if first is not None and first.index is not None:
            if first.index.digest is not None:
                output = first.index.output
                shutil.copytree(first.template / output, context.template / output, symlinks=True)
            self._progress(f"[{binding.spec.task_id}] index reused from {first.binding.spec.task_id}")
            return replace(context, index=first.index)
        index = build_index(context.template, toolkit=self._toolkit, bwrap_bin=self._bwrap_bin)
        context = replace(context, index=index)
        self._indexed[key] = context  # a failure is memoized too: same (repository, SHA), same outcome
        if index is not None and index.digest is not None:
            self._progress(f"[{binding.spec.task_id}] index built: {index.output} {index.digest[:19]}")
        elif index is not None:
            self._progress(f"[{binding.spec.task_id}] index build FAILED: its cells will be infra-error")
        return context

    def prefetch(self, binding: TaskBinding) -> None:
        """Queue ``binding``'s template on the background thread (no-op if already queued or built)."""
        self._future(binding)

    def context(self, binding: TaskBinding) -> TaskContext:
        """``binding``'s context, waiting for its template; raises the build's error if it failed."""
        return replace(self._future(binding).result(), binding=binding)

    def built_count(self) -> int:
        with self._lock:
            return sum(1 for f in self._builds.values() if f.done() and f.exception() is None)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
