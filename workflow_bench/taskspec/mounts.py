"""What a bound task adds to every sandbox of its cells: dependency trees, runtimes, their links.

``task_mounts`` is the one place a binding becomes mounts, for cells and the self-check alike:
each ``sandbox_dependencies`` tree read-only under ``/workspace`` (entries under a per-process
scratch top, ``sandbox.Mount.scratch_top``), each provisioned runtime read-only at its sandbox
path, and the runtimes' links at ``runtimes.BIN_DIR`` (first on ``PATH`` after the CLI).

Callers: ``cells.run``, ``tasks.check``.
"""

from __future__ import annotations

from workflow_bench.runtimes import BIN_DIR
from workflow_bench.sandbox import SANDBOX_WORKSPACE, Mount

from .spec import TaskBinding


def task_mounts(binding: TaskBinding) -> tuple[Mount, ...]:
    dependencies = tuple(
        Mount(source=source, target=f"{SANDBOX_WORKSPACE}/{target}", scratch_top=True)
        for source, target in binding.dependency_mounts
    )
    runtimes = tuple(Mount(source=r.host_path, target=r.sandbox_path) for r in binding.runtimes if r.mounted)
    links = (Mount(source=binding.runtime_bin, target=BIN_DIR),) if binding.runtime_bin is not None else ()
    return (*dependencies, *runtimes, *links)
