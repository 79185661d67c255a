"""What a cell is given: the sweep's settings, the prepared task, and what it returns.

Owns the read-only inputs every cell shares (``SweepSettings``), the per-task
sanitized template built once before any cell (``prepare_task_context``), and
the value a cell returns (``CellResult``: the row and its artifacts as data,
so only the driver ever writes the output directory).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from workflow_bench.providers.access import ModelAccess
from workflow_bench.rows.model import Row
from workflow_bench.sandbox import CellLimits, Confinement, SandboxKind
from workflow_bench.taskspec.spec import TaskBinding
from workflow_bench.toolkit.comparator import ComparatorPlugin
from workflow_bench.toolkit.overlay import Overlay
from workflow_bench.toolkit.spec import Toolkit
from workflow_bench.workspace.baseline import TemplateBaseline, record_baseline
from workflow_bench.workspace.clone import add_task_assets, build_template, seed_skills

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
    confinement: Confinement = field(default_factory=Confinement)
    """Every defence on; only the canary's negative controls turn one off (``sandbox.Confinement``)."""
    clean_room: bool = True
    """The hidden oracle also judges a fresh clone with exactly the saved patch (``cells.cleanroom``),
    and the two verdicts must agree; only the canary's negative controls turn it off."""


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
    index: IndexResult | None = None  # the toolkit's code-graph index on the template (cells/index.py)
    baseline: TemplateBaseline | None = None
    """What every cell starts from, recorded once the template is complete (``seal_template``)."""
    build_s: float | None = None
    """Wall time of building the template (tree, skills, assets, index, baseline), s."""

    @property
    def seeded_skill_digest(self) -> str | None:
        if self.baseline is None:
            raise RuntimeError(f"the template of {self.binding.spec.task_id} was never sealed")
        return self.baseline.skill_digest

    def sealed(self) -> TemplateBaseline:
        """The baseline; a template that was never sealed is a harness bug (infra, before any agent)."""
        if self.baseline is None:
            raise RuntimeError(f"the template of {self.binding.spec.task_id} was never sealed")
        return self.baseline


def prepare_task_context(
    binding: TaskBinding, *, toolkit: Toolkit, dest: Path, seal: bool = True
) -> TaskContext:
    """Build the task's sanitized template once: snapshot, seeded skills, task assets; then, unless
    ``seal`` is false (something still writes the template: the index), its baseline."""
    started = time.monotonic()
    sanitized = build_template(
        source_repo=binding.repo_path,
        sha=binding.resolved_sha,
        dest=dest,
        total_bytes=binding.tree_bytes or 0,
        entries=binding.tree_entries or 0,
    )
    seed_skills(dest, skills_root=toolkit.skills_path, names=toolkit.skill_names)
    add_task_assets(dest, copies=binding.copy_paths, mount_points=[t for _, t in binding.dependency_mounts])
    context = TaskContext(binding=binding, template=dest, sanitized_sha=sanitized)
    context = seal_template(context) if seal else context
    return replace(context, build_s=round(time.monotonic() - started, 3))


def seal_template(context: TaskContext) -> TaskContext:
    """Record the finished template's baseline (every file read once; its view beside it)."""
    baseline = record_baseline(
        context.template,
        excluded=[t for _, t in context.binding.dependency_mounts],
        view_dir=context.template.with_name(context.template.name + ".view"),
    )
    return replace(context, baseline=baseline)


@dataclass(frozen=True, slots=True)
class CellResult:
    row: Row
    artifacts: Mapping[str, bytes]
