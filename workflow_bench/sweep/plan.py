"""The plan of one sweep: every cell in plan order, the ones a resume keeps, the rows reuse stands in
with, and the start priorities; printable before anything is paid (``runner --dry-run``).

``SweepPlan.build`` is the only place these are decided. Choosing reused rows needs each task's
seeded skill digest, so it waits for the task's template (built by the shared ``TemplateCache``);
nothing else here runs a process. The driver (``sweep.driver``) runs what the plan leaves to run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from workflow_bench.arms import ArmSpec
from workflow_bench.cells.context import TaskContext
from workflow_bench.cells.templates import TemplateCache
from workflow_bench.providers.access import CellKey
from workflow_bench.rows.model import Row
from workflow_bench.schedule.order import predicted_walls
from workflow_bench.schedule.reuse import Expected, expected_cell, runtime_digest, select_reuse
from workflow_bench.taskspec.spec import TaskBinding
from workflow_bench.workspace.paths import make_work_root
from workflow_bench.workspace.remove import remove_tree

from .config import SweepConfig, plan_keys


@dataclass(frozen=True, slots=True)
class PlannedCell:
    binding: TaskBinding
    arm: ArmSpec
    key: CellKey
    templates: TemplateCache

    @property
    def task(self) -> TaskContext:
        """The task's context; waits for its (shared) template to be built."""
        return self.templates.context(self.binding)


def plan_cells(
    tasks: Sequence[TaskBinding], arms: Sequence[ArmSpec], runs: int, templates: TemplateCache
) -> tuple[PlannedCell, ...]:
    """Task-major, then run, then arm (reference order); the same keys as ``plan_keys``."""
    return tuple(
        PlannedCell(
            binding=t, arm=a, key=CellKey(task_id=t.spec.task_id, run=r, arm=a.name), templates=templates
        )
        for t in tasks
        for r in range(runs)
        for a in arms
    )


def sweep_runtime(config: SweepConfig) -> str:
    """The ``runtime_digest`` every paid row of this sweep records (and reuse requires equal)."""
    return runtime_digest(
        claude_code_version=config.harness.claude_version,
        sandbox_backend=config.harness.sandbox_kind.value,
        provider=config.provider,
        script_digest=config.script_digest,
    )


def _expected(config: SweepConfig, cell: PlannedCell, runtime: str) -> Expected:
    """What a --reuse-results row must match to stand in for ``cell``."""
    sweep_values = {
        "model": config.cell.model,
        "effort": config.cell.effort,
        "sandbox_backend": config.harness.sandbox_kind.value,
        "provider": config.provider,
        "runtime_digest": runtime,
    }
    return expected_cell(
        cell.key, cell.task, cell.arm, comparator=config.evaluated.comparator, sweep_values=sweep_values
    )


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """What one sweep will do, decided before any cell runs."""

    config: SweepConfig
    cells: tuple[PlannedCell, ...]
    """Every planned cell, task-major, then run, then arm."""
    done: frozenset[CellKey]
    """Cells ``--resume`` keeps from the output directory: not run again."""
    reuse: Mapping[CellKey, Row]
    """``--reuse-results`` rows chosen to stand in for paid cells (their artifacts are re-verified
    when copied; a row that fails that is paid instead)."""
    runtime: str
    """The ``runtime_digest`` every paid row records."""

    @classmethod
    def build(
        cls, config: SweepConfig, templates: TemplateCache, *, log: Callable[[str], None] = print
    ) -> SweepPlan:
        cells = plan_cells(config.tasks, config.arms, config.runs, templates)
        done = frozenset(r.key for r in config.done_rows)
        runtime = sweep_runtime(config)
        reuse: Mapping[CellKey, Row] = {}
        if config.reuse_from is not None:
            todo = [c for c in cells if c.key not in done]
            reuse = select_reuse([_expected(config, c, runtime) for c in todo], config.prior_rows, log=log)
        return cls(config=config, cells=cells, done=done, reuse=reuse, runtime=runtime)

    @property
    def total(self) -> int:
        return len(plan_keys(self.config))

    def to_run(self, reused: frozenset[CellKey] | set[CellKey]) -> tuple[PlannedCell, ...]:
        """The cells left to pay once ``reused`` (the rows actually copied) stand in for theirs."""
        return tuple(c for c in self.cells if c.key not in self.done and c.key not in reused)

    def priorities(self, cells: Sequence[PlannedCell]) -> list[float] | None:
        """``--order longest-first``: each cell's predicted wall from prior rows; ``None`` for plan order."""
        if self.config.order != "longest-first":
            return None
        keys = [(c.key.task_id, c.arm.name, c.binding.spec.expensive) for c in cells]
        return predicted_walls(keys, self.config.prior_rows + self.config.done_rows)

    def describe(self) -> str:
        """The plan as text (``--dry-run``): counts, then each cell in start order with why it is there."""
        config = self.config
        running = self.to_run(set(self.reuse))
        priority = self.priorities(running)
        order = list(range(len(running)))
        if priority is not None:
            order.sort(key=lambda i: -priority[i])  # longest first; ties keep plan order
        lines = [
            f"{self.total} cells: {len(config.tasks)} tasks × {config.runs} runs × {len(config.arms)} arms",
            f"kept by --resume: {len(self.done)}; reused from --reuse-results: {len(self.reuse)}; "
            f"to run: {len(running)}",
        ]
        lines += [f"  reuse {key.label}" for key in sorted(self.reuse, key=lambda k: k.label)]
        for rank, index in enumerate(order, 1):
            cell = running[index]
            predicted = "" if priority is None else f" (predicted {priority[index]:.0f} s)"
            lines.append(f"  {rank:>4}. run {cell.key.label}{predicted}")
        return "\n".join(lines) + "\n"


def describe_plan(config: SweepConfig, *, log: Callable[[str], None] = print) -> str:
    """``runner --dry-run``: the plan as text. Builds only the templates reuse selection needs (in a
    private work root, removed after), runs no session and writes nothing to ``--out``."""
    work_root = make_work_root()
    templates = TemplateCache(
        toolkit=config.evaluated.toolkit, root=work_root / "templates", bwrap_bin=config.harness.bwrap_bin,
        progress=log,
    )  # fmt: skip
    try:
        return SweepPlan.build(config, templates, log=log).describe()
    finally:
        templates.close()
        remove_tree(work_root)
