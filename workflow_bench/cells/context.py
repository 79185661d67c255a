"""What a cell is given: the sweep's settings, the prepared task, and what it returns.

Owns the read-only inputs every cell shares (``SweepSettings``), the per-task
sanitized template built once before any cell (``prepare_task_context``), and
the value a cell returns (``CellResult``: the row and its artifacts as data,
so only the driver ever writes the output directory).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from workflow_bench.providers.access import ModelAccess
from workflow_bench.rows.model import Row
from workflow_bench.sandbox import CellLimits, SandboxKind
from workflow_bench.taskspec.spec import TaskBinding
from workflow_bench.toolkit.comparator import ComparatorPlugin
from workflow_bench.toolkit.overlay import Overlay
from workflow_bench.toolkit.spec import Toolkit
from workflow_bench.workspace.clone import add_task_assets, build_template, seed_skills
from workflow_bench.workspace.snapshot import skill_fingerprint, workspace_snapshot

from .index import IndexResult


@dataclass(frozen=True, slots=True)
class CellPolicy:
    """How every cell of a sweep runs its sessions and judges: built once from the runner's flags."""

    model: str
    effort: str | None
    session_timeout_s: float
    verify_timeout_s: float
    max_retries: int
    limits: CellLimits = field(default_factory=CellLimits)


@dataclass(frozen=True, slots=True)
class Harness:
    """What the cells run on: the pinned Claude Code CLI, bubblewrap and the sandbox backend."""

    claude_bin: Path
    claude_version: str
    bwrap_bin: str
    sandbox_kind: SandboxKind = SandboxKind.BWRAP


@dataclass(frozen=True, slots=True)
class Evaluated:
    """What the sweep evaluates: the toolkit, a candidate overlay, the external comparator plugin."""

    toolkit: Toolkit
    overlay: Overlay | None = None
    comparator: ComparatorPlugin | None = None


@dataclass(frozen=True, slots=True)
class SweepSettings:
    """Sweep-wide, read-only inputs every cell needs.

    The three parts are built once (``CellPolicy`` from the flags, ``Harness`` and ``Evaluated`` by
    the runner's preparation) and passed through unchanged: runner → ``SweepConfig`` → here.
    """

    cell: CellPolicy
    harness: Harness
    evaluated: Evaluated
    access: ModelAccess
    work_root: Path
    runtime_dir: Path
    cancel: threading.Event = field(default_factory=threading.Event)
    progress: Callable[[str], None] = print


@dataclass(frozen=True, slots=True)
class TaskContext:
    """A bound task plus its sanitized clone template (built once per task)."""

    binding: TaskBinding
    template: Path
    sanitized_sha: str
    seeded_skill_digest: str | None
    index: IndexResult | None = None  # the toolkit's code-graph index on the template (cells/index.py)


def prepare_task_context(binding: TaskBinding, *, toolkit: Toolkit, dest: Path) -> TaskContext:
    """Build the task's sanitized template once: snapshot, seeded skills, task assets."""
    sanitized = build_template(source_repo=binding.repo_path, sha=binding.resolved_sha, dest=dest)
    seed_skills(dest, skills_root=toolkit.skills_path, names=toolkit.skill_names)
    add_task_assets(dest, copies=binding.copy_paths, mount_points=[t for _, t in binding.dependency_mounts])
    seeded = skill_fingerprint(workspace_snapshot(dest))
    return TaskContext(binding=binding, template=dest, sanitized_sha=sanitized, seeded_skill_digest=seeded)


@dataclass(frozen=True, slots=True)
class CellResult:
    row: Row
    artifacts: Mapping[str, bytes]
